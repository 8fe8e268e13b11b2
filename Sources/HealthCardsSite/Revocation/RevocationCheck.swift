import HealthCardsCore
import HealthCardsVerify

/// Checks a revocation against what was issued, before anything is written.
///
/// A revocation list never shrinks and is public: an entry that revokes nothing (a mistyped id, a
/// wrong rid secret, the wrong key) stays in it for good while the card it was meant for still
/// verifies. So `revoke` looks each id or rid up in the reports of the runs that issued the cards
/// (`IssuedCards`): the id must have been issued with this key, and the rid derived now must be the
/// rid the report recorded. An id the reports do not show is refused unless the operator forces it.
public enum RevocationCheck {
    /// What the reports say about one id or rid.
    public enum Verdict: Sendable, Equatable {
        /// The reports list cards with this rid, signed by this key: their `report:line` places, and the
        /// id the rid was derived from.
        case confirmed(ridFrom: String?, places: [String])
        /// The reports do not show it; the reason says what they show instead.
        case unknown(reason: String)
    }

    /// Checks a patient id and the rid derived from it now.
    /// - Parameters:
    ///   - id: the normalized id (`PatientIdentity.normalize`).
    ///   - rid: `RID.derive(secret:kid:patientID:)` of `id` with the secret given now.
    ///   - kid: the kid of the key whose CRL is updated.
    /// - Throws: `HealthCardError(.configuration)` when the reports show this id's card signed by this key with
    ///   another rid: the rid secret is not the one the card was issued with (refused even with
    ///   `--force`, since the entry would revoke nothing).
    public static func check(id: String, rid: String, kid: String, in issued: IssuedCards) throws -> Verdict {
        let cards = issued.cards(ridFrom: id)
        guard !cards.isEmpty else {
            let records = issued.cards(id: id)
            if let card = records.first(where: { $0.ridFrom != nil }), let from = card.ridFrom {
                return .unknown(
                    reason: "\(Quote.text(id)) is the record id of a card (\(card.place)) whose rid comes from the "
                        + "Patient identifier \(Quote.text(from)); give the id \(Quote.text(from))")
            }
            if let card = records.first, card.kid == nil {
                return .unknown(
                    reason: "the report line of \(Quote.text(id)) (\(card.place)) has no kid or rid: it was written before "
                        + "healthcards recorded them, so the id cannot be checked; force the revocation if you are sure of the id, "
                        + "the secret and the key")
            }
            if let card = records.first {
                return .unknown(
                    reason: "the card of \(Quote.text(id)) (\(card.place)) has no vc.rid (issued without "
                        + "a revocation secret), so no list entry can revoke it; only dropping its key does (then reissue the others)"
                )
            }
            return .unknown(
                reason: "no card for id \(Quote.text(id)) in \(issued.reports.joined(separator: ", ")); check the id "
                    + "(the report's \"ridFrom\" is the id to give)")
        }
        let signed = cards.filter { $0.kid == kid }
        guard !signed.isEmpty else {
            let others = cards.compactMap(\.kid).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
            return .unknown(
                reason: "the cards of \(Quote.text(id)) were signed by key \(others.joined(separator: ", ")), not by "
                    + "the key given (\(kid)); give the key that signed them (one revocation per key)")
        }
        let matching = signed.filter { $0.rid == rid }
        guard !matching.isEmpty else {
            let recorded = signed.compactMap(\.rid).first ?? "none"
            throw HealthCardError(
                .configuration,
                "the card of \(Quote.text(id)) signed by \(kid) has vc.rid \(recorded) (\(signed[0].place)), but the revocation secret given gives "
                    + "\(rid): it is not the secret the card was issued with, and its entry would revoke nothing. "
                    + "Give the revocation secret the cards were issued with. Nothing was written")
        }
        return .confirmed(ridFrom: id, places: matching.map(\.place))
    }

    /// Checks a rid given as is (`revoke --rid`).
    public static func check(rid: String, kid: String, in issued: IssuedCards) -> Verdict {
        let cards = issued.cards(rid: rid)
        let signed = cards.filter { $0.kid == kid }
        guard !signed.isEmpty else {
            if let other = cards.first?.kid {
                return .unknown(reason: "the card with vc.rid \(rid) was signed by key \(other), not by the key given (\(kid))")
            }
            return .unknown(reason: "no card with vc.rid \(rid) in \(issued.reports.joined(separator: ", "))")
        }
        return .confirmed(ridFrom: signed.first?.ridFrom, places: signed.map(\.place))
    }

    /// The other keys that signed cards of the person `ridFrom`, with the places that say so: a revocation under
    /// `kid` does not reach them.
    public static func otherKeys(ridFrom: String, kid: String, in issued: IssuedCards) -> [(kid: String, places: [String])] {
        var order: [String] = []
        var places: [String: [String]] = [:]
        for card in issued.cards(ridFrom: ridFrom) where card.issuedHere {
            guard let other = card.kid, other != kid else { continue }
            if places[other] == nil { order.append(other) }
            places[other, default: []].append(card.place)
        }
        return order.map { ($0, places[$0] ?? []) }
    }
}
