import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsTestSupport

/// A revocation list that is there but cannot be used (here a `rid.<timestamp>` with a negative timestamp, as
/// the variant hunt's `crl/site-negative`): the card's `CRL_MISSING` says the list was given but refused, and why,
/// not that it "was not given".
@Suite struct CRLRefusedMessageTests {
    /// A forge, a card's claims with a `vc.rid`, and a key set whose key publishes `crlVersion` 1.
    static func revocableCard() throws -> (forge: VerifyForge, claims: JSONObject, keySet: String) {
        let forge = try VerifyForge()
        var claims = VerifyForge.claims()
        var vc = claims["vc"]!.objectValue!
        vc["rid"] = "MKyCxh7p6uQ"
        claims["vc"] = .object(vc)
        var jwk = JWK(key: forge.key)
        jwk.crlVersion = 1
        return (forge, claims, try forge.writeKeySet([jwk.json]))
    }

    @Test func malformedListIsGivenButNotUsable() throws {
        let (forge, claims, keySet) = try Self.revocableCard()
        let crlPath = try forge.write(
            #"{"kid":"\#(forge.kid)","method":"rid","ctr":1,"rids":["MKyCxh7p6uQ.-1687450765"]}"#,
            "site/.well-known/crl/\(forge.kid).json")
        let reports = try forge.verify([try forge.card(try forge.jws(claims: claims))], keySets: [keySet])
        let invalid = try #require(reports.flatMap(\.findings).first { $0.code == .crlInvalid }, "\(reports.flatMap(\.findings))")
        #expect(invalid.location.file == crlPath)
        let card = try #require(reports.last)
        let missing = try #require(card.findings.first { $0.code == .crlMissing }, "\(card.findings)")
        #expect(!missing.message.contains("not given"), "\(missing.message)")
        #expect(missing.message.contains("was given (\(crlPath)) but could not be used: "), "\(missing.message)")
        #expect(missing.message.contains(invalid.message), "\(missing.message)")
        #expect(!card.isValid)  // the key's list has an error: KEY_SET_INVALID
    }

    /// With no list at all, the message still says it was not given.
    @Test func absentListIsNotGiven() throws {
        let (forge, claims, keySet) = try Self.revocableCard()
        let card = try #require(try forge.verify([try forge.card(try forge.jws(claims: claims))], keySets: [keySet]).last)
        let missing = try #require(card.findings.first { $0.code == .crlMissing })
        #expect(missing.message.contains("was not given"), "\(missing.message)")
    }
}
