import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// One file (or one set of QR chunks) of the fixture catalogue and what a verifier must make of it:
/// an entry of `DIR/manifest.json`.
public struct FixtureEntry: Sendable {
    /// What the independent checker (`../shared/conformance/shc_check.py`) can say about the file.
    public enum Checker: Sendable, Equatable {
        /// It judges the file, and its valid/invalid verdict is the manifest's.
        case judges
        /// It cannot judge it (what it lacks, in a sentence): its verdict is not compared.
        case cannotJudge(String)
        /// It judges the file but reaches the other verdict (`invalid` true: it rejects what `verify`
        /// accepts). Why, in a sentence: shown in the manifest so the disagreement is never hidden.
        case differs(invalid: Bool, why: String)
    }

    /// What the spec asks of a verifier given the file: a broken signature, a wrong key or a bad chunk set
    /// must be rejected; an issuer's non-conformance (a Bundle not minimized, `SHC:/` in upper case, a QR
    /// above version 22) is the issuer's fault, which a verifier may accept. `healthcards verify` reports both
    /// (its `errors` and `warnings`): it judges issuers as well as cards.
    public enum Conformance: String, Sendable, Equatable {
        /// A conforming card: a verifier must accept it.
        case valid
        /// A verifier must reject it.
        case verifierMustReject = "verifier-must-reject"
        /// It breaks a rule on issuers, not one a verifier must reject by: a verifier may accept it.
        case issuerNonconformance = "issuer-nonconformance"
    }

    /// The card or fault's name, shared by the forms of one valid card (`covid19-1-dose`).
    public var name: String
    /// The files, relative to the catalogue folder: one, or the chunks of one QR set.
    public var files: [String]
    /// What kind of file it is: `smart-health-card`, `jws`, `qr-text`, `qr-image` or `key-set`.
    public var kind: String
    /// What the card is, and for a broken one what was broken, in a sentence.
    public var description: String
    /// The pipeline stage that was replaced (nil for a valid card).
    public var stage: String?
    /// `healthcards verify` finding codes the file must get, and no others.
    public var errors: [RuleCode]
    public var warnings: [RuleCode]
    /// The reference validator's (health-cards-dev-tools) error names for this fault, where it has one.
    public var referenceValidator: [String]
    /// The key sets to verify it with (`verify --jwks`), relative to the catalogue folder.
    public var keySets: [String]
    public var checker: Checker
    /// What a verifier must make of the file (`Conformance`); for an issuer's non-conformance, why a verifier
    /// may accept it.
    public var conformance: Conformance
    public var conformanceNote: String?

    /// True when `healthcards verify` reports an error for the file (`verdict` `invalid`).
    public var invalid: Bool { !errors.isEmpty }

    public init(
        name: String, files: [String], kind: String, description: String, stage: String?, errors: [RuleCode],
        warnings: [RuleCode], referenceValidator: [String], keySets: [String], checker: Checker,
        conformance: Conformance? = nil, conformanceNote: String? = nil
    ) {
        self.name = name
        self.files = files
        self.kind = kind
        self.description = description
        self.stage = stage
        self.errors = errors
        self.warnings = warnings
        self.referenceValidator = referenceValidator
        self.keySets = keySets
        self.checker = checker
        self.conformance = conformance ?? (errors.isEmpty ? .valid : .verifierMustReject)
        self.conformanceNote = conformanceNote
    }

    /// The entry as JSON.
    public var json: JSONValue {
        var o: JSONObject = [
            "name": .string(name), "files": .array(files.map { .string($0) }), "kind": .string(kind),
            "verdict": invalid ? "invalid" : "valid", "description": .string(description),
            "stage": stage.map { .string($0) } ?? .null,
            "errors": .array(errors.map { .string($0.rawValue) }),
            "warnings": .array(warnings.map { .string($0.rawValue) }),
            "referenceValidator": referenceValidator.isEmpty ? .null : .array(referenceValidator.map { .string($0) }),
            "keySets": .array(keySets.map { .string($0) }),
            "conformance": .string(conformance.rawValue),
        ]
        if let conformanceNote { o["conformanceNote"] = .string(conformanceNote) }
        switch checker {
        case .judges: o["independentChecker"] = .object(["judges": true])
        case .cannotJudge(let why): o["independentChecker"] = .object(["judges": false, "why": .string(why)])
        case .differs(let invalid, let why):
            o["independentChecker"] = .object([
                "judges": true, "verdict": invalid ? "invalid" : "valid", "differs": .string(why),
            ])
        }
        return .object(o)
    }
}

