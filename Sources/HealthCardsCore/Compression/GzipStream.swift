internal import CZlib

/// Streaming gunzip (RFC 1952) through zlib, for files of any size read in chunks (rotated access logs,
/// `access.log.1.gz`): memory stays at one input chunk and its output. Several gzip members one after another
/// (what `cat a.gz b.gz` makes) are read as one stream, as `gzip -d` does. Zero bytes after the last member (the
/// padding some copy tools and log rotators leave, which gzip(1) ignores with a warning) are skipped; any other
/// byte after a member that does not start another member (1F 8B), or after such padding, is an error naming
/// its byte offset.
package final class GzipStream {
    private let stream: UnsafeMutablePointer<z_stream>
    private var ready = false
    /// True once a member ended and no byte followed yet (but zero padding).
    package private(set) var atMemberEnd = false
    /// Bytes of the compressed file fed so far.
    package private(set) var offset = 0
    /// Zero bytes skipped after the last member ended.
    package private(set) var paddingBytes = 0
    /// Where the member being inflated started (byte offset in the file).
    private var memberStart = 0

    /// - Throws: `HealthCardError(.compression)` when zlib cannot start.
    package init() throws(HealthCardError) {
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard CZlib_inflateInit2(stream, 31) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw HealthCardError(.compression, "zlib could not start inflating")
        }
        ready = true
    }

    deinit {
        if ready { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates one chunk of the compressed file, handing the output to `body` in pieces of at most 64 KiB.
    /// - Throws: `HealthCardError(.compression)` for data that is not gzip or is corrupt, or bytes after the last
    ///   member that are neither another member nor zero padding (the message gives the byte offset in the
    ///   file); whatever `body` throws.
    package func feed(_ input: [UInt8], _ body: ([UInt8]) throws -> Void) throws {
        guard !input.isEmpty else { return }
        var out = [UInt8](repeating: 0, count: 65536)
        try input.withUnsafeBufferPointer { inBuffer in
            let base = offset
            defer { offset = base + inBuffer.count }
            var position = 0
            defer { stream.pointee.next_in = nil }
            while position < inBuffer.count {
                // Between members: zero padding is skipped; once it began, only zeros may follow.
                if atMemberEnd {
                    let byte = inBuffer[position]
                    if byte == 0 {
                        let zeros = position
                        while position < inBuffer.count && inBuffer[position] == 0 { position += 1 }
                        paddingBytes += position - zeros
                        continue
                    }
                    if paddingBytes > 0 || byte != 0x1F {
                        let hex = "0x\(byte < 16 ? "0" : "")\(String(byte, radix: 16, uppercase: true))"
                        throw HealthCardError(
                            .compression,
                            paddingBytes > 0
                                ? "byte \(hex) at byte offset \(base + position) follows the \(paddingBytes) zero bytes of padding after the "
                                    + "last gzip member: only zero bytes may follow it (the file was damaged or has data appended)"
                                : "byte \(hex) at byte offset \(base + position), after the end of a gzip member, is neither zero padding "
                                    + "nor the start of another gzip member (1F 8B): the file was damaged or has data appended")
                    }
                    memberStart = base + position
                }
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress! + position)
                stream.pointee.avail_in = uInt(inBuffer.count - position)
                atMemberEnd = false
                let status: Int32 = out.withUnsafeMutableBufferPointer { outBuffer in
                    stream.pointee.next_out = outBuffer.baseAddress
                    stream.pointee.avail_out = uInt(outBuffer.count)
                    defer { stream.pointee.next_out = nil }
                    return CZlib.inflate(stream, Z_NO_FLUSH)
                }
                let before = position
                position = inBuffer.count - Int(stream.pointee.avail_in)
                let produced = out.count - Int(stream.pointee.avail_out)
                if produced > 0 { try body(Array(out[0..<produced])) }
                switch status {
                case Z_OK:
                    continue
                case Z_STREAM_END:
                    atMemberEnd = true
                    guard inflateReset(stream) == Z_OK else {
                        throw HealthCardError(.compression, "zlib could not start the next gzip member")
                    }
                case Z_BUF_ERROR:
                    if produced == 0 && position == before { return }
                default:
                    let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    throw HealthCardError(
                        .compression,
                        "not gzip data, or corrupt: \(message) (in the gzip member that starts at byte offset \(memberStart), "
                            + "read up to byte offset \(base + position))")
                }
            }
        }
    }
}
