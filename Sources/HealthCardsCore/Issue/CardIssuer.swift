/// Settings shared by every card of a run.
public struct IssueSettings: Sendable {
    /// `iss`: https, no trailing slash (checked by `Payload.validateIssuer`).
    public var issuer: String
    /// `nbf`: whole seconds since 1970 (digest section 2; never milliseconds), not in the future.
    public var notBefore: Int64
    /// `exp` in whole seconds since 1970, after `nbf` and now, or nil (cards normally do not expire).
    public var expires: Int64?
    public var typePolicy: Payload.TypePolicy
    /// zlib level for the payload (6 reproduces the spec examples).
    public var deflateLevel: Int32
    /// The issuer-wide revocation secret; when set, each card gets `vc.rid` derived from it, the kid
    /// and the patient id (`RID.derive`).
    public var ridSecret: RIDSecret?

    /// Any `nbf` or `exp` at or above this many seconds is milliseconds (it is after the year 5000).
    public static let maxSeconds: Int64 = 100_000_000_000

    public init(issuer: String, notBefore: Int64, expires: Int64? = nil, typePolicy: Payload.TypePolicy = .legacy,
                deflateLevel: Int32 = 6) {
        self.issuer = issuer
        self.notBefore = notBefore
        self.expires = expires
        self.typePolicy = typePolicy
        self.deflateLevel = deflateLevel
        self.ridSecret = nil
    }

    /// Refuses settings whose cards `verify` would reject at `now`: `iss` not a canonical https URL
    /// (`Payload.validateIssuer`), `nbf` negative, in milliseconds or after `now` (`NBF_NOT_YET_VALID`),
    /// `exp` in milliseconds, not after `nbf` (`EXP_BEFORE_NBF`) or not after `now` (`EXP_EXPIRED`).
    /// - Parameter now: seconds since 1970.
    /// - Throws: `HealthCardError(.configuration)` saying what is wrong.
    public func validate(now: Int64) throws {
        try Payload.validateIssuer(issuer)
        guard notBefore >= 0, notBefore < Self.maxSeconds else {
            throw HealthCardError(.configuration, "nbf \(notBefore) is not whole seconds since 1970 (e.g. \(now)); milliseconds are a classic bug")
        }
        guard notBefore <= now else {
            throw HealthCardError(.configuration, "nbf \(notBefore) (\(Clock.describe(notBefore))) is in the future; verifiers reject a card before its nbf")
        }
        guard let expires else { return }
        guard expires >= 0, expires < Self.maxSeconds else {
            throw HealthCardError(.configuration, "exp \(expires) is not whole seconds since 1970")
        }
        guard expires > now else {
            throw HealthCardError(.configuration, "exp \(expires) (\(Clock.describe(expires))) has passed; verifiers reject an expired card")
        }
        guard expires > notBefore else {
            throw HealthCardError(.configuration, "exp \(expires) is not after nbf (\(notBefore)); a card must be valid for some time")
        }
    }
}

/// The payload a `CardIssuer` signs, made by the issuer itself from a `CheckedBundle`: the claims, the
/// exact bytes that are compressed and signed (serialized once, from those claims), and every finding
/// on them. It cannot be made any other way, so what is signed is always what was checked.
public struct CardPayload: Sendable {
    /// The checked Bundle the claims carry.
    public let checked: CheckedBundle
    /// The JWT claims.
    public let payload: Payload
    /// `payload.minifiedBytes`: the minified UTF-8 JSON that is raw-DEFLATEd and signed.
    public let bytes: [UInt8]
    /// The Bundle's findings, and `NBF_BEFORE_EVENT` (an error) for each event dated after `nbf`.
    public let findings: [Finding]
    /// The kid of the issuer that made it (`vc.rid` is derived with it).
    let kid: String

    /// Reasons the card cannot be issued that are not findings on the Bundle: a `vc.rid` whose HMAC
    /// failed, a payload larger than verifiers inflate.
    let problems: [HealthCardError]

