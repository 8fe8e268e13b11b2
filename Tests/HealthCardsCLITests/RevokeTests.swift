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

/// `healthcards revoke`: CRL updates, `ctr`, and the key's `crlVersion` (digest section 8).
@Suite struct RevokeTests {
    /// A site for the demo key (with an empty CRL unless `siteOptions` say otherwise) and cards issued
    /// with a rid secret.
    static func fixture(siteOptions: [String] = ["--crl"]) throws -> RevocationSite {
        let dir = try TestSupport.tempDir("revoke")
        let key = try TestSupport.demoKey(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let site = dir.appendingPathComponent("site")
        let run = try SiteTestSupport.cli(["site", "--out", site.path, key, "--issuer", SiteTestSupport.issuer] + siteOptions)
        let kid = String(run.stdout.prefix(43))
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key, out: out, extra: ["--rid-secret", secret])
        return RevocationSite(dir: dir, key: key, kid: kid, secret: secret, site: site, out: out)
    }

    @Test func revokeAddsTheCardsRidAndBumpsCtrAndCrlVersion() throws {
        let f = try Self.fixture()
        #expect(try f.crl() == CRL(kid: f.kid, ctr: 1, entries: []))
        #expect(try f.crlVersion() == 1)
        let rid = try f.rid(of: "P-1001")
        #expect(rid.count == 11)

        let first = try f.revoke(["--id", "P-1001"])
        #expect(first.stdout == "revoked \(rid) (patient P-1001)\n\(f.crlPath): ctr 2; \(f.keySetPath): crlVersion 2\n")
        #expect(try f.crl() == CRL(kid: f.kid, ctr: 2, entries: [.init(rid: rid)]))
        #expect(try f.crlVersion() == 2)

        // The same id again changes nothing: both files keep their bytes.
        let crlBytes = try SiteTestSupport.bytes(f.crlPath)
        let keySetBytes = try SiteTestSupport.bytes(f.keySetPath)
        let again = try f.revoke(["--id", "P-1001"])
        #expect(again.stdout.hasPrefix("already revoked \(rid) (patient P-1001; by \(rid))\n"))
        #expect(again.stdout.contains("ctr 2 (unchanged)") && again.stdout.contains("crlVersion 2 (unchanged)"))
        #expect(try SiteTestSupport.bytes(f.crlPath) == crlBytes)
        #expect(try SiteTestSupport.bytes(f.keySetPath) == keySetBytes)

        // A timestamp suffix: only cards issued before it.
        let other = try f.rid(of: "P-1002")
        try f.revoke(["--id", "P-1002", "--before", "1700000001"])
        #expect(try f.crl().entries == [.init(rid: rid), .init(rid: other, before: 1_700_000_001)])
        #expect(try f.crl().ctr == 3)
        #expect(try f.crlVersion() == 3)
        let raw = try SiteTestSupport.json(f.crlPath)
        #expect(raw["rids"] == .array([.string(rid), .string("\(other).1700000001")]))
        #expect(raw["method"] == "rid" && raw["kid"]?.stringValue == f.kid)
        // The cards were issued at nbf 1700000000, so the list revokes them; a later card would not be.
        #expect(try f.crl().revokes(rid: other, nbf: 1_700_000_000))
        #expect(!(try f.crl().revokes(rid: other, nbf: 1_700_000_001)))
    }

    /// The independent checker accepts the whole site (key set, a CRL with a plain rid and one with a
    /// timestamp suffix) and the cards with it.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func revokedSitePassesIndependentChecker() throws {
        let f = try Self.fixture()
        try f.revoke(["--id", "P-1001"])
        try f.revoke(["--id", "P-1002", "--before", "1700000001"])
        #expect(try f.crl().entries.count == 2)
        let check = try TestSupport.check(["--jwks", f.site.path, f.site.path, f.out.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains(" 0 errors, 0 warnings"), "\(check.stdout)")
    }

