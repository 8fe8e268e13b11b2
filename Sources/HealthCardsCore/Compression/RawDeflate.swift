internal import CZlib

/// Raw DEFLATE (RFC 1951) with system zlib: `windowBits = -15`, so no zlib (RFC 1950) header and no
/// Adler-32 (digest section 4). Level 6, memLevel 8 and the default strategy reproduce the spec
/// examples' payload bytes exactly.
///
/// One instance owns its `z_stream`s and reuses them (`deflateReset`) for every call; use one per thread.
/// An input of at most `smallInputBytes` (4 KiB: nearly every card) goes through a stream of memLevel 5,
/// larger ones through one of memLevel 8 (made on first use). memLevel sizes zlib's hash table
/// (2^(memLevel+7) entries, cleared by every reset: 64 KiB at 8, 8 KiB at 5) and its symbol buffer; on
/// inputs this small the smaller table finds the same matches, so the output is the same bytes (the spec
/// examples and the 500 payloads of a bench `generate` run compare equal), for a quarter fewer instructions
/// in the deflate. Where a hash collision could make it differ, it is still raw DEFLATE of about the same size.
/// Each stream lives on the heap at one address for its whole life: zlib keeps a pointer back to it
/// (`state->strm`) and refuses a stream that has moved, and Swift promises no stable address for a
/// stored property passed with `&`.
public final class RawDeflater {
    /// Inputs up to this many bytes use the memLevel 5 stream.
    static let smallInputBytes = 4096
    private let small: UnsafeMutablePointer<z_stream>
    private var large: UnsafeMutablePointer<z_stream>?
    private let windowBits: Int32
    /// The zlib level, 0 to 9.
    public let level: Int32

    /// The stream format written.
    public enum Wrapping: Sendable {
        /// Raw DEFLATE (RFC 1951), what SMART Health Cards require: `windowBits = -15`.
        case raw
        /// A zlib (RFC 1950) stream: `78 9C` header and Adler-32 trailer around the DEFLATE data
        /// (`windowBits = 15`). The classic issuer bug; only the fixture catalogue makes it on purpose.
        case zlib
    }

    /// - Parameter wrapping: `.raw` (the default, and the only one a card may use) or `.zlib`.
    /// - Throws: `HealthCardError(.compression)` when zlib cannot initialise.
    public init(level: Int32 = 6, wrapping: Wrapping = .raw) throws(HealthCardError) {
        self.level = level
        windowBits = wrapping == .raw ? -15 : 15
        small = try Self.makeStream(level: level, windowBits: windowBits, memLevel: 5)
    }

    private static func makeStream(level: Int32, windowBits: Int32, memLevel: Int32) throws(HealthCardError) -> UnsafeMutablePointer<z_stream> {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = CZlib_deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY)
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw HealthCardError(.compression, "deflateInit2 failed with zlib status \(status)")
        }
        return stream
    }

    private static func free(_ stream: UnsafeMutablePointer<z_stream>) {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    deinit {
        Self.free(small)
        if let large { Self.free(large) }
    }

    /// The version of the zlib this process runs with, as zlib reports it (`zlibVersion()`, e.g. "1.2.13").
    public static var zlibRuntimeVersion: String { String(cString: zlibVersion()) }

    /// Compresses `input` as one raw DEFLATE stream (or zlib stream, for `.zlib`).
    /// - Returns: the compressed bytes (for `.raw`, never starting with a zlib header).
    /// - Throws: `HealthCardError(.compression)`, also for an input over 4 GiB (zlib counts in 32 bits).
    public func deflate(_ input: [UInt8]) throws(HealthCardError) -> [UInt8] {
        guard input.count <= Int(UInt32.max) else {
            throw HealthCardError(.compression, "the payload is \(input.count) bytes; raw DEFLATE here takes at most 4 GiB at once")
        }
        let stream: UnsafeMutablePointer<z_stream>
        if input.count <= Self.smallInputBytes {
            stream = small
        } else if let large {
            stream = large
        } else {
            stream = try Self.makeStream(level: level, windowBits: windowBits, memLevel: 8)
            large = stream
        }
        guard deflateReset(stream) == Z_OK else { throw HealthCardError(.compression, "deflateReset failed") }
        let bound = Int(deflateBound(stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let status: Int32 = input.withUnsafeBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                // zlib never writes through next_in (it is `z_const` in zlib's own build).
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress)
                stream.pointee.avail_in = uInt(inBuffer.count)
                stream.pointee.next_out = outBuffer.baseAddress
                stream.pointee.avail_out = uInt(outBuffer.count)
                let status = CZlib.deflate(stream, Z_FINISH)
                stream.pointee.next_in = nil
                stream.pointee.next_out = nil
                return status
            }
        }
        guard status == Z_STREAM_END else {
            throw HealthCardError(.compression, "deflate did not finish (zlib status \(status))")
        }
        output.removeLast(Int(stream.pointee.avail_out))
        return output
    }
}

