import HealthCardsCore
import HealthCardsVerify

/// Dropping a key from a published key set stops every card it signed from verifying: right for a
/// compromised key, a disaster for a retired one (digest section 7: old public keys stay published as
/// long as their cards are in use). So a key set is never rewritten without a published key unless
/// the operator names its kid as dropped on purpose.
package enum KeyRetirement {
    /// Checks the kids a new key set leaves out.
    /// - Parameters:
    ///   - previous: the kids of the key set being replaced (empty when there is none).
    ///   - next: the kids of the new key set.
    ///   - dropping: the kids the operator drops on purpose (`--drop-kid`).
    ///   - keySetPath: the key set's path, for messages.
    ///   - issued: the issue reports at hand, to say how many cards each dropped key signed.
    /// - Returns: warnings (a `--drop-kid` that names no published key).
    /// - Throws: `HealthCardError(.configuration)` when a published kid is left out without `--drop-kid`, or a kid
    ///   is both given and dropped. Nothing has been written then.
    public static func check(
        previous: [String], next: [String], dropping: [String], keySetPath: String,
        issued: IssuedCards?
    ) throws -> [String] {
        for kid in dropping where next.contains(kid) {
            throw HealthCardError(
                .configuration, "key \(kid) is both given and to be dropped; give it or drop it, not both")
        }
        let missing = previous.reduce(into: [String]()) { if !next.contains($1) && !$0.contains($1) { $0.append($1) } }
        for kid in missing where !dropping.contains(kid) {
            let cards: String
            if let issued {
                let n = issued.count(kid: kid)
                cards =
                    "the reports (\(issued.reports.joined(separator: ", "))) say it signed \(n) card\(n == 1 ? "" : "s")"
            } else {
                cards = "give the issue runs' reports (OUT/report.ndjson) to count the cards it signed"
            }
            throw HealthCardError(
                .configuration,
                "key \(kid) is published in \(keySetPath) and is not among the keys given: leaving it out stops every "
                    + "card it signed from verifying (\(cards)). A retired key stays published: give it again (its "
                    + "public half is enough). Only if it is compromised, drop it on purpose by naming \(kid) among the keys to drop. "
                    + "Nothing was written")
        }
        return dropping.filter { !previous.contains($0) }.map {
            "key to drop \($0): no such key is published in \(keySetPath); nothing to drop"
        }
    }
}