    @Test func rewritingTheKeySetKeepsCrlVersion() throws {
        let f = try Self.fixture()
        try f.revoke(["--id", "P-1001"])
        try f.revoke(["--id", "P-1002"])
        #expect(try f.crlVersion() == 3)
        // `site` again (e.g. after adding a key) and `jwks` into the same folder both keep it.
        let newKey = try SiteTestSupport.keygen("next.pem", in: f.dir)
        let site = try SiteTestSupport.cli(
            ["site", "--out", f.site.path, newKey.path, f.key, "--issuer", SiteTestSupport.issuer, "--crl"])
        #expect(site.stdout == "\(newKey.kid) crlVersion 1\n\(f.kid) crlVersion 3\n")
        #expect(try f.crl().ctr == 3 && f.crl().entries.count == 2)
        try SiteTestSupport.cli(
            ["jwks", f.key, newKey.path, "--out", f.keySetPath, "--issuer", SiteTestSupport.issuer])
        #expect(try f.crlVersion() == 3)
        // A key set written elsewhere, with no CRL beside it, carries no crlVersion.
        let elsewhere = f.dir.appendingPathComponent("plain/jwks.json").path
        try SiteTestSupport.cli(["jwks", f.key, "--out", elsewhere, "--issuer", SiteTestSupport.issuer])
        #expect(try JWKS(bytes: try SiteTestSupport.bytes(elsewhere), source: "x").keys[0].crlVersion == nil)
    }

    @Test func interruptedRunIsRepairedByRevokingAgain() throws {
        let f = try Self.fixture()
        try f.revoke(["--id", "P-1001"])
        // As if the run had stopped after writing the CRL: the key set still says crlVersion 1.
        let text = String(decoding: try SiteTestSupport.bytes(f.keySetPath), as: UTF8.self)
        try Data(text.replacingOccurrences(of: "\"crlVersion\": 2", with: "\"crlVersion\": 1").utf8)
            .write(to: URL(fileURLWithPath: f.keySetPath))
        #expect(try f.crlVersion() == 1)
        let again = try f.revoke(["--id", "P-1001"])
        #expect(again.stdout.contains("ctr 2 (unchanged)") && again.stdout.hasSuffix("crlVersion 2\n"))
        #expect(try f.crlVersion() == 2 && f.crl().ctr == 2)
    }

