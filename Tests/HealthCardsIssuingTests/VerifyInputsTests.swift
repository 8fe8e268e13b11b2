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

/// How `verify` reads its inputs: folders with link cycles are walked once, a final newline is not a
/// finding, and messages say what was found (DEFLATE without a zip header, needless chunking, URLs).
@Suite struct VerifyInputsTests {
    func link(_ path: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: target)
    }

    /// `ln -s . a`, a link to the parent, a two-folder cycle and a link to a card: every card once, and the
    /// walk ends.
    @Test func linkCyclesAreWalkedOnce() throws {
        let forge = try VerifyForge()
        let root = forge.dir.appendingPathComponent("cards").path
        _ = try forge.card(try forge.jws(claims: VerifyForge.claims()), "cards/one.smart-health-card")
        _ = try forge.card(try forge.jws(claims: VerifyForge.claims()), "cards/x/two.smart-health-card")
        try FileManager.default.createDirectory(atPath: root + "/y", withIntermediateDirectories: true)
        try link(root + "/a", to: ".")
        try link(root + "/x/up", to: "..")
        try link(root + "/x/to-y", to: "../y")
        try link(root + "/y/to-x", to: "../x")
        try link(root + "/y/same.smart-health-card", to: "../one.smart-health-card")
        let reports = try forge.verify([root])
        let cards = reports.filter { $0.source == .smartHealthCard }
        #expect(cards.count == 2, "\(cards.map(\.file))")
        #expect(Set(cards.map { FileIO.basename($0.file) }) == ["one.smart-health-card", "two.smart-health-card"])
        #expect(cards.allSatisfy { $0.signature == .verified && $0.isValid })
        // The same file given twice, or once directly and once inside a folder, is checked once.
        let one = root + "/one.smart-health-card"
        #expect(
            try forge.verify([one, one, root + "/a/one.smart-health-card"]).filter { $0.source == .smartHealthCard }
                .count == 1)
        // Through the command line too (no hang, one credential each).
        let run = try TestSupport.cli([
            "verify", "--jwks", try forge.writeKeySet(), "--now", String(VerifyForge.now), root,
        ])
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout.contains("2 credential(s) checked, 0 error(s)"), "\(run.stdout)")
    }

    /// One final newline (LF or CRLF) after a JWS or QR text is what editors write; anything more is still
    /// FILE_TRAILING_CHARACTERS.
    @Test func oneFinalNewlineIsNotAFinding() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let qr = try QRNumeric.text(jws: jws)
        for (i, body) in [jws, qr].enumerated() {
            for ending in ["", "\n", "\r\n"] {
                let codes = try forge.codes([try forge.write(body + ending, "ok\(i)-\(ending.utf8.count).txt")])
                #expect(codes.isEmpty, "\(i) \(Array(ending.utf8)): \(codes)")
            }
            for ending in ["\n\n", " ", " \n", "\t", "\r\n\r\n", "\n\r\n"] {
                let codes = try forge.codes([try forge.write(body + ending, "bad\(i)-\(Array(ending.utf8)).txt")])
                #expect(codes.contains("FILE_TRAILING_CHARACTERS"), "\(i) \(Array(ending.utf8)): \(codes)")
            }
            let leading = try forge.verify([try forge.write("\n" + body, "lead\(i).txt")]).flatMap(\.findings)
            #expect(
                leading.contains { $0.code == .fileTrailingCharacters && $0.message.contains("leading whitespace") })
        }
    }

    /// The DEFLATE message does not claim a zip header the JWS lacks.
    @Test func plainJSONPayloadMessageFollowsTheHeader() throws {
        let forge = try VerifyForge()
        let payload = JSONWriter.minified(.object(VerifyForge.claims()))
        let withZip = try forge.card(try forge.jws(payload: payload, compress: { $0 }), "zip.smart-health-card")
        let withoutZip = try forge.card(
            try forge.jws(
                header: Array(#"{"alg":"ES256","kid":"\#(forge.kid)"}"#.utf8), payload: payload, compress: { $0 }),
            "nozip.smart-health-card")
        let a = try #require(try forge.verify([withZip]).flatMap(\.findings).first { $0.code == .deflateInvalid })
        #expect(a.message.contains("the header's zip \"DEF\" says it is"), "\(a.message)")
        let b = try forge.verify([withoutZip]).flatMap(\.findings)
        let deflate = try #require(b.first { $0.code == .deflateInvalid })
        #expect(
            !deflate.message.contains("says it is") && deflate.message.contains("must say zip \"DEF\""),
            "\(deflate.message)")
        #expect(b.contains { $0.code == .headerZip })
        // Not DEFLATE at all: the message quotes zlib's reason without calling it a zlib header problem.
        let junk = try forge.card(
            try forge.jws(payload: payload, compress: { _ in [0xFF, 0xFF, 0xFF, 0xFF] }), "junk.smart-health-card")
        let c = try #require(try forge.verify([junk]).flatMap(\.findings).first { $0.code == .deflateInvalid })
        #expect(c.message.hasPrefix("the payload is not raw DEFLATE (inflating it failed: "), "\(c.message)")
    }

    /// `--jwks http(s)://…` alone: verify is offline and says so; `URL=PATH` needs a PATH.
    @Test func keySetURLsAreNotFetched() throws {
        let card = TestSupport.spec("example-00-e-file.smart-health-card").path
        for url in [
            "https://spec.smarthealth.cards/examples/issuer", "http://issuer.example.org/.well-known/jwks.json",
        ] {
            let run = try TestSupport.cli(["verify", "--jwks", url, card])
            #expect(run.status == 2)
            #expect(run.stderr.contains("verify is offline and does not fetch URLs"), "\(run.stderr)")
            #expect(run.stderr.contains("healthcards: --jwks \(url): ") && run.stderr.contains("as ISSUER_URL=PATH"), "\(run.stderr)")
        }
        let empty = try TestSupport.cli(["verify", "--jwks", "https://issuer.example.org=", card])
        #expect(empty.status == 2 && empty.stderr.contains("names no file after '='"), "\(empty.stderr)")
        #expect(
            try KeySetArgument.parse("https://a.example/x=dir/jwks.json")
                == KeySetArgument(issuer: "https://a.example/x", path: "dir/jwks.json"))
        #expect(try KeySetArgument.parse("site") == KeySetArgument(issuer: nil, path: "site"))
    }

    /// REVOKED quotes the CRL entry that revoked the card, with its timestamp when it has one.
    @Test func revokedQuotesTheEntry() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", TestSupport.spec("issuer").path, "--now", "1700000000",
            TestSupport.spec("example-03-e-file.smart-health-card").path,
        ])
        #expect(run.status == 1)
        let crl = try CRL(
            bytes: try VerifyFixtures.bytes(
                TestSupport.spec("issuer/.well-known/crl/3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s.json")),
            source: "crl")
        let payload = try TestSupport.payload(of: try VerifyFixtures.text(TestSupport.spec("example-03-d-jws.txt")))
        let rid = try #require(payload["vc"]?["rid"]?.stringValue)
        let entry = try #require(crl.entries.first { $0.rid == rid })
        #expect(run.stdout.contains("lists \"\(entry.text)\""), "\(run.stdout)")
        let forge = try VerifyForge()
        var claims = VerifyForge.claims()
        var vc = claims["vc"]!.objectValue!
        vc["rid"] = "revokedRid1"
        claims["vc"] = .object(vc)
        var jwk = JWK(key: forge.key)
        jwk.crlVersion = 1
        let keySet = try forge.writeKeySet([jwk.json])
        _ = try forge.write(
            CRL(kid: forge.kid, ctr: 1, entries: [.init(rid: "revokedRid1", before: 1_690_000_100)]).fileBytes,
            "site/.well-known/crl/\(forge.kid).json")
        let revoked = try #require(
            try forge.verify([try forge.card(try forge.jws(claims: claims))], keySets: [keySet]).flatMap(\.findings)
                .first { $0.code == .revoked })
        #expect(
            revoked.message.contains(
                "lists \"revokedRid1.1690000100\", which revokes cards with this rid issued before 2023-07-22 04:28:20 UTC"
            ), "\(revoked.message)")
    }
}
