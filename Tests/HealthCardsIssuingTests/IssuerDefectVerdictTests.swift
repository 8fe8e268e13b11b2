import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsTestSupport

/// Genuine cards that large EHR platforms issue carry issuer-side defects the reference validator and common
/// inflaters tolerate: bytes after the end of the raw DEFLATE stream (pako and zlib's raw inflate stop at the
/// end), and `Coding.display` in a lab result (the reference validator only warns). `verify` called such a card
/// INVALID and exited 1 though its signature, issuer and revocation all checked out. Now each is a warning naming
/// the issuer's defect (its own code), and the signature, the issuer and the revocation list still decide; what
/// `issue` writes stays strict. The cards are made here and signed with a test key whose key set is given, so their
/// signatures verify.
@Suite struct IssuerDefectVerdictTests {
    /// The forge's lab Bundle with the display strings an EHR leaves in (LOINC and SNOMED CT).
    static func labBundleWithDisplay() -> JSONValue {
        TestBundles.labBundle { observation in
            observation["code"] = .object([
                "coding": [
                    .object([
                        "system": .string(Terminology.loinc), "code": "94558-4",
                        "display": "SARS-CoV-2 (COVID-19) Ag [Presence] in Respiratory specimen by Rapid immunoassay",
                    ])
                ]
            ])
            observation["valueCodeableConcept"] = .object([
                "coding": [.object(["system": .string(Terminology.snomedCT), "code": "260415000", "display": "Not detected"])]
            ])
        }
    }

    /// `verify --json --jwks ISSUER=SITE --now` of `paths`: the exit status and the credentials' reports.
    static func verify(_ forge: VerifyForge, _ paths: [String], site: String? = nil) throws -> (Int32, [JSONValue]) {
        let keySet = try site ?? forge.writeKeySet()
        let run = try TestSupport.cli(
            ["verify", "--json", "--jwks", "\(VerifyForge.issuer)=\(keySet)", "--now", "\(VerifyForge.now)"] + paths)
        let json = try JSONParser.parse(run.stdout)
        return (run.status, json["credentials"]?.arrayValue ?? [])
    }

    static func finding(_ card: JSONValue, _ code: String) -> JSONValue? {
        card["findings"]?.arrayValue?.first { $0["code"]?.stringValue == code }
    }

    @Test func trailingBytesAfterTheDeflateStreamAreTheIssuersDefect() throws {
        let forge = try VerifyForge()
        let payload = JSONWriter.minified(.object(VerifyForge.claims()))
        let eight: [UInt8] = [0x00, 0x00, 0xFF, 0xFF, 0x03, 0x00, 0x00, 0x00]
        let jws = try forge.jws(payload: payload, compress: { try RawDeflater().deflate($0) + eight })
        let path = try forge.card(jws)
        let (status, cards) = try Self.verify(forge, [path])
        #expect(status == 0, "\(cards)")
        let card = try #require(cards.first)
        #expect(card["valid"] == .bool(true) && card["verified"] == .bool(true) && card["signature"] == "verified", "\(card)")
        let finding = try #require(Self.finding(card, "DEFLATE_TRAILING_DATA"), "\(card)")
        #expect(finding["severity"] == "warning")
        let message = finding["message"]?.stringValue ?? ""
        #expect(message.contains("8 bytes after the end of its raw DEFLATE stream") && message.contains("issuer"), "\(message)")
        // The card was read, up to the end of its stream: what it says is checked as usual.
        #expect(card["payload"]?["iss"] == .string(VerifyForge.issuer))
        #expect(card["profile"] == "vaccination")

        // The signature still decides: the same card with one bit of its signature flipped is INVALID.
        let forged = try forge.card(
            try forge.jws(payload: payload, compress: { try RawDeflater().deflate($0) + eight }, signature: { sig in
                var s = sig
                s[7] ^= 0x01
                return s
            }), "forged.smart-health-card")
        let (forgedStatus, forgedCards) = try Self.verify(forge, [forged])
        #expect(forgedStatus == 1)
        #expect(forgedCards.first.flatMap { Self.finding($0, "SIG_INVALID") } != nil, "\(forgedCards)")
        // And so does the issuer: the same card checked with another issuer's key set is not verified.
        let other = try VerifyForge()
        let (otherStatus, otherCards) = try Self.verify(forge, [path], site: try other.writeKeySet())
        #expect(otherStatus == 1 && otherCards.first?["verified"] == .bool(false), "\(otherCards)")

        // A payload that does not end as one stream is still no card.
        let cut = try forge.card(
            try forge.jws(payload: payload, compress: { Array(try RawDeflater().deflate($0).dropLast(4)) }), "cut.smart-health-card")
        let (cutStatus, cutCards) = try Self.verify(forge, [cut])
        #expect(cutStatus == 1 && cutCards.first.flatMap { Self.finding($0, "DEFLATE_INVALID") }?["severity"] == "error")
    }

    @Test func codingDisplayInALabResultIsTheIssuersDefect() throws {
        let forge = try VerifyForge()
        let path = try forge.card(try forge.jws(claims: VerifyForge.claims(bundle: Self.labBundleWithDisplay())))
        let (status, cards) = try Self.verify(forge, [path])
        #expect(status == 0, "\(cards)")
        let card = try #require(cards.first)
        #expect(card["verified"] == .bool(true) && card["profile"] == "lab", "\(card)")
        let displays = card["findings"]?.arrayValue?.filter { $0["code"] == "MIN_CODING_DISPLAY" } ?? []
        #expect(displays.count == 2, "\(card)")
        #expect(displays.allSatisfy { $0["severity"] == "warning" && $0["message"]?.stringValue?.contains("issuer") == true })
        #expect(displays.compactMap { $0["path"]?.stringValue }.sorted() == [
            "Bundle.entry[1].resource.code.coding[0].display",
            "Bundle.entry[1].resource.valueCodeableConcept.coding[0].display",
        ])

        // The revocation list still decides: the same card, its rid revoked, is REVOKED.
        var claims = VerifyForge.claims(bundle: Self.labBundleWithDisplay())
        var vc = claims["vc"]!.objectValue!
        vc["rid"] = "MDEyMzQ1Njc4OWFi"
        claims["vc"] = .object(vc)
        let revokedPath = try forge.card(try forge.jws(claims: claims), "revoked.smart-health-card")
        var jwk = JWK(key: forge.key).json.objectValue!
        jwk["crlVersion"] = .integer(1)
        let site = try forge.writeKeySet([.object(jwk)])
        _ = try forge.write(
            JSONWriter.minified(.object(["kid": .string(forge.kid), "method": "rid", "ctr": .integer(1), "rids": ["MDEyMzQ1Njc4OWFi"]])),
            "site/.well-known/crl/\(forge.kid).json")
        let (revokedStatus, revokedCards) = try Self.verify(forge, [revokedPath], site: site)
        #expect(revokedStatus == 1)
        #expect(revokedCards.first.flatMap { Self.finding($0, "REVOKED") }?["severity"] == "error", "\(revokedCards)")

        // What the issuer writes stays strict: the same rule is an error when issuing.
        let issuing = BundleValidator.validate(Self.labBundleWithDisplay(), now: VerifyForge.now, purpose: .issuing).all
        #expect(issuing.filter { $0.code == .minCodingDisplay }.allSatisfy { $0.severity == .error })
        #expect(issuing.filter { $0.code == .minCodingDisplay }.count == 2)
    }
}