    @Test func revokeByRidAndWithoutAnExistingCRL() throws {
        let f = try Self.fixture(siteOptions: ["--no-crl"])
        #expect(!FileManager.default.fileExists(atPath: f.crlPath))
        #expect(try f.crlVersion() == nil)
        // rids no report lists (the spec's sample rids): only with --force, which says what it skipped.
        let refused = try SiteTestSupport.cli(
            [
                "revoke", "--site", f.site.path, "--key", f.key, "--rid", "MKyCxh7p6uQ", "--rid", "vwAjHdarZuc",
                "--before", "1687450765", "--report", f.report,
            ], expect: 2)
        #expect(refused.stderr.contains("no card with vc.rid MKyCxh7p6uQ in \(f.report)"), "\(refused.stderr)")
        #expect(refused.stderr.contains("pass --force"))
        #expect(!FileManager.default.fileExists(atPath: f.crlPath))
        let run = try SiteTestSupport.cli([
            "revoke", "--site", f.site.path, "--key", f.key, "--rid", "MKyCxh7p6uQ", "--rid", "vwAjHdarZuc",
            "--before", "1687450765", "--force",
        ])
        #expect(
            run.stdout.hasPrefix(
                "revoked MKyCxh7p6uQ.1687450765 (patient unknown)\nrevoked vwAjHdarZuc.1687450765 (patient unknown)\n"))
        #expect(run.stderr.contains("nothing was checked against what was issued"))
        #expect(
            try f.crl()
                == CRL(
                    kid: f.kid, ctr: 1,
                    entries: [
                        .init(rid: "MKyCxh7p6uQ", before: 1_687_450_765),
                        .init(rid: "vwAjHdarZuc", before: 1_687_450_765),
                    ]))
        #expect(try f.crlVersion() == 1)
        // Widening a timestamped entry to all cards replaces it in place.
        let widen = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid", "MKyCxh7p6uQ", "--force"])
        #expect(widen.stdout.hasPrefix("revoked MKyCxh7p6uQ (patient unknown; was MKyCxh7p6uQ.1687450765)\n"))
        #expect(try f.crl().entries.map(\.text) == ["MKyCxh7p6uQ", "vwAjHdarZuc.1687450765"])
        #expect(try f.crlVersion() == 2)
        // A rid the report lists is named with its patient.
        let rid = try f.rid(of: "P-1002")
        let byRid = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid", rid, "--report", f.report])
        #expect(byRid.stdout.hasPrefix("revoked \(rid) (patient P-1002)\n"), "\(byRid.stdout)")
    }

    @Test func refusesUnpublishedKeysAndBadArguments() throws {
        let f = try Self.fixture()
        let stranger = try SiteTestSupport.keygen("stranger.pem", in: f.dir)
        // The report shows the card signed by the demo key, not this one.
        let wrongKey = try SiteTestSupport.cli(
            [
                "revoke", "--site", f.site.path, "--key", stranger.path, "--rid-secret", f.secret,
                "--id", "P-1001", "--report", f.report,
            ], expect: 2)
        #expect(wrongKey.stderr.contains("were signed by key \(f.kid), not by the key given (\(stranger.kid))"), "\(wrongKey.stderr)")
        let run = try SiteTestSupport.cli(
            [
                "revoke", "--site", f.site.path, "--key", stranger.path, "--rid-secret", f.secret,
                "--id", "P-1001", "--force",
            ], expect: 2)
        #expect(run.stderr.contains("does not publish key \(stranger.kid)"))
        #expect(!FileManager.default.fileExists(atPath: f.site.path + "/.well-known/crl/\(stranger.kid).json"))
        let ms = try f.revoke(["--id", "P-1001", "--before", "1700000000000"], expect: 2)
        #expect(ms.stderr.contains("after the year 9999: it looks like milliseconds"), "\(ms.stderr)")
        let noID = try f.revoke([], expect: 2)
        #expect(noID.stderr.contains("needs --id PATIENT_ID"))
        let badRid = try f.revoke(["--rid", "not a rid"], expect: 2)
        #expect(badRid.stderr.contains("is not a rid"))
        let noSite = try SiteTestSupport.cli(
            [
                "revoke", "--site", f.dir.appendingPathComponent("nowhere").path, "--key", f.key,
                "--rid", "MKyCxh7p6uQ", "--force",
            ], expect: 2)
        #expect(noSite.stderr.contains("does not exist; lay out the issuer site"), "\(noSite.stderr)")
        #expect(try f.crl().ctr == 1)
    }

    /// `--id " P-1001 "` is P-1001, as `issue` reads ids (one function, `PatientIdentity.normalize`).
    @Test func idsAreNormalizedAsIssueReadsThem() throws {
        let f = try Self.fixture()
        let rid = try f.rid(of: "P-1001")
        let run = try f.revoke(["--id", " P-1001\t"])
        #expect(run.stdout.hasPrefix("revoked \(rid) (patient P-1001)\n"))
        #expect(try f.crl().entries == [.init(rid: rid)])
        #expect(PatientIdentity.normalize(" \u{00A0}P-1001 \r\n") == "P-1001")
        #expect(PatientIdentity.normalize("p-1001") == "p-1001")  // ids are case-sensitive
    }

    /// A wrong rid secret derives a rid no card has: refused, even with --force, and nothing written.
    @Test func wrongSecretIsRefusedAndNothingIsWritten() throws {
        let f = try Self.fixture()
        let other = f.dir.appendingPathComponent("other.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", other])
        let crlBytes = try SiteTestSupport.bytes(f.crlPath)
        let keySetBytes = try SiteTestSupport.bytes(f.keySetPath)
        let rid = try f.rid(of: "P-1001")
        for extra in [[String](), ["--force"]] {
            let run = try SiteTestSupport.cli(
                ["revoke", "--site", f.site.path, "--key", f.key, "--rid-secret", other, "--report", f.report,
                 "--id", "P-1001"] + extra, expect: 2)
            #expect(run.stderr.contains("has vc.rid \(rid)"), "\(run.stderr)")
            #expect(run.stderr.contains("it is not the secret the card was issued with"))
            #expect(run.stdout.isEmpty)
        }
        #expect(try SiteTestSupport.bytes(f.crlPath) == crlBytes)
        #expect(try SiteTestSupport.bytes(f.keySetPath) == keySetBytes)
    }

    /// An id no report shows is refused (the list never shrinks); --force revokes it and says so.
    @Test func unknownIDIsRefusedUnlessForced() throws {
        let f = try Self.fixture()
        let crlBytes = try SiteTestSupport.bytes(f.crlPath)
        let unknown = try f.revoke(["--id", "P-9999"], expect: 2)
        #expect(unknown.stderr.contains("no card for id 'P-9999' in \(f.report)"), "\(unknown.stderr)")
        #expect(unknown.stderr.contains("Nothing was written; pass --force"))
        #expect(try SiteTestSupport.bytes(f.crlPath) == crlBytes)
        // Without any report nothing can be checked: refused unless --force.
        let unchecked = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid-secret", f.secret, "--id", "P-1001"], expect: 2)
        #expect(unchecked.stderr.contains("Give --report OUT/report.ndjson"), "\(unchecked.stderr)")
        #expect(try SiteTestSupport.bytes(f.crlPath) == crlBytes)

        let forced = try f.revoke(["--id", "P-9999", "--force"])
        let rid = try RID.derive(secret: try RIDSecretFile.read(f.secret), kid: f.kid, patientID: "P-9999")
        #expect(forced.stdout.hasPrefix("revoked \(rid) (patient P-9999)\n"))
        #expect(forced.stderr.contains("warning: --force: no card for id 'P-9999'"))
        #expect(try f.crl().entries == [.init(rid: rid)])
        // A report that is not a report is refused, not read as "nothing issued".
        let notReport = try TestSupport.write("recip_id,name\n", to: "export.csv", in: f.dir)
        let wrongFile = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid-secret", f.secret, "--report", notReport,
             "--id", "P-1001"], expect: 2)
        #expect(wrongFile.stderr.contains("line 1 is not a line of an issue report"))
        // A line over the report line budget is named as such, not as "not a report line".
        let longLine = try TestSupport.write(
            "{\"status\":\"issued\",\"source\":\"" + String(repeating: "x", count: InputBudget.reportLineBytes) + "\"}\n",
            to: "long-report.ndjson", in: f.dir)
        let tooLong = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid-secret", f.secret, "--report", longLine,
             "--id", "P-1001"], expect: 2)
        #expect(
            tooLong.stderr.contains("line 1 is longer than \(InputBudget.reportLineBytes) bytes, the most a report line may be"),
            "\(tooLong.stderr)")

        // Cards issued without a rid secret, and a report from before kids and rids were recorded: named.
        let plain = f.dir.appendingPathComponent("plain")
        try SiteTestSupport.issueSample(key: f.key, out: plain)
        let noRid = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid-secret", f.secret,
             "--report", plain.path + "/report.ndjson", "--id", "P-1002"], expect: 2)
        #expect(noRid.stderr.contains("has no vc.rid (issued without a revocation secret)"), "\(noRid.stderr)")
        let old = try TestSupport.write(
            #"{"source":"in.csv:2","id":"P-1002","status":"issued","alreadyIssued":false,"errors":[],"warnings":[],"files":[]}"#
                + "\n", to: "old-report.ndjson", in: f.dir)
        let oldReport = try SiteTestSupport.cli(
            ["revoke", "--site", f.site.path, "--key", f.key, "--rid-secret", f.secret, "--report", old,
             "--id", "P-1002"], expect: 2)
        #expect(oldReport.stderr.contains("was written before healthcards recorded them"), "\(oldReport.stderr)")
    }

    /// `--before` in the far future would revoke the corrected cards too.
    @Test func farFutureBeforeIsRefused() throws {
        let f = try Self.fixture()
        let crlBytes = try SiteTestSupport.bytes(f.crlPath)
        let now = Int(Date().timeIntervalSince1970)
        let cases: [(String, String)] = [
            (String(now + 2 * 86_400), "more than a day from now"),
            ("253402300800", "after the year 9999"),
            ("1.5e9", "is written with an exponent"),
            ("1.5", "is not a whole number"),
            ("0x10", "is hexadecimal"),
            ("-5", "is negative, before 1970"),
        ]
        for (value, says) in cases {
            let run = try f.revoke(["--id", "P-1001", "--before", value], expect: 2)
            #expect(run.stderr.contains(says), "\(value): \(run.stderr)")
        }
        #expect(try SiteTestSupport.bytes(f.crlPath) == crlBytes)
        let soon = try f.revoke(["--id", "P-1001", "--before", String(now + 3600)])
        #expect(soon.stdout.hasPrefix("revoked "))
    }

    @Test func crlAddKeepsOneEntryPerRid() {
        var crl = CRL(kid: "k", ctr: 1)
        #expect(crl.add(.init(rid: "AAA", before: 100)) == .added)
        #expect(crl.add(.init(rid: "AAA", before: 50)) == .alreadyRevoked(by: .init(rid: "AAA", before: 100)))
        #expect(crl.add(.init(rid: "AAA", before: 100)) == .alreadyRevoked(by: .init(rid: "AAA", before: 100)))
        #expect(crl.add(.init(rid: "AAA", before: 200)) == .widened(from: .init(rid: "AAA", before: 100)))
        #expect(crl.add(.init(rid: "BBB")) == .added)
        #expect(crl.add(.init(rid: "AAA")) == .widened(from: .init(rid: "AAA", before: 200)))
        #expect(crl.add(.init(rid: "AAA", before: 300)) == .alreadyRevoked(by: .init(rid: "AAA")))
        #expect(crl.entries.map(\.text) == ["AAA", "BBB"])
        #expect(crl.ctr == 1)
    }

    /// A hand-edited list naming a rid twice, the narrowed entry among them: one entry is left, where the rid's
    /// first entry was (it was left twice).
    @Test func narrowingAListThatNamesTheRidTwiceLeavesOneEntry() {
        for entries: [CRL.Entry] in [
            [.init(rid: "AAA"), .init(rid: "BBB"), .init(rid: "AAA", before: 100)],
            [.init(rid: "AAA", before: 100), .init(rid: "BBB"), .init(rid: "AAA")],
        ] {
            var crl = CRL(kid: "k", entries: entries)
            #expect(crl.add(.init(rid: "AAA", before: 100), narrow: true) == .narrowed(from: .init(rid: "AAA")))
            #expect(crl.entries.map(\.text) == ["AAA.100", "BBB"])
        }
        var widened = CRL(kid: "k", entries: [.init(rid: "CCC", before: 5), .init(rid: "DDD"), .init(rid: "CCC", before: 9)])
        #expect(widened.add(.init(rid: "CCC")) == .widened(from: .init(rid: "CCC", before: 5)))
        #expect(widened.entries.map(\.text) == ["CCC", "DDD"])
    }
}
