import HealthCardsCore
import HealthCardsSite

extension CardIssuer {
    /// Why an existing card of this issuer (same key, signature verifies) differs from the card it would make
    /// now from `card`: its Bundle differs (`recordChanged`: the record was corrected), or only other claims
    /// do (`optionsChanged`: `iss`, `exp`, `vc.type`, `vc.rid`). Nil when the file is not such a card (another
    /// key, unreadable, torn) or is the same card. Also returns the old card's `nbf` (whole seconds).
    public func replacement(
        of fileBytes: [UInt8], by card: CardPayload
    ) -> (reason: ReportLine.Replacement, nbf: Int64?)? {
        guard let existing = signedCard(in: fileBytes, where: { !Self.equalIgnoringNotBefore($0, card.bytes) }),
            let old = try? JSONParser.parse(existing.payload)
        else { return nil }
        let oldBundle = old["vc"]?["credentialSubject"]?["fhirBundle"]
        return (oldBundle == card.payload.fhirBundle ? .optionsChanged : .recordChanged, Self.notBefore(of: old))
    }
}
