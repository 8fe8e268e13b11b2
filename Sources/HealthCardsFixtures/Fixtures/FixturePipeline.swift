import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// The issuing pipeline of `CardIssuer` as separate stages, each of which a fixture may replace with a
/// broken one: minimize → validate → claims → serialize → compress → header → sign → assemble, then the
/// file, QR text, QR symbol and PNG stages (`FixtureOutput`). With every stage at its default it makes the
/// very bytes `issue --deterministic` makes from the same Bundle (`FixturePipelineTests` checks it), so a
/// broken fixture differs from a valid card only in the stage its manifest entry names.
struct FixturePipeline {
    /// How the payload is compressed.
    enum Compression: Sendable {
        /// Raw DEFLATE, level 6 (the card's).
        case raw
        /// A zlib (RFC 1950) stream instead of raw DEFLATE.
        case zlib
        /// Not compressed at all (the header still says `zip: "DEF"`).
        case none
    }

    /// What the JWS header holds.
    enum Header: Sendable {
        /// `{"zip":"DEF","alg":"ES256","kid":"<signing key's kid>"}`.
        case standard
        /// The standard header naming another kid.
        case kid(String)
        case withoutKid
        case withoutZip
        case withoutAlg
    }

    /// How the signature is made and written.
    enum Signature: Sendable {
        /// ES256 with the signing key, 64 bytes R‖S (RFC 6979 for a public test key, `FixtureSigner`).
        case raw
        /// The same kind of signature written as ASN.1 DER, with `r` and `s` chosen (RFC 6979 additional
        /// data, `s` or `n − s`) to have their top bit set or clear, so their INTEGERs are 33 or 32 bytes.
        case der(highBitR: Bool, highBitS: Bool)
        /// R‖S made by another key than the one the header names.
        case otherKey(PublicTestKey)
    }

    /// The claims a card carries besides its Bundle.
    struct Claims: Sendable {
        var issuer: String
        /// `nbf` as a JSON number lexeme.
        var notBefore: String
        var expires: Int64?
        var rid: String?
    }

    var minimization: BundleMinimizer.Steps = .all
    /// Run the validator gate `issue` runs before signing (a fixture whose fault is in the Bundle's content
    /// turns it off: `issue` would refuse to sign it).
    var validate = true
    /// A replaced claims stage: changes the claims object after `Payload.json` made it.
    var editClaims: (@Sendable (inout JSONObject) -> Void)?
    /// A replaced serialization stage: pretty-printed JSON instead of minified.
    var serializePretty = false
    var compression: Compression = .raw
    var header: Header = .standard
    var signature: Signature = .raw

    /// What the pipeline made.
    struct Output: Sendable {
        /// The claims JSON bytes that were compressed.
        var payload: [UInt8]
        var jws: JWS
    }