    fileprivate init(checked: CheckedBundle, payload: Payload, notBefore: Int64, kid: String, problems: [HealthCardError] = []) {
        self.checked = checked
        self.payload = payload
        self.bytes = payload.minifiedBytes
        self.kid = kid
        self.findings = checked.findings + checked.eventsAfter(notBefore: notBefore, severity: .error)
        var problems = problems
        // Verifiers refuse to inflate more (DEFLATE_TOO_LARGE), and so would the read-back before writing.
        if let tooLarge = CardIssuer.oversized(payloadBytes: bytes.count) { problems.append(tooLarge) }
        self.problems = problems
    }

    /// The errors, in the issuing pipeline's form (`RULE_CODE: sentence`, at the FHIR path), and the
    /// `problems`.
    public var errors: [HealthCardError] { findings.filter(\.isError).map(BundleValidator.Findings.asError) + problems }
    /// The warnings, in the same form.
    public var warnings: [HealthCardError] { findings.filter { !$0.isError }.map(BundleValidator.Findings.asError) }
}

/// A card made from one Bundle.
public struct IssuedCard: Sendable {
    /// The minified payload JSON that was compressed and signed.
    public var payload: [UInt8]
    public var jws: JWS
    public var warnings: [HealthCardError]

    /// The `.smart-health-card` file: `{"verifiableCredential":["<jws>"]}`, no whitespace, no final newline.
    public var fileBytes: [UInt8] {
        // A JWS this issuer signed is base64url and dots, which JSON writes as they are: the file is the
        // text around it (the same bytes `JSONWriter.minified` writes, without building a value first).
        let compact = jws.compact.utf8
        func plainByte(_ byte: UInt8) -> Bool { RID.isBase64URLCharacter(byte) || byte == UInt8(ascii: ".") }
        let plain = compact.withContiguousStorageIfAvailable { $0.allSatisfy(plainByte) } ?? compact.allSatisfy(plainByte)
        guard plain else {
            return JSONWriter.minified(.object(["verifiableCredential": .array([.string(jws.compact)])]))
        }
        return Array(#"{"verifiableCredential":[""#.utf8) + compact + Array(#""]}"#.utf8)
    }
}

/// The issuing pipeline for one worker: checked Bundle (`CheckedBundle`: minimized, validated) → payload
/// and its bytes (`CardPayload`) → raw DEFLATE → ES256 JWS → verify again (its QR images: `CardImages`). It signs only a
/// `CardPayload` it made itself from a `CheckedBundle` with no error, with settings checked when it was
/// made (`IssueSettings.validate`), so it cannot be made to sign a card `verify` rejects. It owns one zlib
/// stream and one signing context, reused for every card; make one per thread.
public final class CardIssuer {
    public let settings: IssueSettings
    private var signer: any JWSSigner
    private let deflater: RawDeflater
    /// The signing key's kid (RFC 7638 thumbprint).
    public let kid: String
    /// Reads back every signature with the public key (the self-check), one OpenSSL context for all cards.
    private let verifier: ES256Verifier
    /// The time Bundles are judged at (dates in the future) and the settings were checked against.
    public let clock: any WallClock

    /// - Parameter clock: the time the settings are checked against (`nbf` not in the future, `exp` not
    ///   past) and `issue(bundle:)` judges dates at.
    /// - Throws: `HealthCardError(.configuration)` for settings whose cards verifiers would reject
    ///   (`IssueSettings.validate`), `HealthCardError(.key)` when the key cannot sign.
    public init(signer: any JWSSigner, settings: IssueSettings, clock: any WallClock) throws {
        try settings.validate(now: clock.nowSeconds())
        self.clock = clock
        self.signer = signer
        self.settings = settings
        self.kid = JWK(key: signer.publicKey).kid
        self.verifier = try ES256Verifier(key: signer.publicKey)
        self.deflater = try RawDeflater(level: settings.deflateLevel)
    }

