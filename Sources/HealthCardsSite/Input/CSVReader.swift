#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify

/// A streaming RFC 4180 CSV reader over a file: quoted fields with delimiters, `""` quotes and line
/// breaks; CRLF, LF or CR line ends; a UTF-8 byte order mark at the start; a last line with or
/// without a line break. The delimiter is `,` unless told (`;` and tab exports). Blank lines are
/// skipped, and so are records whose fields are all empty (the `,,,,,,` rows Excel writes below the
/// data). Fields are returned as read (not trimmed). A UTF-16 or UTF-32 file is refused as such.
///
/// The file is read in 64 KiB blocks and never held whole; each record carries the byte offset where
/// it starts, so a caller can come back to it later with `init(path:offset:line:)`.
package final class CSVReader {
    /// One CSV record.
    public struct Record: Sendable {
        public var fields: [String]
        /// 1-based line number where the record starts.
        public var line: Int
        /// 0-based byte offset of the record's first byte in the file.
        public var offset: Int
    }

    private let fd: Int32
    /// The most bytes one record (all its fields) may take (`InputLimits.csvRecordBytes`).
    private let maxRecordBytes: Int
    private let path: String
    /// The byte between fields.
    private let delimiter: UInt8
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var bufferCount = 0
    private var bufferIndex = 0
    private var fileOffset = 0  // offset of buffer[0]
    private var line: Int
    private var atEOF = false

    /// Opens `path` for reading from `offset` (0: the start, where a BOM is skipped).
    ///
    /// The descriptor is closed by `deinit` only, once: once every stored property is set, a throwing
    /// initializer of a class still runs `deinit`, so closing it here too would close it twice (and
    /// perhaps another thread's file that got the same number in between).
    /// - Parameters:
    ///   - line: the line number at `offset`, for messages.
    ///   - delimiter: the byte between fields (`,` `;` tab `|`; not a quote or line break).
    /// - Throws: `HealthCardError(.input)` when the file cannot be opened (or is not a regular file: a FIFO
    ///   would never end), or is UTF-16 or UTF-32.
    public init(path: String, offset: Int = 0, line: Int = 1, delimiter: UInt8 = 0x2C, limits: InputLimits = .standard) throws {
        self.maxRecordBytes = limits.csvRecordBytes
        self.path = path
        self.line = line
        self.delimiter = delimiter == 0x22 || delimiter == 0x0A || delimiter == 0x0D ? 0x2C : delimiter
        fd = try FileIO.openRegularFile(path, kind: .input)
        if offset > 0 {
            guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else {
                throw HealthCardError(.input, "cannot seek in \(path)")
            }
            fileOffset = offset
        } else {
            try fill()
            try refuseNonUTF8Unicode()
            if UTF8BOM.starts(buffer[..<bufferCount]) { bufferIndex = UTF8BOM.bytes.count }
        }
    }

    /// Refuses a UTF-16 or UTF-32 file, or one that is not text at all (an image, a workbook, a binary file), by
    /// name (its first block is in `buffer`), before any of its bytes could reach a message.
    private func refuseNonUTF8Unicode() throws {
        if let encoding = TextEncoding.nonUTF8Unicode(buffer[..<bufferCount]) {
            throw HealthCardError(.input, code: .inputEncoding, TextEncoding.message(path: path, encoding: encoding))
        }
        if let binary = TextEncoding.binaryKind(buffer[..<bufferCount]) {
            throw HealthCardError(
                .input, code: .inputEncoding,
                "\(path) is \(binary.name), not a CSV export; no card is issued from it: \(binary.advice)")
        }
    }

    deinit { close(fd) }

    private func fill() throws {
        fileOffset += bufferCount
        bufferIndex = 0
        bufferCount = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { OS.read(fd, $0.baseAddress, $0.count) }
            guard n >= 0 else {
                throw HealthCardError(.input, "cannot read \(path): \(OS.errorText())")
            }
            bufferCount = n
            if n == 0 { atEOF = true }
            return
        }
    }

    @inline(__always) private func peek() throws -> UInt8? {
        if bufferIndex >= bufferCount {
            if atEOF { return nil }
            try fill()
            if bufferCount == 0 { return nil }
        }
        return buffer[bufferIndex]
    }

    @inline(__always) private func advance() { bufferIndex += 1 }

    private var position: Int { fileOffset + bufferIndex }

    /// Reads the next record that holds a value, or nil at the end of the file.
    /// - Throws: `HealthCardError(.input)` naming file, line and byte offset for bytes that are not
    ///   UTF-8, a quote inside an unquoted field, text after a closing quote, or an unterminated quote.
    public func next() throws -> Record? {
        while let record = try nextRecord() {
            if !Self.isEmpty(record) { return record }
        }
        return nil
    }

    /// When `found` is another delimiter a template can name: a hint that the file is separated by it.
    static func delimiterHint(found: UInt8, expected: UInt8) -> String {
        guard found != expected, Template.delimiters.contains(where: { $0.byte == found }) else { return "" }
        return ". The file may be \(Template.delimiterName(found))-separated: if so, set \"delimiter\" in the template"
    }

    /// True for a record whose fields are all empty or spaces and tabs (`,,,,,,`, `"",""`).
    static func isEmpty(_ record: Record) -> Bool {
        record.fields.allSatisfy { $0.utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
    }

    /// Reads the next record, or nil at the end of the file.
    private func nextRecord() throws -> Record? {
        // Skip blank lines.
        while let b = try peek(), b == 0x0A || b == 0x0D {
            advance()
            if b == 0x0D, try peek() == 0x0A { advance() }
            line += 1
        }
        guard try peek() != nil else { return nil }
        let startLine = line
        let startOffset = position
        var fields: [String] = []
        var field: [UInt8] = []
        var fieldOffset = position
        var fieldLine = line
        // Indices in `field` where a doubled quote "" was read as one byte, to map field bytes back to file offsets.
        var collapsedQuotes: [Int] = []
        // The record's bytes so far, against `maxRecordBytes`: a line that never ends (a
        // quote never closed in a huge file) is refused after its budget, not read into memory whole.
        var recordBytes = 0
        // `openQuote`: the line where the quoted field still open when the budget ran out began (nil: none was
        // open). Only then can a quote never closed be why the record is so long.
        func overBudget(openQuote: Int? = nil) -> HealthCardError {
            let why =
                openQuote.map {
                    "; a quoted field opened on line \($0) (\(path):\($0)) is still open there: check for a quote that is "
                        + "never closed"
                } ?? "; no quoted field was open, so the row itself is that long (e.g. a value pasted many times into a cell)"
            return HealthCardError(
                .input, code: .inputTooLarge,
                "\(path):\(startLine): the record starting on this line is longer than \(InputBudget.describe(bytes: maxRecordBytes)), "
                    + "the most one record may take (docs/verify.md, \"Budgets\")" + why)
        }
        func finishField() throws -> String {
            recordBytes += field.count + 1
            if recordBytes > maxRecordBytes { throw overBudget() }
            let text = try decode(field, offset: fieldOffset, line: fieldLine, collapsedQuotes: collapsedQuotes)
            field.removeAll(keepingCapacity: true)
            collapsedQuotes.removeAll()
            return text
        }
        while true {
            guard let b = try peek() else {
                fields.append(try finishField())
                return Record(fields: fields, line: startLine, offset: startOffset)
            }
            if b == 0x22 && field.isEmpty {
                // Quoted field.
                let quoteLine = line
                advance()
                fieldOffset = position
                fieldLine = line
                while true {
                    guard let c = try peek() else {
                        throw HealthCardError(
                            .input, code: .csvQuoting,
                            "\(path):\(quoteLine): a quoted field opened on this line is never closed; "
                                + "check for a stray '\"' (quotes inside a quoted field are written twice: \"\")")
                    }
                    advance()
                    if recordBytes + field.count >= maxRecordBytes { throw overBudget(openQuote: quoteLine) }
                    if c == 0x22 {
                        if try peek() == 0x22 {
                            advance()
                            collapsedQuotes.append(field.count)
                            field.append(0x22)
                            continue
                        }
                        break
                    }
                    if c == 0x0A {
                        line += 1
                    } else if c == 0x0D, try peek() != 0x0A {
                        line += 1
                    }
                    field.append(c)
                }
                let after = try peek()
                if let after, after != delimiter && after != 0x0A && after != 0x0D {
                    // A stray quote opens a field that runs on over lines until the next quote: where it broke is not
                    // where the mistake is, so the line where the quoted field began is named too.
                    let began =
                        quoteLine == line
                        ? ""
                        : "; the quoted field began on line \(quoteLine) (\(path):\(quoteLine)), so a stray '\"' there may "
                            + "have opened it and run it on to this line"
                    throw HealthCardError(
                        .input, code: .csvQuoting,
                        "\(path):\(line): unexpected character after a closing quote at byte \(position); "
                            + "a quoted field must end at a \(Template.delimiterName(delimiter)) or the end of the line"
                            + began + Self.delimiterHint(found: after, expected: delimiter))
                }
                continue
            }
            advance()
            switch b {
            case delimiter:
                fields.append(try finishField())
                fieldOffset = position
                fieldLine = line
            case 0x0A, 0x0D:
                if b == 0x0D, try peek() == 0x0A { advance() }
                fields.append(try finishField())
                line += 1
                return Record(fields: fields, line: startLine, offset: startOffset)
            case 0x22:
                throw HealthCardError(
                    .input, code: .csvQuoting,
                    "\(path):\(line): a '\"' inside an unquoted field at byte \(position - 1); "
                        + "quote the whole field and write the quote twice (\"a \"\"b\"\" c\")")
            default:
                if recordBytes + field.count >= maxRecordBytes { throw overBudget() }
                field.append(b)
            }
        }
    }

    /// The field as a String.
    /// - Parameters:
    ///   - offset, line: where `bytes[0]` is in the file (after an opening quote).
    ///   - collapsedQuotes: indices in `bytes` where a doubled quote was read as one byte.
    /// - Throws: `HealthCardError(.input)` naming the line and byte offset of the first byte that is not UTF-8.
    private func decode(_ bytes: [UInt8], offset: Int, line: Int, collapsedQuotes: [Int]) throws -> String {
        // Most fields are ASCII, which is UTF-8 as it is: no validation to run.
        if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        var bad = 0
        var i = 0
        while i < bytes.count {
            let length = CSVReader.validSequenceLength(bytes, at: i)
            if length == 0 {
                bad = i
                break
            }
            i += length
        }
        let byte = String(bytes[bad], radix: 16, uppercase: true)
        let fileOffset = offset + bad + collapsedQuotes.filter { $0 < bad }.count
        var badLine = line
        for (i, c) in bytes[..<bad].enumerated()
        where c == 0x0A || (c == 0x0D && (i + 1 == bad || bytes[i + 1] != 0x0A)) {
            badLine += 1
        }
        throw HealthCardError(
            .input, code: .inputEncoding,
            "\(path):\(badLine): byte offset \(fileOffset) (0x\(byte)) is not UTF-8; the file looks like a "
                + "Latin-1 or Windows-1252 export. No card is issued from it; re-save it as UTF-8 (e.g. `iconv -f WINDOWS-1252 -t UTF-8 "
                + "IN.csv > OUT.csv`) and run again")
    }

    /// Length of the valid UTF-8 sequence at `i`, or 0 when it is invalid.
    static func validSequenceLength(_ b: [UInt8], at i: Int) -> Int {
        let c = b[i]
        if c < 0x80 { return 1 }
        let n: Int
        switch c {
        case 0xC2...0xDF: n = 2
        case 0xE0...0xEF: n = 3
        case 0xF0...0xF4: n = 4
        default: return 0
        }
        guard i + n <= b.count else { return 0 }
        return String(validating: b[i..<i + n], as: UTF8.self) == nil ? 0 : n
    }
}
