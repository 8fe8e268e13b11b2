import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// One line of `OUT/report.ndjson`: what happened to one input record.
public struct ReportLine: Sendable {
    public enum Status: String, Sendable {
        case issued, rejected
    }
    /// `file:line` (CSV) or `file:index` (JSON, NDJSON).
    public var source: String
    public var id: String?
    public var status: Status
    /// True when the record's card was already in the output folder from an earlier run (the card
    /// file verifies with this key and was made from the same input record) and was left as it was.
    public var alreadyIssued = false
    public var errors: [HealthCardError]
    public var warnings: [HealthCardError]
    /// Files written for the record, relative to the output folder.
    public var files: [String]
    /// The kid of the key that signed the record's card (issued records only).
    public var kid: String?
    /// The card's `vc.rid`, when the run had a rid secret and the record a stable id (never the secret).
    public var rid: String?
    /// The normalized id `rid` was derived from (`PatientIdentity`): the CSV patient id, or the
    /// Patient's `system|value` identifier for Bundle input. What `revoke --id` takes.
    public var ridFrom: String?
    /// The profile that judged the record's Bundle; nil when no Bundle was made.
    public var profile: BundleProfile?
    /// Why a card of an earlier run signed by this key was replaced by a different one (nil: it was not).
    public enum Replacement: String, Sendable {
        /// The record's Bundle changed (a corrected record).
        case recordChanged
        /// Only the other claims changed (`iss`, `exp`, `vc.type`, `vc.rid`).
        case optionsChanged
    }
    /// Why this record's card replaced a different card of this key from an earlier run, or nil.
    public var replaced: Replacement?
    /// Why the record's card, issued, got no PDF (`PrintedCard.refusal`: a character no installed font has, a
    /// name that does not fit whole on the wallet card); nil when it was printed or nothing was to be printed.
    public var notPrinted: HealthCardError?
    /// A rejected record whose rid the site's revocation list already revokes (`issue --site`): its cards of
    /// earlier runs exist, so the line keeps `kid`, `rid` and `ridFrom`, for `revoke --narrow` to check.
    public var revokedOnRecord = false
    /// For such a record: the list entry that revokes the person, and the key and rid it revokes them under (the
    /// signing key, or another key of the site whose cards the person held).
    public var revokedBy: RevocationRefusal?
    /// In a sharded run (`BatchIssuer.shard`): the record's place in the whole batch, from 1, every shard's records
    /// counted; written last, as `"record"`, for `ShardMerge` to put the shards' lines back in one order.
    public var record: Int?

    public init(source: String, id: String?, status: Status, errors: [HealthCardError], warnings: [HealthCardError], files: [String]) {
        self.source = source
        self.id = id
        self.status = status
        self.errors = errors
        self.warnings = warnings
        self.files = files
    }

    /// `{"source":…,"id":…,"status":…,"alreadyIssued":…,"profile":…,"errors":[…],"warnings":[…],"files":[…]}`
    /// with a final newline; each error and warning is `{"code","kind","message","at"}` (`code` the rule's or
    /// the kind's general one, `at` absent when there is no location), its message said in `style`;
    /// `profile` is `vaccination`, `lab`, `generic` or null; an issued record adds
    /// `"kid"`, and `"rid"` and `"ridFrom"` when its card has a rid; a record rejected because the site's list
    /// revokes its rid adds `"revoked":true` with the same three; a card that replaced a different card of this
    /// key adds `"replaced":"recordChanged"` or `"optionsChanged"`; such a revoked record adds `"revokedBy":{"kid","rid","entry"}`
    /// (the key whose list revokes the person, their rid under it and the entry); an issued card that got no PDF adds
    /// `"notPrinted":{"code","kind":"pdf","message",…}` saying why; a line of a sharded run ends with `"record":N`.
    /// - Parameter say: an error's message as the program shows it (the library's `message` unless told).
    public func ndjson(say: (HealthCardError) -> String = \.message) -> [UInt8] {
        func issues(_ list: [HealthCardError]) -> JSONValue {
            .array(list.map { error in
                var o: JSONObject = [
                    "code": .string(error.reportedCode.rawValue), "kind": .string(error.kind.name),
                    "message": .string(say(error)),
                ]
                if !error.location.isEmpty { o["at"] = .string(error.location.description) }
                return .object(o)
            })
        }
        var object: JSONObject = [
            "source": .string(source), "id": id.map { .string($0) } ?? .null, "status": .string(status.rawValue),
            "alreadyIssued": .bool(alreadyIssued), "profile": profile.map { .string($0.rawValue) } ?? .null,
            "errors": issues(errors), "warnings": issues(warnings),
            "files": .array(files.map { .string($0) }),
        ]
        if revokedOnRecord { object["revoked"] = .bool(true) }
        if let revokedBy {
            object["revokedBy"] = .object([
                "kid": .string(revokedBy.kid), "rid": .string(revokedBy.rid), "entry": .string(revokedBy.entry.text),
            ])
        }
        if let notPrinted, case .array(let list) = issues([notPrinted]), let first = list.first {
            object["notPrinted"] = first
        }
        if let replaced { object["replaced"] = .string(replaced.rawValue) }
        if status == .issued || revokedOnRecord {
            if let kid { object["kid"] = .string(kid) }
            if let rid, let ridFrom {
                object["rid"] = .string(rid)
                object["ridFrom"] = .string(ridFrom)
            }
        }
        if let record { object["record"] = .integer(Int64(record)) }
        return JSONWriter.minified(.object(object)) + [0x0A]
    }
}