    /// The payload for a checked Bundle: `iss`, `nbf` and `exp` from the settings, `vc.type` by the type
    /// policy, `vc.rid` when a revocation secret is set and `patientID` is given, and its bytes.
    /// - Parameter patientID: the issuer's id of the person, for `vc.rid` (ignored without a rid secret).
    public func payload(for checked: CheckedBundle, patientID: String? = nil) -> CardPayload {
        let types = Payload.types(for: checked.bundle, policy: settings.typePolicy, isCOVID19: Terminology.isCOVID19Code)
        var rid: String?
        var problems: [HealthCardError] = []
        if let secret = settings.ridSecret, let patientID {
            // A failed HMAC is an error for this card, never an empty or made-up rid.
            do { rid = try RID.derive(secret: secret, kid: kid, patientID: patientID) } catch { problems.append(error) }
        }
        let payload = Payload(issuer: settings.issuer, notBefore: String(settings.notBefore), expires: settings.expires,
                              types: types, rid: rid, fhirBundle: checked.bundle)
        return CardPayload(checked: checked, payload: payload, notBefore: settings.notBefore, kid: kid, problems: problems)
    }

    /// Issues one card from an input Bundle: minimized and checked (`CheckedBundle.minimizing`), then
    /// as `issue(_:)`.
    /// - Throws: `HealthCardError` (`all`: every reason the Bundle cannot become a card (minimization,
    ///   validation, size) or a `.crypto`/`.compression` failure.
    /// - Parameter patientID: the issuer's id of the person, for `vc.rid` (ignored without a rid secret).
    public func issue(bundle: JSONValue, patientID: String? = nil) throws(HealthCardError) -> IssuedCard {
        try issue(payload(for: try CheckedBundle.minimizing(bundle, now: clock.nowSeconds()), patientID: patientID))
    }

    /// Issues one card from a payload this issuer made (`payload(for:patientID:)`): refused when any of
    /// its findings is an error; else its bytes are raw-DEFLATEd, signed and read back as a verifier reads
    /// them. Its QR symbols and images are made by `CardImages` (HealthCardsQR).
    /// - Throws: `HealthCardError` (`all`: every error finding, with its code and FHIR path),
    ///   `.configuration` for a payload another issuer made, or a `.crypto`/`.compression` failure.
    public func issue(_ card: CardPayload) throws(HealthCardError) -> IssuedCard {
        guard card.kid == kid else {
            throw HealthCardError(.configuration, "the payload was made by the issuer of kid \(card.kid), not this one (\(kid)); make it with this issuer's payload(for:)")
        }
        let errors = card.errors
        if !errors.isEmpty { throw HealthCardError(all: errors) }
        do {
            let jws = try sign(card.bytes)
            try checkRoundTrip(jws, payload: card.bytes)
            return IssuedCard(payload: card.bytes, jws: jws, warnings: card.warnings)
        } catch let error as HealthCardError {
            throw error
        } catch {
            throw HealthCardError(.crypto, "\(error)")
        }
    }

    /// The refusal of a payload larger than verifiers inflate (`RawInflate.maxOutput`, 4 MiB): it is refused
    /// before it is compressed or signed, saying its size and the limit; nil for a payload that fits.
    static func oversized(payloadBytes: Int) -> HealthCardError? {
        guard payloadBytes > RawInflate.maxOutput else { return nil }
        let megabytes = (Double(payloadBytes) / 1_048_576 * 10).rounded() / 10
        return BundleValidator.Findings.asError(
            Finding(
                .deflateTooLarge,
                "the payload is \(megabytes) MiB (\(payloadBytes) bytes), over the \(RawInflate.maxOutput / 1_048_576) MiB "
                    + "(\(RawInflate.maxOutput) bytes) a verifier inflates: verify refuses it (DEFLATE_TOO_LARGE), and no QR "
                    + "code could hold it (one holds \(QRNumeric.maxSingleJWSCharacters) JWS characters, a chunked set "
                    + "\(QRNumeric.maxChunkCount) of \(QRNumeric.maxChunkCharacters)). Nothing was signed; look for a value "
                    + "far too long in the record (a health card is a few kB)",
                at: .init(path: "payload")))
    }

    /// Compresses and signs payload bytes. Internal: the library signs only a `CardPayload` it checked.
    func sign(_ payloadBytes: [UInt8]) throws -> JWS {
        let deflated = try deflater.deflate(payloadBytes)
        return try JWS.sign(deflatedPayload: deflated, kid: kid, signer: &signer)
    }