    /// Runs the stages for one Bundle.
    /// - Parameters:
    ///   - bundle: the Bundle as exported (minimized here).
    ///   - signer: the issuer's key, signing with RFC 6979 nonces.
    ///   - now: the time dates are judged at, seconds since 1970.
    /// - Throws: `HealthCardError(.validation)` when the validator gate is on and the Bundle has any finding
    ///   (a fixture that should be valid is not: a bug in the catalogue); minimization and crypto errors.
    func run(_ bundle: JSONValue, claims: Claims, signer: FixtureSigner, now: Int64) throws -> Output {
        let minimized: JSONValue
        do {
            if validate {
                // The gate `issue` runs: the checked Bundle (minimized with every step), refused on any finding.
                guard minimization == .all else {
                    throw HealthCardError(
                        .validation, "a fixture that leaves out a minimization step cannot pass the issue gate")
                }
                let checked = try CheckedBundle.minimizing(bundle, now: now)
                var findings = checked.findings
                if let nbf = Int64(claims.notBefore) {
                    findings += checked.eventsAfter(notBefore: nbf, severity: .error)
                }
                if !findings.isEmpty {
                    throw HealthCardError(
                        .validation,
                        "fixture Bundle does not pass the issue gate: "
                            + findings.map { "\($0.code.rawValue) at \($0.location.path ?? "?")" }.joined(
                                separator: ", "))
                }
                minimized = checked.bundle
            } else {
                minimized = try BundleMinimizer.minimize(bundle, steps: minimization)
            }
        } catch let errors as HealthCardError where errors.kind == .bundle {
            throw HealthCardError(.bundle, "\(errors)")
        }
        let types = Payload.types(for: minimized, policy: .legacy, isCOVID19: Terminology.isCOVID19Code)
        let payload = Payload(
            issuer: claims.issuer, notBefore: claims.notBefore, expires: claims.expires, types: types,
            rid: claims.rid, fhirBundle: minimized)
        var json = payload.json
        if let editClaims, var object = json.objectValue {
            editClaims(&object)
            json = .object(object)
        }
        let bytes = serializePretty ? JSONWriter.pretty(json) : JSONWriter.minified(json)
        let compressed: [UInt8]
        switch compression {
        case .raw: compressed = try RawDeflater().deflate(bytes)
        case .zlib: compressed = try RawDeflater(wrapping: .zlib).deflate(bytes)
        case .none: compressed = bytes
        }
        let kid = JWK(key: signer.publicKey).kid
        let headerBytes: [UInt8]
        switch header {
        case .standard: headerBytes = JWS.headerBytes(kid: kid)
        case .kid(let other): headerBytes = JWS.headerBytes(kid: other)
        case .withoutKid: headerBytes = Array(#"{"zip":"DEF","alg":"ES256"}"#.utf8)
        case .withoutZip: headerBytes = Array(#"{"alg":"ES256","kid":""#.utf8) + Array(kid.utf8) + Array(#""}"#.utf8)
        case .withoutAlg: headerBytes = Array(#"{"zip":"DEF","kid":""#.utf8) + Array(kid.utf8) + Array(#""}"#.utf8)
        }
        let input = JWS.signingInput(header: headerBytes, payload: compressed)
        let signatureBytes: [UInt8]
        switch signature {
        case .raw:
            var signer = signer
            signatureBytes = try signer.sign(input)
        case .der(let highR, let highS):
            var signer = signer
            signatureBytes = try ES256.derSignature(fromRaw: try signer.sign(input, highBitR: highR, highBitS: highS))
        case .otherKey(let key):
            var other = try DeterministicES256Signer(key: key)
            signatureBytes = try other.sign(input)
        }
        return Output(payload: bytes, jws: JWS(header: headerBytes, payload: compressed, signature: signatureBytes))
    }
}

/// The stages after the JWS: the `.smart-health-card` file, the `shc:/` QR text and chunks, the QR symbol
/// and its PNG, each with the broken variants the catalogue shows.
enum FixtureOutput {
    /// The `.smart-health-card` file as `issue` writes it (`IssuedCard.fileBytes`).
    static func file(_ jws: [JWS]) -> [UInt8] {
        JSONWriter.minified(.object(["verifiableCredential": .array(jws.map { .string($0.compact) })]))
    }

    /// How the numeric segment is written.
    enum Digits: Sendable {
        /// Two digits `ord(c) − 45` per character (the spec's).
        case standard
        /// `ord(c) − 44`: an off-by-one, which writes 78 for `z` (every SHC header has a `z`).
        case offByOne
        /// The standard digits with the last one lost.
        case truncated
    }

    /// The numeric segment for `jws`.
    static func digits(_ jws: some StringProtocol, _ kind: Digits = .standard) throws -> [UInt8] {
        switch kind {
        case .standard: return try QRNumeric.digits(String(jws))
        case .truncated: return Array(try QRNumeric.digits(String(jws)).dropLast())
        case .offByOne:
            return jws.utf8.flatMap { byte -> [UInt8] in
                let value = Int(byte) - 44
                return [UInt8(0x30 + value / 10), UInt8(0x30 + value % 10)]
            }
        }
    }

    /// The QR texts of a JWS as `issue --chunk` splits it: `shc:/` + digits, or balanced `shc:/C/N/` chunks.
    static func qrTexts(_ jws: JWS) throws -> [[UInt8]] {
        let chunks = QRNumeric.chunks(jws.compact)
        return try chunks.enumerated().map { i, chunk in
            Array(QRNumeric.prefix(chunk: i + 1, of: chunks.count).utf8) + (try digits(chunk))
        }
    }

    /// A symbol for each QR text: byte segment `shc:/…` then numeric digits, ECC L, smallest version.
    static func symbols(_ jws: JWS) throws -> [QRCode] {
        let chunks = QRNumeric.chunks(jws.compact)
        return try chunks.enumerated().map { i, chunk in try QRCode(jws: chunk, chunk: i + 1, of: chunks.count) }
    }

    /// The prefix and digits of a QR text (split after the last `/`).
    static func segments(_ text: [UInt8]) -> (prefix: [UInt8], digits: [UInt8]) {
        let cut = (text.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
        return (Array(text[..<cut]), Array(text[cut...]))
    }
}
