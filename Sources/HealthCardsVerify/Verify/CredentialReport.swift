import HealthCardsCore

/// What a check found about one credential (one JWS, from a `.smart-health-card` file, a JWS text, QR text
/// or QR images), one key set, or one SMART Health Link: an immutable value (the checks make it; a client
/// reads it).
public struct CredentialReport: Sendable {
    /// Where the credential came from.
    public enum Source: String, Sendable, CaseIterable {
        case smartHealthCard = "smart-health-card"
        case jws
        case qrText = "qr-text"
        case qrImage = "qr-image"
        case keySet = "key-set"
        /// A SMART Health Link (text, text file or QR image); the cards in its file get reports of their own.
        case shlink
        /// A file that could not be read as any of the above.
        case unknown
    }

    /// Whether the signature was checked.
    public enum Signature: String, Sendable {
        case verified
        /// No key set was given, or the JWS could not be read far enough.
        case notChecked = "not-checked"
        case failed
    }

    public package(set) var source: Source
    /// The names of what was read (file paths, or the names a caller gave the bytes), in chunk order for a
    /// QR chunk set; empty when the bytes were given no name.
    public package(set) var files: [String]
    /// `files` joined with `, `: the name the readable output uses.
    public var file: String { files.joined(separator: ", ") }
    /// The file a finding on the whole credential is located at: the one file, or nil for a chunk set (its
    /// `files` say) or unnamed bytes.
    package var locationFile: String? { files.count == 1 ? files[0] : nil }
    /// 0-based index in a `.smart-health-card` file.
    public package(set) var index: Int?
    /// The compact JWS, when one was found.
    public package(set) var jws: String?
    /// The decoded JWS header.
    public package(set) var header: JSONValue?
    /// The decoded payload (JWT claims), when it inflated and parsed; for a link, its payload with the key
    /// left out.
    public package(set) var payload: JSONValue?
    /// The payload's size once inflated, in bytes (0 when it could not be inflated): what a
    /// `.smart-health-card` file's payload budget counts (`VerifyLimits.payloadBytesPerFile`).
    public package(set) var payloadBytes = 0
    /// True when `payloadBytes` was over `VerifyLimits.echoedPayloadBytes`: `json` leaves the payload out.
    public package(set) var payloadEchoOmitted = false
    /// `VerifyLimits.summaryEntries` of the check that made this report.
    package var summaryEntries = VerifyLimits().summaryEntries
    /// Bundle entries left out of `payload` after the check, when the payload was over
    /// `VerifyLimits.echoedPayloadBytes` (only the first `summaryEntries` are kept, for the summary).
    package var entriesNotKept = 0
    /// True once `limitFindings` ran: the limits apply once, when the check ends (`keepWithinLimits`).
    package var findingsLimited = false
    public package(set) var signature: Signature = .notChecked
    /// The profile whose rules judged the card's FHIR Bundle (`BundleProfile`); nil when there was none.
    public package(set) var profile: BundleProfile?
    /// QR version and error correction level of each image symbol, in chunk order.
    public package(set) var qrSymbols: [(version: Int?, errorCorrection: QRErrorCorrection?)] = []
    /// Every finding, in the order found, at most `VerifyLimits.findingsPerCode` of each rule code (the next
    /// says how many more there were).
    public package(set) var findings: [Finding] = []
    /// How many findings of each rule code were left out of `findings` by the limits (`VerifyLimits`).
    public package(set) var omittedFindings: [RuleCode: Int] = [:]
    /// Sentences about what was checked that are not findings (for a key set: its x5c chains; for a link: its
    /// url, flag, label, exp and file).
    public package(set) var notes: [String] = []
    /// For a credential whose issuer is in a trusted VCI directory: the issuer's name as the directory gives it.
    public package(set) var issuerName: String?
    /// For a key set: the issuer it is bound to (nil: not bound) and how that is known.
    public package(set) var keySetBinding: (issuer: String?, binding: KeySetBinding)?

    package init(source: Source, file: String?, index: Int? = nil) {
        self.source = source
        self.files = file.map { [$0] } ?? []
        self.index = index
    }

    package init(source: Source, files: [String], index: Int? = nil) {
        self.source = source
        self.files = files
        self.index = index
    }

