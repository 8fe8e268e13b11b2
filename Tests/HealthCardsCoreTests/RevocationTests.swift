import Testing

import HealthCardsCore
import HealthCardsTestSupport

@Suite struct RevocationTests {
    static let secret = "GWdbF5850vxNt3HhHFl0dRvvN--C6rD77obJgGjK_Zg"
    static let kid = "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"

    @Test func ridsMatchTheSpecGenerator() throws {
        let secret = try RIDSecret(text: Self.secret)
        #expect(try RID.derive(secret: secret, kid: Self.kid, patientID: "userid-00") == "MKyCxh7p6uQ")
        #expect(try RID.derive(secret: secret, kid: Self.kid, patientID: "userid-03") == "vwAjHdarZuc")
        let config = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("generator-config/issuer.hmac.private.json")))
        #expect(config["secret"]?.stringValue == Self.secret)
    }

    @Test func specCRLParsesAndRevokesByTimestamp() throws {
        let url = TestSupport.spec("issuer/.well-known/crl/\(Self.kid).json")
        let crl = try CRL(bytes: try VerifyFixtures.bytes(url), source: url.path)
        #expect(crl.kid == Self.kid && crl.ctr == 1 && crl.entries.count == 4)
        let revoked = try #require(crl.entries.first { $0.rid == "vwAjHdarZuc" })
        #expect(revoked.before == 1_687_450_765)
        // Example 03 (nbf 1687450764.658) was issued before the timestamp, so it is revoked.
        #expect(crl.revokes(rid: "vwAjHdarZuc", nbf: 1_687_450_764.658))
        #expect(!crl.revokes(rid: "vwAjHdarZuc", nbf: 1_687_450_766))
        #expect(!crl.revokes(rid: "MKyCxh7p6uQ", nbf: 0))
        let reparsed = try CRL(bytes: crl.fileBytes, source: "ours")
        #expect(reparsed == crl)
    }

    /// A timestamp suffix is digits: `rid.-1` was read as -1 (no card revoked) and `rid.+5` as 5, while the
    /// independent checker reads a suffix of anything but digits as none (every card of the rid revoked), so the
    /// two judged one card in opposite ways. Such a list is refused as malformed, as `rid.1e3` was.
    @Test func timestampSuffixesAreDigitsOnly() throws {
        for entry in ["AAAA.-1", "AAAA.+5", "AAAA. 5", "AAAA.1e3", "AAAA."] {
            let json = #"{"kid":"\#(Self.kid)","method":"rid","ctr":1,"rids":["\#(entry)"]}"#
            #expect(throws: HealthCardError.self, "\(entry)") { try CRL(bytes: Array(json.utf8), source: "crl.json") }
            do { _ = try CRL(bytes: Array(json.utf8), source: "crl.json") } catch let error as HealthCardError {
                #expect(
                    error.message == "crl.json: '\(entry)' has a timestamp suffix that is not integer seconds since 1970 "
                        + "(digits only, e.g. rid.1700000000)")
            }
        }
        let json = #"{"kid":"\#(Self.kid)","method":"rid","ctr":1,"rids":["AAAA.0","BBBB.1700000000"]}"#
        let crl = try CRL(bytes: Array(json.utf8), source: "crl.json")
        #expect(crl.entries.map(\.before) == [0, 1_700_000_000])
    }
}
