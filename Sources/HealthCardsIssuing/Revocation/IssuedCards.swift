import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// What the reports of `issue` runs (`OUT/report.ndjson`) say was issued: `revoke` checks ids, rids
/// and the rid secret against them, and `site` counts the cards of a key it is asked to drop.
///
/// A report line of an issued record carries its `kid`, and its `rid` and `ridFrom` (the normalized
/// id the rid was derived from) when the card has one; never the rid secret.
public struct IssuedCards: Sendable {
    /// One issued card as a report line describes it.
    public struct Card: Sendable, Equatable {
        /// `report.ndjson:line`.
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

    /// The report files read.
    public let reports: [String]
    /// Every issued card they list, in order.
    public private(set) var cards: [Card] = []

    /// Reads report files; lines of rejected records are skipped, except those rejected because the site's
    /// list already revokes their rid (`"revoked": true`, `issuedHere` false).
    /// - Throws: `HealthCardError(.configuration)` for a file that cannot be read, or a line that is not a report
    ///   line (naming `file:line`): a wrong file must not pass as "nothing issued".
    public init(reports: [String]) throws {
        self.reports = reports
        for path in reports {
            // Read a line at a time: the report of a large run is larger than any file read whole.
            let lines: LineReader
            do { lines = try LineReader(path: path, maxLineBytes: InputBudget.reportLineBytes) } catch let error as HealthCardError {
                throw HealthCardError(.configuration, "\(Setting.report): \(error.text)")
            }
            while let next = try lines.next() {
                let number = next.number
                guard let line = next.bytes else {
                    throw HealthCardError(
                        .configuration,
                        "\(Setting.report) \(path) line \(number) is longer than \(InputBudget.reportLineBytes) bytes, the most a "
                            + "report line may be (see docs/verify.md, \"Budgets\"); give the report.ndjson that "
                            + "`\(Command.issue)` wrote")
                }
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continue }
                guard let json = try? JSONParser.parse(line), let status = json["status"]?.stringValue,
                    json["source"]?.stringValue != nil
                else {
                    throw HealthCardError(
                        .configuration,
                        "\(Setting.report) \(path) line \(number) is not a line of an issue report (report.ndjson); "
                            + "give the report.ndjson that `\(Command.issue)` wrote")
                }
                let revoked = json["revoked"] == .bool(true)
                guard status == "issued" || revoked else { continue }
                cards.append(
                    Card(
                        place: "\(path):\(number)", id: json["id"]?.stringValue, kid: json["kid"]?.stringValue,
                        rid: json["rid"]?.stringValue, ridFrom: json["ridFrom"]?.stringValue, issuedHere: !revoked))
            }
        }
    }

    /// Number of cards signed by `kid`.
    public func count(kid: String) -> Int { cards.reduce(0) { $0 + ($1.kid == kid && $1.issuedHere ? 1 : 0) } }

    /// Cards whose rid was derived from `ridFrom` (a normalized id).
    public func cards(ridFrom: String) -> [Card] { cards.filter { $0.ridFrom == ridFrom } }

    /// Cards with `rid`.
    public func cards(rid: String) -> [Card] { cards.filter { $0.rid == rid } }

    /// Cards of the record with id `id`.
    public func cards(id: String) -> [Card] { cards.filter { $0.id == id } }
}