    /// Errors listed in `findings`.
    public var errorCount: Int { findings.filter(\.isError).count }
    /// Warnings listed in `findings`.
    public var warningCount: Int { findings.count - errorCount }
    /// True when no finding is an error. This does not say that the signature was verified: a card whose
    /// issuer the trust store does not hold has `SIG_NOT_CHECKED`, a warning. Accept a card on `isVerified`.
    public var isValid: Bool { errorCount == 0 }
    /// True for a credential with no error whose signature verified with a key of its issuer: the one
    /// verdict on which a verifier may accept a card.
    public var isVerified: Bool { isValid && signature == .verified }
    /// For a SMART Health Link: true when its file was opened and what it holds was checked (its cards are
    /// reports of their own); false when verify only read the link's payload (`SHL_NOT_RESOLVED`: no site
    /// stood for its host; `SHL_MANIFEST_NOT_CHECKED`: a manifest, which needs a server). Nil for other sources.
    public var isLinkContentChecked: Bool? {
        guard source == .shlink else { return nil }
        return !findings.contains { $0.code == .shlNotResolved || $0.code == .shlManifestNotChecked }
    }
    /// True for a health card (not a key set, a link, or input read as none of them).
    public var isCredential: Bool { ![.keySet, .shlink, .unknown].contains(source) }

    /// The `kid` from the JWS header.
    public var kid: String? { header?["kid"]?.stringValue }

    /// `{"source","files","file","index","kid","signature","profile","valid","verified","errors","warnings","findings":[…],
    /// "payload":{…}}` (docs/verify.md gives the schema): `files` always (empty for unnamed bytes), `file` when
    /// there is exactly one; `profile`: `vaccination`, `lab`, `generic` or null; `findingsOmitted` `{CODE: N}`
    /// when the limits left findings out; `payloadOmitted` `{"bytes": N}` (and a null payload) when the payload
    /// was over `VerifyLimits.echoedPayloadBytes`. A key set has `"issuer"` (null when not bound) and `"boundBy"`
    /// (`"site-record"`, `"argument"` or null) instead of kid, signature, profile and payload, and `"notes"`
    /// when there are any; `verified` (cards only) is `isVerified`: no error and the signature verified with a key
    /// of the card's issuer, the one member to accept a card on; a link (`shlink`) has no kid, signature or profile, and its payload is the link's
    /// with the key left out; an input read as none of these (`unknown`) has neither.
    public var json: JSONValue { json(say: \.message) }

    /// `json` with the findings' messages said by `say` (a program's own wording of them).
    public func json(say: (Finding) -> String) -> JSONValue {
        var o: JSONObject = ["source": .string(source.rawValue), "files": .array(files.map { .string($0) })]
        if files.count == 1 { o["file"] = .string(files[0]) }
        if let index { o["index"] = .integer(Int64(index)) }
        if isCredential {
            o["kid"] = kid.map { .string($0) } ?? .null
            o["signature"] = .string(signature.rawValue)
            o["profile"] = profile.map { .string($0.rawValue) } ?? .null
            if let issuerName { o["issuerName"] = .string(issuerName) }
        } else if let (issuer, binding) = keySetBinding {
            o["issuer"] = issuer.map { .string($0) } ?? .null
            o["boundBy"] = binding.jsonName.map { .string($0) } ?? .null
        }
        if !qrSymbols.isEmpty {
            o["qr"] = .array(qrSymbols.map { symbol in
                .object([
                    "version": symbol.version.map { .integer(Int64($0)) } ?? .null,
                    "errorCorrection": symbol.errorCorrection.map { .string($0.rawValue) } ?? .null,
                ])
            })
        }
        o["valid"] = .bool(isValid)
        if isCredential { o["verified"] = .bool(isVerified) }
        if let checked = isLinkContentChecked { o["verified"] = .bool(isValid && checked) }
        o["errors"] = .integer(Int64(errorCount))
        o["warnings"] = .integer(Int64(warningCount))
        o["findings"] = .array(findings.map { $0.json(say: say) })
        if !omittedFindings.isEmpty {
            o["findingsOmitted"] = .object(
                JSONObject(omittedFindings.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key.rawValue, .integer(Int64($0.value))) }))
        }
        if !notes.isEmpty { o["notes"] = .array(notes.map { .string($0) }) }
        if isCredential || source == .shlink { o["payload"] = payloadEchoOmitted ? .null : payload ?? .null }
        if payloadEchoOmitted { o["payloadOmitted"] = .object(["bytes": .integer(Int64(payloadBytes))]) }
        return .object(o)
    }
}
