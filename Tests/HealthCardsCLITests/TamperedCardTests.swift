import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures
import HealthCardsTestSupport

/// A card changed after it was signed, one character at a time in its header, payload or signature, is
/// reported as what it is: a signature that does not verify (or a kid no key has), never as a key of
/// another issuer. When the payload cannot be read the issuer is unknown, so the key the kid names judges
/// the signature. Through the real CLI, with the site of the card's issuer (bound by its record) alone and
/// beside another issuer's site.
@Suite struct TamperedCardTests {
    static let other = "https://other.example.org"

    /// The JWS of an issued card, and the two sites.
    static func issued() throws -> (jws: String, dir: URL, site: String, otherSite: String) {
        let dir = try TestSupport.tempDir("tamper")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir).path
        let otherKey = try SiteTestSupport.keygen("other.pem", in: dir).path
        let site = dir.appendingPathComponent("site").path
        let otherSite = dir.appendingPathComponent("other-site").path
        try SiteTestSupport.cli(["site", "--out", site, "--issuer", SiteTestSupport.issuer, key])
        try SiteTestSupport.cli(["site", "--out", otherSite, "--issuer", Self.other, otherKey])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key, out: out)
        return (try SiteTestSupport.jws(in: out, id: "P-1001"), dir, site, otherSite)
    }

    /// `jws` with the character at `offset` of part `part` (0 header, 1 payload, 2 signature) replaced by
    /// another base64url character.
    static func tampered(_ jws: String, part: Int, offset: Int) -> String {
        var parts = jws.split(separator: ".").map { Array($0) }
        let old = parts[part][offset]
        parts[part][offset] = old == "A" ? "B" : (old == "B" ? "C" : "A")
        return parts.map { String($0) }.joined(separator: ".")
    }

    @Test func oneCharacterChangesAreSignatureFailures() throws {
        let (jws, dir, site, otherSite) = try Self.issued()
        let lengths = jws.split(separator: ".").map(\.count)
        var cases: [(part: Int, offset: Int)] = []
        for part in 0..<3 {
            // Not the last character, whose spare bits would make the part not base64url at all.
            for offset in [2, 7, lengths[part] / 3, lengths[part] / 2, lengths[part] - 6] {
                cases.append((part, offset))
            }
        }
        var cards: [String] = []
        for (i, c) in cases.enumerated() {
            let text = Self.tampered(jws, part: c.part, offset: c.offset)
            cards.append(
                try TestSupport.write(#"{"verifiableCredential":["\#(text)"]}"#, to: "t\(i).smart-health-card", in: dir)
            )
        }
        for keySets in [[site], [site, otherSite], ["\(SiteTestSupport.issuer)=\(site)/.well-known/jwks.json"]] {
            let run = try TestSupport.cli(
                ["verify", "--json", "--now", "1800000000"] + keySets.flatMap { ["--jwks", $0] } + cards)
            #expect(run.status == 1)
            let reports = try JSONParser.parse(Array(run.stdout.utf8))["credentials"]?.arrayValue ?? []
            let byFile = Dictionary(
                reports.compactMap { r in r["file"]?.stringValue.map { ($0, r) } }, uniquingKeysWith: { a, _ in a })
            for (i, c) in cases.enumerated() {
                let report = try #require(byFile[cards[i]], "no report for case \(c)")
                let findings = report["findings"]?.arrayValue ?? []
                let codes = Set(findings.compactMap { $0["code"]?.stringValue })
                let place = "part \(c.part) offset \(c.offset), --jwks \(keySets): \(codes)"
                #expect(report["valid"] == .bool(false), "\(place)")
                #expect(report["signature"]?.stringValue == "failed", "\(place)")
                #expect(!codes.contains("KEY_NOT_FROM_ISSUER"), "\(place)")
                #expect(!codes.contains("SIG_NOT_CHECKED"), "\(place)")
                if c.part == 0 {
                    #expect(!codes.isDisjoint(with: ["SIG_INVALID", "KID_UNKNOWN"]), "\(place)")
                } else {
                    #expect(codes.contains("SIG_INVALID"), "\(place)")
                }
                if c.part == 2 { #expect(codes == ["SIG_INVALID"], "\(place)") }
                for finding in findings where finding["code"]?.stringValue == "SIG_INVALID" {
                    let message = finding["message"]?.stringValue ?? ""
                    #expect(message.hasPrefix("the signature does not verify with key "), "\(message)")
                    #expect(!message.contains("names no issuer"), "\(message)")
                }
            }
        }
    }

    /// The reported case, in text: a payload changed by one character is DEFLATE_INVALID and SIG_INVALID
    /// against the key its kid names, with a message that says so.
    @Test func payloadChangeIsReportedAsSignatureInvalid() throws {
        let (jws, dir, site, _) = try Self.issued()
        let text = Self.tampered(jws, part: 1, offset: 40)
        let card = try TestSupport.write(
            #"{"verifiableCredential":["\#(text)"]}"#, to: "flip.smart-health-card", in: dir)
        let run = try TestSupport.cli(["verify", "--jwks", site, card])
        #expect(run.status == 1)
        #expect(!run.stdout.contains("KEY_NOT_FROM_ISSUER"), "\(run.stdout)")
        #expect(
            run.stdout.contains("error SIG_INVALID at signature: the signature does not verify with key "),
            "\(run.stdout)")
        #expect(run.stdout.contains("the key its kid names"), "\(run.stdout)")
    }
}
