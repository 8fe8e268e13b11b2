#if canImport(Glibc)
    import Glibc
#endif

/// The operating system's C interface for what several parts of the library need: error texts, and reads
/// and writes that go on after a signal interrupts them (EINTR). One place to change for a later port.
package enum OS {
    /// The text of an `errno` value (`strerror`), e.g. "No space left on device"; `errno` itself by default.
    package static func errorText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    /// `read(2)` of up to `count` bytes into `buffer`, retried when a signal interrupts it.
    /// - Returns: the bytes read (0 at the end of the file), or -1 with `errno` set.
    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        while true {
            let n = Glibc.read(fd, buffer, count)
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// Writes all of `bytes` to `fd` (`write(2)` until done, retried when a signal interrupts it).
    /// - Returns: nil when everything was written; else the error's text (a write of 0 bytes is EIO).
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        var written = 0
        while written < bytes.count {
            let n = Glibc.write(fd, base + written, bytes.count - written)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return errorText(n == 0 ? EIO : errno) }
            written += n
        }
        return nil
    }
}

/// The UTF-8 byte order mark, which exports and editors put before text and verifiers must not see in a
/// payload (digest section 3).
package enum UTF8BOM {
    /// EF BB BF.
    package static let bytes: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// True when `text` starts with the mark.
    package static func starts<C: Collection>(_ text: C) -> Bool where C.Element == UInt8 { text.starts(with: bytes) }

    /// `text` without a leading mark (as it is when it has none).
    package static func strip<C: Collection>(_ text: C) -> C.SubSequence where C.Element == UInt8 {
        starts(text) ? text.dropFirst(3) : text[...]
    }
}
