import HealthCardsCore

/// What `verify` found about one credential (one JWS, from a file, a JWS text, QR text or QR images) or
/// one key set.
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

    public var source: Source
    /// The file(s) read, joined with `, ` for a QR chunk set.
    public var file: String
    /// 0-based index in a `.smart-health-card` file.
    public var index: Int?
    /// The compact JWS, when one was found.
    public var jws: String?
    /// The decoded JWS header.
    public var header: JSONValue?
    /// The decoded payload (JWT claims), when it inflated and parsed; for a link, its payload with the key
    /// left out.
    public var payload: JSONValue?
    /// The payload's size once inflated, in bytes (0 when it could not be inflated): what a
    /// `.smart-health-card` file's payload budget counts (`InputBudget.payloadBytesPerFile`).
    public var payloadBytes = 0
    public var signature: Signature = .notChecked
    /// The profile whose rules judged the card's FHIR Bundle (`BundleProfile`); nil when there was none.
    public var profile: BundleProfile?
    /// QR version and error correction level of each image symbol, in chunk order.
    public var qrSymbols: [(version: Int?, errorCorrection: QRErrorCorrection?)] = []
    public var findings: [Finding] = []
    /// Sentences about what was checked that are not findings (for a key set: its x5c chains).
    public var notes: [String] = []
    /// For a key set: the issuer it is bound to (nil: not bound) and how that is known.
    package var keySetBinding: (issuer: String?, binding: KeyRing.KeySet.Binding)?

    public init(source: Source, file: String, index: Int? = nil) {
        self.source = source
        self.file = file
        self.index = index
    }

    public var errorCount: Int { findings.filter(\.isError).count }
    public var warningCount: Int { findings.count - errorCount }
    /// True when no finding is an error.
    public var isValid: Bool { errorCount == 0 }

    /// The `kid` from the JWS header.
    public var kid: String? { header?["kid"]?.stringValue }

    /// `{"source","file","index","kid","signature","profile","valid","errors","warnings","findings":[…],"payload":{…}}`
    /// (`profile`: `vaccination`, `lab`, `generic` or null); a key set has `"issuer"` (null when not bound)
    /// and `"boundBy"` (`"site-record"`, `"argument"` or null) instead of kid, signature, profile and
    /// payload, and `"notes"` when there are any; a link (`shlink`) has no kid, signature or profile, and its
    /// payload is the link's with the key left out.
    public var json: JSONValue { json(style: .words) }

    /// `json` with the findings' messages said in `style`.
    public func json(style: MessageStyle) -> JSONValue {
        var o: JSONObject = ["source": .string(source.rawValue), "file": .string(file)]
        if let index { o["index"] = .integer(Int64(index)) }
        if source != .keySet && source != .shlink {
            o["kid"] = kid.map { .string($0) } ?? .null
            o["signature"] = .string(signature.rawValue)
            o["profile"] = profile.map { .string($0.rawValue) } ?? .null
        } else if let (issuer, binding) = keySetBinding {
            o["issuer"] = issuer.map { .string($0) } ?? .null
            switch binding {
            case .unbound: o["boundBy"] = .null
            case .argument: o["boundBy"] = "argument"
            case .siteRecord: o["boundBy"] = "site-record"
            }
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
        o["errors"] = .integer(Int64(errorCount))
        o["warnings"] = .integer(Int64(warningCount))
        o["findings"] = .array(findings.map { $0.json(style: style) })
        if !notes.isEmpty { o["notes"] = .array(notes.map { .string($0) }) }
        if source != .keySet { o["payload"] = payload ?? .null }
        return .object(o)
    }
}