/// Counts of a finished (or stopped) run.
public struct BatchSummary: Sendable, Equatable {
    /// Records with a card, including `alreadyIssued`.
    public var issued = 0
    /// Of `issued`, the cards found from an earlier run and left in place.
    public var alreadyIssued = 0
    public var rejected = 0
    public var warnings = 0
    /// Records in the input (known after indexing); `issued + rejected` is less when the run stopped.
    public var total = 0
    /// Temporary files of earlier, killed runs that were removed at the start.
    public var leftoversRemoved = 0
    /// The signal (SIGINT 2, SIGTERM 15) that stopped the run, or 0 when it ran to the end.
    public var interruptedBy: Int32 = 0
    /// Wall time of the run, in seconds.
    public var seconds = 0.0
    /// Cards from an earlier run replaced because another key signed them (a key rotation since), by
    /// that key's kid.
    public var reissuedForKid: [String: Int] = [:]
    /// Records whose rid was already another id's or another person's in this run (`RIDRegister`).
    public var ridCollisions = 0
    /// Cards of this key from an earlier run replaced because their record changed (`Replacement.recordChanged`).
    public var replacedRecordChanged = 0
    /// Printed cards (`pdf/<id>.pdf`) and link files left holding a replaced card (warned in the report).
    public var staleOutputs = 0
    /// Cards of an earlier run moved from `cards/` (with their QR, PDF and link files) to `withdrawn/` because the
    /// person is revoked (`CARD_WITHDRAWN`).
    public var withdrawn = 0
    /// Cards issued without their PDF (`ReportLine.notPrinted`).
    public var notPrinted = 0
    /// The reasons records were rejected, one per error (`RejectedRow`), of which `rejectedSample` holds the first.
    public var rejectedRows = 0
    /// The first `BatchIssuer.rejectedSampleSize` rejected rows, for the table `issue` prints.
    public var rejectedSample: [RejectedRow] = []
    /// Records of the input left to the other shards of a sharded run (`BatchIssuer.shard`): counted in `total`.
    public var otherShards = 0

    public init() {}

    /// Cards made by this run per second of wall time (`issued - alreadyIssued` over `seconds`).
    public var cardsPerSecond: Double { seconds > 0 ? Double(issued - alreadyIssued) / seconds : 0 }
}

extension BatchSummary {
    /// The one-line summary of a run for stderr, e.g. `issued 1998 (1500 already issued, skipped),
    /// rejected 2, warnings 0 in 3.1 s (161.2 cards/s, 2 jobs); kid …; report: out/report.ndjson`.
    /// A stopped run says after the timing how far it got and that running the same command again
    /// does the rest (the time is what this run took, not what the rest will take).
    /// - Parameters: jobs: worker threads; kid: the signing key's kid; report: the report's path.
    public func summaryLine(jobs: Int, kid: String, report: String) -> String {
        func tenths(_ value: Double) -> String { String((value * 10).rounded() / 10) }
        var line = "issued \(issued)"
        if alreadyIssued > 0 { line += " (\(alreadyIssued) already issued, skipped)" }
        line += ", rejected \(rejected), warnings \(warnings) in \(tenths(seconds)) s"
        line += " (\(tenths(cardsPerSecond)) cards/s, \(jobs) job\(jobs == 1 ? "" : "s"))"
        if otherShards > 0 { line += "; \(otherShards) record\(otherShards == 1 ? "" : "s") left to the other shards" }
        if interruptedBy != 0 {
            let done = issued + rejected + otherShards
            line += "; stopped by signal \(interruptedBy) after \(done) of \(total) records. The \(total - done) not done yet"
                + " are issued by running the same command again (cards already made are kept and skipped)"
        }
        for (old, count) in reissuedForKid.sorted(by: { $0.key < $1.key }) {
            line += "; \(count) card\(count == 1 ? " was" : "s were") reissued because key \(old) had signed "
                + "\(count == 1 ? "it" : "them") and this run signs with key \(kid) (a new key)"
        }
        if replacedRecordChanged > 0 {
            line += "; \(replacedRecordChanged) card\(replacedRecordChanged == 1 ? " was" : "s were") replaced because "
                + "\(replacedRecordChanged == 1 ? "its record" : "their records") changed: the old "
                + "card\(replacedRecordChanged == 1 ? " stays" : "s stay") valid unless revoked (the cards of the person issued before "
                + "the new card's nbf: the report's warnings say which)"
        }
        if staleOutputs > 0 {
            line += "; \(staleOutputs) printed card\(staleOutputs == 1 ? "" : "s") or link\(staleOutputs == 1 ? "" : "s") "
                + "still \(staleOutputs == 1 ? "holds" : "hold") a replaced card (see the report's warnings)"
        }
        if withdrawn > 0 {
            line += "; \(withdrawn) card\(withdrawn == 1 ? "" : "s") of revoked people (and \(withdrawn == 1 ? "its" : "their") QR, PDF "
                + "and link files) moved out of cards/ to withdrawn/: not to be handed out (CARD_WITHDRAWN in the report)"
        }
        if notPrinted > 0 {
            line += "; \(notPrinted) card\(notPrinted == 1 ? " was" : "s were") issued without \(notPrinted == 1 ? "its" : "their") "
                + "printed PDF, which would not show what the card says (\"notPrinted\" in the report says why)"
        }
        if ridCollisions > 0 {
            line += "; \(ridCollisions) record\(ridCollisions == 1 ? " shares its" : "s share their") vc.rid with "
                + "another person's (see the warnings in the report)"
        }
        return line + "; kid \(kid); report: \(report)"
    }
}
