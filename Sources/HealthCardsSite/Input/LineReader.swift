#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify

/// Reads a file one line at a time through a 64 KiB buffer, so a file of any size costs one line of
/// memory, and a line of at most `maxLineBytes` (longer lines are skipped to their end, not held).
///
/// Lines end at LF; a CR before it is dropped. The file descriptor is owned here and closed once, when
/// the reader goes away.
package final class LineReader {
    /// One line: its 1-based number, and its bytes, or nil when it was longer than `maxLineBytes`.
    package struct Line {
        package var number: Int
        package var bytes: [UInt8]?
    }

    package let path: String
    package let maxLineBytes: Int
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var count = 0
    private var index = 0
    private var atEnd = false
    private var lineNumber = 0

    /// - Throws: `HealthCardError(.io)` when the file cannot be opened or is not a regular file (a FIFO would never end).
    package init(path: String, maxLineBytes: Int) throws {
        fd = try FileIO.openRegularFile(path)
        self.path = path
        self.maxLineBytes = maxLineBytes
    }

    deinit { close(fd) }

    /// The next line, or nil at the end of the file.
    /// - Throws: `HealthCardError(.io)` when reading fails.
    package func next() throws -> Line? {
        var line: [UInt8] = []
        var tooLong = false
        var sawAny = false
        while true {
            if index == count {
                if atEnd { break }
                try fill()
                if count == 0 { break }
            }
            sawAny = true
            let start = index
            while index < count && buffer[index] != 0x0A { index += 1 }
            let piece = buffer[start..<index]
            if !tooLong {
                if line.count + piece.count > maxLineBytes {
                    tooLong = true
                    line = []
                } else {
                    line.append(contentsOf: piece)
                }
            }
            if index < count {  // the newline
                index += 1
                break
            }
        }
        guard sawAny else { return nil }
        lineNumber += 1
        if !tooLong, line.last == 0x0D { line.removeLast() }
        return Line(number: lineNumber, bytes: tooLong ? nil : line)
    }

    private func fill() throws {
        index = 0
        count = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { OS.read(fd, $0.baseAddress, $0.count) }
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
            count = n
            if n == 0 { atEnd = true }
            return
        }
    }
}
