import HealthCardsCore
import HealthCardsVerify

/// What the reports of `issue` runs (`OUT/report.ndjson`) and their issuance logs (`OUT/issuance-log.ndjson`,
/// `IssuanceLog`) say was issued: `revoke` checks ids, rids and the rid secret against them, and `site` counts the
/// cards of a key it is asked to drop.
///
/// A report line of an issued record carries its `kid`, and its `rid` and `ridFrom` (the normalized
/// id the rid was derived from) when the card has one; never the rid secret.
///
/// Each path given is read as what it is: an issuance log, a report (and then the issuance log beside it too,
/// when the output folder has one: a later run replaced the report of the runs before it, but the log kept them,
/// whichever key signed their cards), or an output folder (its log, or its report when it has none). A card
/// reported by several of them (the report and the log, or runs that found it already issued) is listed once.
public struct IssuedCards: Sendable {
    /// One issued card as a report line describes it.
    public struct Card: Sendable, Equatable {
        /// `report.ndjson:line` (or `issuance-log.ndjson:line`).
        public var place: String
        /// The record's id (CSV patient id, or `<file stem>-<n>` for Bundle input).
        public var id: String?
        public var kid: String?
        public var rid: String?
        public var ridFrom: String?
        /// False for a rejected record whose rid the site's list already revoked (`"revoked": true`): its cards
        /// were issued by earlier runs, whose reports may be gone; it counts for revocation checks only.
        public var issuedHere = true
    }

    /// Which cards are kept in memory: the reports of years of runs may list millions.
    public enum Wanted: Sendable {
        /// Every card.
        case all
        /// Only the cards of these ids (record ids or rid ids, `ridFrom`) and rids; `count(kid:)` still counts all.
        case only(ids: Set<String>, rids: Set<String>)
        /// No card: only `count(kid:)`.
        case countsOnly
    }

    /// The files read.
    public private(set) var reports: [String] = []
    /// Every issued card they list that `Wanted` keeps, in order.
    public private(set) var cards: [Card] = []
    /// Per kid, the distinct cards (by record id) its issued lines name.
    private var counted: [String: Set<Int>] = [:]

    /// Reads report files, issuance logs and output folders; lines of rejected records are skipped, except those
    /// rejected because the site's list already revokes their rid (`"revoked": true`, `issuedHere` false, once for
    /// the signing key and once for the key whose list revokes them, `"revokedBy"`).
    /// - Throws: `HealthCardError(.configuration)` for a file that cannot be read, or a line that is not a report
    ///   line (naming `file:line`): a wrong file must not pass as "nothing issued".
    public init(reports paths: [String], keeping wanted: Wanted = .all) throws {
        var seen = Set<String>()
        var unique = Set<Int>()
        for path in paths {
            for (file, isLog) in try Self.files(for: path) {
                guard seen.insert(FileIO.identity(file) ?? file).inserted else { continue }
                reports.append(file)
                func take(_ json: JSONValue, place: String) {
                    for card in Self.cards(of: json, place: place) {
                        var hasher = Hasher()
                        hasher.combine(card.kid)
                        hasher.combine(card.id)
                        hasher.combine(card.rid)
                        hasher.combine(card.ridFrom)
                        hasher.combine(card.issuedHere)
                        guard unique.insert(hasher.finalize()).inserted else { continue }
                        if card.issuedHere, let kid = card.kid {
                            var idHash = Hasher()
                            idHash.combine(card.id)
                            counted[kid, default: []].insert(idHash.finalize())
                        }
                        switch wanted {
                        case .all: cards.append(card)
                        case .only(let ids, let rids):
                            if card.id.map(ids.contains) == true || card.ridFrom.map(ids.contains) == true
                                || card.rid.map(rids.contains) == true
                            {
                                cards.append(card)
                            }
                        case .countsOnly: break
                        }
                    }
                }
                if isLog {
                    try FileIssuanceLog(path: file).forEachLine { take($0.reportLine, place: $0.place) }
                } else {
                    try Self.readReport(file) { take($0, place: $1) }
                }
            }
        }
    }