    /// Reads the card back as a verifier would: header, raw inflate, payload bytes, signature.
    /// - Throws: `HealthCardError(.crypto)` when anything differs; a card that fails is never written.
    func checkRoundTrip(_ jws: JWS, payload: [UInt8]) throws {
        let parts = try jws.parts()
        guard parts.header == JWS.headerBytes(kid: kid) else {
            throw HealthCardError(.crypto, "self-check failed: the JWS header does not read back")
        }
        guard let inflated = try? RawInflate.inflate(parts.payload), inflated == payload else {
            throw HealthCardError(.compression, "self-check failed: the payload does not inflate back to what was signed")
        }
        guard parts.signature.count == 64, verifier.verify(signature: parts.signature, message: parts.signingInput) else {
            throw HealthCardError(.crypto, "self-check failed: the signature does not verify with the signing key's public key")
        }
    }
}

extension CardIssuer {
    /// Reads an existing `.smart-health-card` and tells whether it is the card this issuer makes from
    /// `card`: one JWS, signed with this issuer's key (same kid, signature verifies), whose inflated
    /// payload equals `card.bytes` except for the `nbf` number (the issuance time, which differs between
    /// runs). This is how a resumed or repeated run knows a record is already issued.
    /// - Returns: the card's JWS when it matches; nil when the file is not such a card (unreadable,
    ///   torn by a crash, another key, another record, other options).
    public func existingCard(_ fileBytes: [UInt8], matches card: CardPayload) -> JWS? {
        signedCard(in: fileBytes, where: { Self.equalIgnoringNotBefore($0, card.bytes) })?.jws
    }

    /// The one JWS of a `.smart-health-card` file and its inflated payload, when the file holds exactly one, its
    /// header is this issuer's (`kid`), `accept` takes its payload, and its signature verifies with this key
    /// (checked last, the costliest test); nil otherwise.
    package func signedCard(in fileBytes: [UInt8], where accept: ([UInt8]) -> Bool) -> (jws: JWS, payload: [UInt8])? {
        guard let file = try? JSONParser.parse(fileBytes), let list = file["verifiableCredential"]?.arrayValue,
            list.count == 1, let compact = list[0].stringValue
        else { return nil }
        let jws = JWS(compact: compact)
        guard let parts = try? jws.parts(), parts.header == JWS.headerBytes(kid: kid),
            let inflated = try? RawInflate.inflate(parts.payload), accept(inflated),
            verifier.verify(signature: parts.signature, message: parts.signingInput)
        else { return nil }
        return (jws, inflated)
    }

    /// The `nbf` of a card's payload in whole seconds, or nil when it is missing or not a number within
    /// ±10^15 seconds (`DateRules.wholeSeconds`, so no conversion traps).
    package static func notBefore(of payload: JSONValue) -> Int64? {
        guard let lexeme = payload["nbf"]?.numberLexeme else { return nil }
        return Int64(lexeme) ?? Double(lexeme).flatMap(DateRules.wholeSeconds)
    }

    /// Compares two minified payloads, skipping the number after the first `,"nbf":`. A raw `"`
    /// never occurs inside a JSON string, so that sequence is the top-level `nbf` member.
    package static func equalIgnoringNotBefore(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let marker = Array(#","nbf":"#.utf8)
        func split(_ bytes: [UInt8]) -> (head: ArraySlice<UInt8>, tail: ArraySlice<UInt8>)? {
            guard bytes.count > marker.count else { return nil }
            for i in 0...(bytes.count - marker.count) where bytes[i] == marker[0] && bytes[i..<i + marker.count].elementsEqual(marker) {
                var j = i + marker.count
                while j < bytes.count, (bytes[j] >= 0x30 && bytes[j] <= 0x39) || bytes[j] == 0x2E || bytes[j] == 0x2D
                    || bytes[j] == 0x2B || bytes[j] == 0x65 || bytes[j] == 0x45 { j += 1 }
                return (bytes[..<(i + marker.count)], bytes[j...])
            }
            return nil
        }
        guard let x = split(a), let y = split(b) else { return a == b }
        return x.head.elementsEqual(y.head) && x.tail.elementsEqual(y.tail)
    }
}
