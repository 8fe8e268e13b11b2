import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsTestSupport

/// A JWS header that cannot be read (here a duplicate member, as the variant hunt's `crit-dup-member`) is
/// `JWS_HEADER_NOT_JSON`; it names no kid, so no `KID_WRONG` ("the header says kid nothing") is reported.
@Suite struct UnreadableHeaderKidTests {
    @Test func duplicateMemberHeaderIsNotAWrongKid() throws {
        let forge = try VerifyForge()
        let header = Array(#"{"zip":"DEF","alg":"ES256","kid":"\#(forge.kid)","crit":[],"crit":["exp"]}"#.utf8)
        let jws = try forge.jws(header: header, payload: JSONWriter.minified(.object(VerifyForge.claims())))
        let card = try #require(try forge.verify([try forge.card(jws)]).last)
        let codes = card.findings.map(\.code)
        #expect(codes.contains(.headerNotJSON), "\(codes)")
        #expect(!codes.contains(.kidWrong), "\(card.findings)")
        #expect(!codes.contains(.kidUnknown), "\(card.findings)")
        #expect(!card.isValid)
    }

    /// The same with several key sets and a payload without iss (the path that cannot choose a key set by issuer).
    @Test func unreadableHeaderWithoutIssuerIsNotAWrongKid() throws {
        let forge = try VerifyForge()
        let other = try forge.writeKeySet([JWK(key: try P256Key.generate()).json], site: "other")
        var claims = VerifyForge.claims()
        claims["iss"] = nil
        let jws = try forge.jws(header: Array(#"{"zip":"DEF","alg":"ES256","alg":"ES256"}"#.utf8), payload: JSONWriter.minified(.object(claims)))
        let card = try #require(try forge.verify([try forge.card(jws)], keySets: [try forge.writeKeySet(), other]).last)
        let codes = card.findings.map(\.code)
        #expect(codes.contains(.headerNotJSON), "\(codes)")
        #expect(!codes.contains(.kidWrong), "\(card.findings)")
    }
}