    /// The files to read for one `--report` argument, and whether each is an issuance log.
    static func files(for path: String) throws -> [(String, Bool)] {
        if FileIO.isDirectory(path) {
            let log = path + "/" + FileIssuanceLog.fileName
            if FileIO.isRegularFile(log) { return [(log, true)] }
            let report = path + "/report.ndjson"
            guard FileIO.isRegularFile(report) else {
                throw HealthCardError(
                    .configuration,
                    "report \(path) is a folder without a report.ndjson or \(FileIssuanceLog.fileName); give the "
                        + "output folder of an issue run, or its report.ndjson"
                ).about("report")
            }
            return [(report, false)]
        }
        guard FileIO.isRegularFile(path) else {
            throw HealthCardError(.configuration, "report \(path) \(FileKind.of(path).phrase); give the report.ndjson that an issue run wrote")
                .about("report")
        }
        if FileIssuanceLog.looksLikeLog(path) { return [(path, true)] }
        let beside = FileIO.parent(of: path) + "/" + FileIssuanceLog.fileName
        return FileIO.isRegularFile(beside) ? [(path, false), (beside, true)] : [(path, false)]
    }

    /// Calls `body` with each line of the report at `path` and its `file:line`.
    private static func readReport(_ path: String, _ body: (JSONValue, String) -> Void) throws {
        // Read a line at a time: the report of a large run is larger than any file read whole.
        let lines: LineReader
        do { lines = try LineReader(path: path, maxLineBytes: InputBudget.reportLineBytes) } catch let error as HealthCardError {
            throw HealthCardError(.configuration, "report: \(error.text)").about("report")
        }
        while let next = try lines.next() {
            let number = next.number
            guard let line = next.bytes else {
                throw HealthCardError(
                    .configuration,
                    "report \(path) line \(number) is longer than \(InputBudget.reportLineBytes) bytes, the most a "
                        + "report line may be (see docs/verify.md, \"Budgets\"); give the report.ndjson that "
                        + "an issue run wrote"
                ).about("report")
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
            guard let json = try? JSONParser.parse(line), json["status"]?.stringValue != nil,
                json["source"]?.stringValue != nil
            else {
                throw HealthCardError(
                    .configuration,
                    "report \(path) line \(number) is not a line of an issue report (report.ndjson); "
                        + "give the report.ndjson that an issue run wrote"
                ).about("report")
            }
            body(json, "\(path):\(number)")
        }
    }

    /// The cards one report line names: its own, and for a record refused because a list revokes its person, the
    /// person under the key of that list.
    private static func cards(of json: JSONValue, place: String) -> [Card] {
        let revoked = json["revoked"] == .bool(true)
        guard json["status"]?.stringValue == "issued" || revoked else { return [] }
        let ridFrom = json["ridFrom"]?.stringValue
        var cards = [
            Card(
                place: place, id: json["id"]?.stringValue, kid: json["kid"]?.stringValue, rid: json["rid"]?.stringValue,
                ridFrom: ridFrom, issuedHere: !revoked)
        ]
        if revoked, let by = json["revokedBy"], let kid = by["kid"]?.stringValue, let rid = by["rid"]?.stringValue,
            kid != cards[0].kid
        {
            cards.append(Card(place: place, id: json["id"]?.stringValue, kid: kid, rid: rid, ridFrom: ridFrom, issuedHere: false))
        }
        return cards
    }

    /// Number of cards signed by `kid` (distinct records, however many runs reported them).
    public func count(kid: String) -> Int { counted[kid]?.count ?? 0 }

    /// Cards whose rid was derived from `ridFrom` (a normalized id).
    public func cards(ridFrom: String) -> [Card] { cards.filter { $0.ridFrom == ridFrom } }

    /// Cards with `rid`.
    public func cards(rid: String) -> [Card] { cards.filter { $0.rid == rid } }

    /// Cards of the record with id `id`.
    public func cards(id: String) -> [Card] { cards.filter { $0.id == id } }
}