/// Raw INFLATE (RFC 1951), to check a card before it is written and to read cards.
public enum RawInflate {
    /// Largest inflated size accepted, in bytes (a guard against decompression bombs).
    public static let maxOutput = 4 * 1024 * 1024

    /// Why an inflate failed: what the package's readers switch on (`inflateFailing`). A client gets it as
    /// `HealthCardError` (`inflate`), with the code of the failure (`DEFLATE_ZLIB_WRAPPED`, …).
    package enum Failure: Error, Equatable, Sendable {
        /// The data is a zlib (RFC 1950) stream, not raw DEFLATE: the classic issuer bug.
        case zlibWrapped
        /// The data is a gzip stream.
        case gzipWrapped
        /// Not a valid raw DEFLATE stream; the zlib message.
        case invalid(String)
        /// The stream goes on past `maxOutput` bytes.
        case tooLarge
        /// Bytes follow the end of the DEFLATE stream.
        case trailingData(Int)

        /// The failure as the library's error: kind `.compression` and the failure's own rule code.
        package var healthCardError: HealthCardError {
            switch self {
            case .zlibWrapped:
                return HealthCardError(
                    .compression, code: .deflateZlibWrapped,
                    "the data is a zlib (RFC 1950) stream, not raw DEFLATE (RFC 1951); compress with windowBits -15")
            case .gzipWrapped:
                return HealthCardError(
                    .compression, code: .deflateGzipWrapped,
                    "the data is a gzip stream, not raw DEFLATE (RFC 1951); compress with windowBits -15")
            case .invalid(let message):
                return HealthCardError(
                    .compression, code: .deflateInvalid, "the data is not raw DEFLATE (RFC 1951): \(message)")
            case .tooLarge:
                return HealthCardError(
                    .compression, code: .deflateTooLarge,
                    "the data inflates to more than \(RawInflate.maxOutput) bytes; refused")
            case .trailingData(let count):
                return HealthCardError(
                    .compression, code: .deflateTrailingData,
                    "\(count) byte\(count == 1 ? "" : "s") follow the end of the raw DEFLATE stream; expected exactly one stream")
            }
        }
    }

    /// Inflates one raw DEFLATE stream.
    /// - Throws: `HealthCardError` of kind `.compression` with the failure's code: `DEFLATE_ZLIB_WRAPPED` when
    ///   the data would inflate as zlib instead, `DEFLATE_GZIP_WRAPPED`, `DEFLATE_INVALID`, `DEFLATE_TOO_LARGE`
    ///   (past `maxOutput`), `DEFLATE_TRAILING_DATA` (bytes after the stream).
    public static func inflate(_ input: [UInt8]) throws(HealthCardError) -> [UInt8] {
        do { return try inflateFailing(input) } catch { throw error.healthCardError }
    }

    /// Inflates one raw DEFLATE stream and tells how many bytes follow its end, as pako (which the reference
    /// validator uses) and zlib's raw inflate read a payload: they stop at the end of the stream. For judging
    /// cards from others, where bytes after the stream are the issuer's defect, not a different content; what the
    /// toolkit writes is checked with `inflate`, which refuses them.
    /// - Returns: the inflated bytes and the count of bytes after the stream (0 for an exact stream).
    /// - Throws: `HealthCardError` as `inflate` does, except `DEFLATE_TRAILING_DATA`.
    public static func inflateStoppingAtEnd(_ input: [UInt8]) throws(HealthCardError) -> (output: [UInt8], trailing: Int) {
        do { return try inflateStoppingAtEndFailing(input) } catch { throw error.healthCardError }
    }

    /// `inflate`, throwing the `Failure` itself (for the package's readers, which report each as a finding).
    package static func inflateFailing(_ input: [UInt8]) throws(Failure) -> [UInt8] {
        do {
            return try run(input, windowBits: -15)
        } catch {
            if input.count >= 2, input[0] == 0x1F, input[1] == 0x8B, (try? run(input, windowBits: 31)) != nil {
                throw .gzipWrapped
            }
            if input.count >= 2, (try? run(input, windowBits: 15)) != nil { throw .zlibWrapped }
            throw error
        }
    }