/// `DIR/manifest.json`: how the catalogue was made and every file's expected verdict.
public struct FixtureManifest: Sendable {
    /// The value of `generator`, by which a later run recognises a catalogue folder it may replace.
    public static let generator = "healthcards fixtures"
    public static let fileName = "manifest.json"

    public var issuer: String
    public var kid: String
    /// The time every verdict holds at (`verify --now`), seconds since 1970.
    public var now: Int64
    public var seed: UInt64
    public var entries: [FixtureEntry]

    public var json: JSONValue { json(checkAdvice: nil) }

    /// The manifest as JSON; `checkAdvice` says how to check each file as the program writing it says it (nil:
    /// in words).
    public func json(checkAdvice: String?) -> JSONValue {
        .object([
            "generator": .string(Self.generator),
            "about": .string((
                "Synthetic SMART Health Cards for verifier developers: valid/ holds cards a verifier must accept, "
                    + "invalid/ cards and key sets each broken in one way, site/ the issuer's key set and revocation lists. "
                    + "Each file's conformance says what a verifier must make of it: verifier-must-reject, or "
                    + "issuer-nonconformance (the issuer broke a rule a verifier may accept the card under), or valid. "
                    + "Every verdict holds at `now`: check each file with "
                    + (checkAdvice ?? "a verifier that judges at `now` with the entry's `keySets`") + " "
                    + "run in this folder. See docs/fixtures.md.")),
            "issuer": .string(issuer), "kid": .string(kid), "now": .integer(now), "seed": .number(JSONNumber(seed)),
            "files": .array(entries.map(\.json)),
        ])
    }

    /// Pretty JSON with a final newline; `checkAdvice` as in `json(checkAdvice:)`.
    public func fileBytes(checkAdvice: String? = nil) -> [UInt8] { JSONWriter.pretty(json(checkAdvice: checkAdvice)) + [0x0A] }

    /// Reads a manifest back (tests, and `fixtures` recognising a catalogue it may replace).
    /// - Throws: `HealthCardError(.validation)` when `bytes` is not a manifest this toolkit wrote.
    public init(bytes: [UInt8]) throws {
        guard let json = try? JSONParser.parse(bytes), json["generator"]?.stringValue == Self.generator,
            let issuer = json["issuer"]?.stringValue, let kid = json["kid"]?.stringValue,
            let now = json["now"]?.numberLexeme.flatMap({ Int64($0) }),
            let seed = json["seed"]?.numberLexeme.flatMap({ UInt64($0) }),
            let files = json["files"]?.arrayValue
        else {
            throw HealthCardError(
                .validation, "not a fixture catalogue manifest (no \"generator\": \"\(Self.generator)\")")
        }
        var entries: [FixtureEntry] = []
        for item in files {
            func codes(_ key: String) throws -> [RuleCode] {
                try (item[key]?.arrayValue ?? []).map { value in
                    guard let code = value.stringValue.flatMap(RuleCode.known) else {
                        throw HealthCardError(.validation, "manifest: unknown finding code \(quoted(value))")
                    }
                    return code
                }
            }
            let checker: FixtureEntry.Checker
            let independent = item["independentChecker"]
            if independent?["judges"] == .bool(false) {
                checker = .cannotJudge(independent?["why"]?.stringValue ?? "")
            } else if let why = independent?["differs"]?.stringValue {
                checker = .differs(invalid: independent?["verdict"]?.stringValue == "invalid", why: why)
            } else {
                checker = .judges
            }
            entries.append(
                FixtureEntry(
                    name: item["name"]?.stringValue ?? "",
                    files: (item["files"]?.arrayValue ?? []).compactMap(\.stringValue),
                    kind: item["kind"]?.stringValue ?? "", description: item["description"]?.stringValue ?? "",
                    stage: item["stage"]?.stringValue, errors: try codes("errors"), warnings: try codes("warnings"),
                    referenceValidator: (item["referenceValidator"]?.arrayValue ?? []).compactMap(\.stringValue),
                    keySets: (item["keySets"]?.arrayValue ?? []).compactMap(\.stringValue), checker: checker,
                    conformance: item["conformance"]?.stringValue.flatMap(FixtureEntry.Conformance.init(rawValue:)),
                    conformanceNote: item["conformanceNote"]?.stringValue))
        }
        self.init(issuer: issuer, kid: kid, now: now, seed: seed, entries: entries)
    }

    public init(issuer: String, kid: String, now: Int64, seed: UInt64, entries: [FixtureEntry]) {
        self.issuer = issuer
        self.kid = kid
        self.now = now
        self.seed = seed
        self.entries = entries
    }
}
