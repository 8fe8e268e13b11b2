internal import CZlib

/// Streaming gunzip (RFC 1952) through zlib, for files of any size read in chunks (rotated access logs,
/// `access.log.1.gz`): memory stays at one input chunk and its output. Several gzip members one after another
/// (what `cat a.gz b.gz` makes) are read as one stream, as `gzip -d` does.
package final class GzipStream {
    private let stream: UnsafeMutablePointer<z_stream>
    private var ready = false
    /// True once a member ended and no byte followed yet.
    package private(set) var atMemberEnd = false

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
    /// - Throws: `HealthCardError(.compression)` for data that is not gzip or is corrupt; whatever `body` throws.
    package func feed(_ input: [UInt8], _ body: ([UInt8]) throws -> Void) throws {
        guard !input.isEmpty else { return }
        var out = [UInt8](repeating: 0, count: 65536)
        try input.withUnsafeBufferPointer { inBuffer in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress)
            stream.pointee.avail_in = uInt(inBuffer.count)
            defer { stream.pointee.next_in = nil }
            while stream.pointee.avail_in > 0 {
                atMemberEnd = false
                let status: Int32 = out.withUnsafeMutableBufferPointer { outBuffer in
                    stream.pointee.next_out = outBuffer.baseAddress
                    stream.pointee.avail_out = uInt(outBuffer.count)
                    defer { stream.pointee.next_out = nil }
                    return CZlib.inflate(stream, Z_NO_FLUSH)
                }
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
                    if produced == 0 { return }
                default:
                    let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    throw HealthCardError(.compression, "not gzip data, or corrupt: \(message)")
                }
            }
        }
    }
}
