/// A compact JWS as SMART Health Cards use it (digest sections 1 and 4):
/// `b64url(header) . b64url(rawDEFLATE(payload)) . b64url(R‖S)`, header
/// `{"zip":"DEF","alg":"ES256","kid":"<RFC 7638 thumbprint>"}`.
public struct JWS: Sendable, Equatable {
    /// The compact serialization: ASCII `A–Z a–z 0–9 - _ .`, no padding, no whitespace.
    public let compact: String

    public init(compact: String) { self.compact = compact }

    /// The header bytes for `kid`, in the spec examples' member order (zip, alg, kid).
    public static func headerBytes(kid: String) -> [UInt8] {
        Array(#"{"zip":"DEF","alg":"ES256","kid":""#.utf8) + Array(kid.utf8) + Array(#""}"#.utf8)
    }

    /// Signs already-compressed payload bytes. Package: the library signs a card only through `CardIssuer`,
    /// which signs only what it checked.
    /// - Parameters:
    ///   - deflatedPayload: the raw DEFLATE of the minified payload JSON.
    ///   - signer: makes the 64-byte R‖S signature; its public key gives the kid.
    /// - Throws: `HealthCardError(.crypto)` from the signer, or if it returns other than 64 bytes.
    package static func sign<S: JWSSigner>(deflatedPayload: [UInt8], kid: String, signer: inout S) throws -> JWS {
        try sign(header: headerBytes(kid: kid), deflatedPayload: deflatedPayload, signer: &signer)
    }

    /// Signs already-compressed payload bytes under any header bytes (the fixture catalogue's headers
    /// without `kid`, `zip` or `alg`; cards use `sign(deflatedPayload:kid:signer:)`).
    /// - Throws: as `sign(deflatedPayload:kid:signer:)`.
    package static func sign<S: JWSSigner>(header: [UInt8], deflatedPayload: [UInt8], signer: inout S) throws -> JWS {
        var signingInput = Base64URL.encodeBytes(header)
        signingInput.append(UInt8(ascii: "."))
        signingInput.append(contentsOf: Base64URL.encodeBytes(deflatedPayload))
        let signature = try signer.sign(signingInput)
        guard signature.count == 64 else {
            throw HealthCardError(.crypto, "the signer returned \(signature.count) bytes; ES256 in a JWS is 64 bytes R‖S")
        }
        signingInput.append(UInt8(ascii: "."))
        signingInput.append(contentsOf: Base64URL.encodeBytes(signature))
        return JWS(compact: String(decoding: signingInput, as: UTF8.self))
    }

    /// The signing input `b64url(header) . b64url(payload)` as ASCII bytes: what a signature covers.
    public static func signingInput(header: [UInt8], payload: [UInt8]) -> [UInt8] {
        Base64URL.encodeBytes(header) + [UInt8(ascii: ".")] + Base64URL.encodeBytes(payload)
    }

    /// Assembles a compact JWS from its three parts as bytes, whatever they hold: a signature of any
    /// length (e.g. the DER form the fixture catalogue shows), a payload that is not compressed.
    public init(header: [UInt8], payload: [UInt8], signature: [UInt8]) {
        let bytes = Self.signingInput(header: header, payload: payload) + [UInt8(ascii: ".")] + Base64URL.encodeBytes(signature)
        self.init(compact: String(decoding: bytes, as: UTF8.self))
    }

    /// The three decoded parts of a compact JWS.
    public struct Parts: Sendable {
        public var header: [UInt8]
        public var payload: [UInt8]
        public var signature: [UInt8]
        /// ASCII of `header.payload` as written: what the signature covers.
        public var signingInput: [UInt8]
    }

    /// Splits and base64url-decodes the three parts.
    /// - Throws: `HealthCardError(.validation)` when there are not exactly three parts or a part is not
    ///   base64url.
    public func parts() throws(HealthCardError) -> Parts {
        // One copy of the text; the parts are slices of it between the dots.
        let bytes = Array(compact.utf8)
        var dots: [Int] = []
        var from = 0
        while dots.count <= 2, let dot = bytes[from...].firstIndex(of: UInt8(ascii: ".")) {
            dots.append(dot)
            from = dot + 1
        }
        guard dots.count == 2 else {
            let found = dots.count < 2 ? dots.count + 1 : bytes.lazy.filter { $0 == UInt8(ascii: ".") }.count + 1
            throw HealthCardError(.validation, "a compact JWS has 3 parts separated by '.', found \(found)")
        }
        let names = ["header", "payload", "signature"]
        let ranges = [0..<dots[0], dots[0] + 1..<dots[1], dots[1] + 1..<bytes.count]
        var decoded: [[UInt8]] = []
        for (i, range) in ranges.enumerated() {
            guard let part = Base64URL.decode(Array(bytes[range])) else {
                throw HealthCardError(.validation, "the JWS \(names[i]) is not base64url without padding")
            }
            decoded.append(part)
        }
        let signingInput = Array(bytes[0..<dots[1]])
        return Parts(header: decoded[0], payload: decoded[1], signature: decoded[2], signingInput: signingInput)
    }
}