    /// `inflateStoppingAtEnd`, throwing the `Failure` itself.
    package static func inflateStoppingAtEndFailing(_ input: [UInt8]) throws(Failure) -> (output: [UInt8], trailing: Int) {
        do {
            return (try inflateFailing(input), 0)
        } catch .trailingData {
            guard let pass = Pass(input, windowBits: -15) else { throw .invalid("inflateInit2 failed") }
            if pass.overBudget { throw .tooLarge }
            guard pass.status == Z_STREAM_END else { throw .invalid(pass.message) }
            return (pass.output, pass.leftover)
        }
    }

    private static func run(_ input: [UInt8], windowBits: Int32) throws(Failure) -> [UInt8] {
        // Compressed input comes from a file of at most `InputBudget.cardFileBytes`; zlib counts in 32 bits.
        guard input.count <= Int(UInt32.max) else { throw .tooLarge }
        guard let pass = Pass(input, windowBits: windowBits) else { throw .invalid("inflateInit2 failed") }
        if pass.overBudget { throw .tooLarge }
        guard pass.status == Z_STREAM_END else {
            throw .invalid(
                pass.message.isEmpty
                    ? "the DEFLATE stream is truncated or corrupt (zlib status \(pass.status))" : pass.message)
        }
        if pass.leftover > 0 { throw .trailingData(pass.leftover) }
        return pass.output
    }

    /// One run of zlib's inflate over all of an input: what `inflate` and `inflatePrefix` judge.
    private struct Pass {
        /// The bytes inflated, at most `maxOutput` plus one 16 KiB chunk.
        var output: [UInt8] = []
        /// zlib's last status: `Z_STREAM_END` when the stream ended, `Z_BUF_ERROR` when the input ran out
        /// before it did, a negative error otherwise.
        var status: Int32 = Z_OK
        /// Input bytes left after the stream ended (or where it stopped).
        var leftover = 0
        /// zlib's message for an error, or empty.
        var message = ""
        /// True when the output passed `maxOutput` bytes (inflating stopped there).
        var overBudget = false

        /// Inflates `input` (at most 4 GiB: zlib counts in 32 bits) until the stream ends, fails, runs out
        /// of input or passes `maxOutput` bytes. nil when zlib cannot initialise.
        init?(_ input: [UInt8], windowBits: Int32) {
            // On the heap at a stable address: zlib keeps a pointer back to the stream between calls.
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            defer {
                stream.deinitialize(count: 1)
                stream.deallocate()
            }
            guard CZlib_inflateInit2(stream, windowBits) == Z_OK else { return nil }
            defer { inflateEnd(stream) }
            // Only the bytes zlib writes are read (`produced`), so the chunk need not be zeroed first.
            var chunk = [UInt8](unsafeUninitializedCapacity: 16384) { _, count in count = 16384 }
            input.withUnsafeBufferPointer { inBuffer in
                // zlib never writes through next_in.
                stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress)
                stream.pointee.avail_in = uInt(inBuffer.count)
                repeat {
                    chunk.withUnsafeMutableBufferPointer { outBuffer in
                        stream.pointee.next_out = outBuffer.baseAddress
                        stream.pointee.avail_out = uInt(outBuffer.count)
                        status = CZlib.inflate(stream, Z_NO_FLUSH)
                    }
                    let produced = chunk.count - Int(stream.pointee.avail_out)
                    output.append(contentsOf: chunk.prefix(produced))
                    if output.count > maxOutput {
                        overBudget = true
                        break
                    }
                    if status == Z_BUF_ERROR && stream.pointee.avail_in == 0 { break }
                } while status == Z_OK
                leftover = Int(stream.pointee.avail_in)
                if let msg = stream.pointee.msg { message = String(cString: msg) }
                stream.pointee.next_in = nil
                stream.pointee.next_out = nil
            }
        }
    }
}

extension RawInflate {
    /// Inflates as much of a raw DEFLATE stream as `input` holds, for judging whether bytes can be the
    /// start of a payload (`verify` telling apart the QR chunks of several cards).
    /// - Returns: the bytes inflated so far and whether the stream ended within `input`; nil when the data
    ///   is not DEFLATE (a zlib data error), or inflates to more than `maxOutput` bytes.
    public static func inflatePrefix(_ input: [UInt8]) -> (output: [UInt8], ended: Bool)? {
        guard input.count <= Int(UInt32.max), let pass = Pass(input, windowBits: -15), !pass.overBudget else {
            return nil
        }
        switch pass.status {
        case Z_STREAM_END: return pass.leftover == 0 ? (pass.output, true) : nil
        case Z_OK, Z_BUF_ERROR: return (pass.output, false)
        default: return nil
        }
    }
}
