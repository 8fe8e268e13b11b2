import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsTestSupport

/// Commands that write an issuer site take its lock (`SiteLock`): concurrent `revoke` runs each land
/// their rid, and every writer waits while another holds the site. Real processes, through the CLI.
@Suite struct SiteLockTests {
    /// A CSV of `count` one-dose patients Q1…Q<count> in the vaccination template's columns.
    static func patientsCSV(_ count: Int, in dir: URL, name: String = "patients.csv") throws -> String {
        let sample = try VerifyFixtures.text(
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv"))
        let header = String(sample.prefix { $0 != "\n" && $0 != "\r" })
        let rows = (1...count).map {
            "EV-9\($0),1,Q\($0),Ann,,Doe\($0),1970-01-01,F,Springfield,IL,ABC General Hospital,999999,2021-01-15,207,"
                + "80777-0273-10,MOD,011J20A,2021-07-01,LA,C28161,1"
        }
        return try TestSupport.write(([header] + rows).joined(separator: "\n") + "\n", to: name, in: dir)
    }

    /// A site with an empty CRL and `patients` cards issued with a rid secret.
    static func clinic(patients: Int) throws -> RevocationSite {
        let dir = try TestSupport.tempDir("sitelock")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, "--issuer", SiteTestSupport.issuer, "--crl", key.path])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.cli(
            [
                "issue", "--issuer", SiteTestSupport.issuer, "--key", key.path, "--site", site.path, "--rid-secret",
                secret, "--template", BatchTestSupport.template, "--out", out.path, "--nbf", "1700000000", "--no-qr",
                "--quiet", try patientsCSV(patients, in: dir),
            ])
        return RevocationSite(dir: dir, key: key.path, kid: key.kid, secret: secret, site: site, out: out)
    }

    /// The tester's case: ten `revoke` processes at once. Before the lock, each read the CRL, added its rid and
    /// wrote the list back, so later writes dropped earlier rids (6 of 10 landed) though all ten said "revoked".
    @Test func tenConcurrentRevokesAllLandInTheList() throws {
        let c = try Self.clinic(patients: 10)
        let ids = (1...10).map { "Q\($0)" }
        let runs = try ids.map { try TestSupport.start(c.revokeArguments(["--id", $0]), log: $0, in: c.dir) }
        for (process, _, _) in runs { process.waitUntilExit() }
        var rids: [String] = []
        for (id, (process, out, err)) in zip(ids, runs) {
            let stdout = try VerifyFixtures.text(out)
            let stderr = try VerifyFixtures.text(err)
            #expect(process.terminationStatus == 0, "\(id): \(stderr)")
            let rid = try c.rid(of: id)
            #expect(stdout.hasPrefix("revoked \(rid) (patient \(id))\n"), "\(id): \(stdout)")
            rids.append(rid)
        }
        let crl = try c.crl()
        #expect(Set(crl.entries.map(\.rid)) == Set(rids))
        #expect(crl.entries.count == 10)
        #expect(crl.ctr == 11)  // 1 (site --crl) + one step per revoke
        let keySet = try JWKS(bytes: try SiteTestSupport.bytes(c.keySetPath), source: "jwks")
        #expect(keySet.key(kid: c.kid)?.crlVersion == 11)
    }

    /// While another process holds the site's lock, every command that writes the site waits (and says so after
    /// a second) and writes nothing; when it is released, each finishes.
    @Test func everySiteWriterWaitsForTheLock() throws {
        let c = try Self.clinic(patients: 2)
        let before = try SiteTestSupport.bytes(c.crlPath)
        let keySetBefore = try SiteTestSupport.bytes(c.keySetPath)
        var lock: OutputLock? = try SiteLock.take(site: c.site.path, waitSeconds: 0)
        let linked = c.dir.appendingPathComponent("linked")
        let writers: [(String, [String])] = [
            ("revoke", c.revokeArguments(["--id", "Q1"])),
            ("site", ["site", "--out", c.site.path, c.key]),
            ("jwks", ["jwks", c.key, "--out", c.keySetPath]),
            (
                "shl",
                [
                    "shl", "--base-url", SiteTestSupport.issuer + "/shl", "--site", c.site.path, "--out",
                    c.dir.path + "/links",
                    c.out.path + "/cards/Q2.smart-health-card",
                ]
            ),
            (
                "issue-shl",
                [
                    "issue", "--issuer", SiteTestSupport.issuer, "--key", c.key, "--site", c.site.path, "--shl",
                    SiteTestSupport.issuer + "/shl", "--template", BatchTestSupport.template, "--out", linked.path,
                    "--no-qr", "--quiet", try Self.patientsCSV(1, in: c.dir, name: "one.csv"),
                ]
            ),
        ]
        let runs = try writers.map { try TestSupport.start($0.1, log: $0.0, in: c.dir) }
        // Each says, after waiting a second, whom it waits for (polled: a loaded machine starts them slowly).
        let deadline = Date().addingTimeInterval(60)
        func waiting(_ err: URL) -> Bool {
            ((try? VerifyFixtures.text(err)) ?? "").contains("which is writing the site \(c.site.path)")
        }
        while Date() < deadline && !runs.allSatisfy({ waiting($0.2) || !$0.0.isRunning }) {
            Thread.sleep(forTimeInterval: 0.2)
        }
        for ((name, _), (process, _, err)) in zip(writers, runs) {
            let stderr = try VerifyFixtures.text(err)
            #expect(process.isRunning, "\(name) did not wait: \(stderr)")
            #expect(waiting(err), "\(name): \(stderr)")
        }
        #expect(try SiteTestSupport.bytes(c.crlPath) == before)
        #expect(try SiteTestSupport.bytes(c.keySetPath) == keySetBefore)
        #expect(!FileManager.default.fileExists(atPath: c.site.path + "/shl"))
        lock = nil
        _ = lock
        for ((name, _), (process, _, err)) in zip(writers, runs) {
            process.waitUntilExit()
            let stderr = try VerifyFixtures.text(err)
            #expect(process.terminationStatus == 0, "\(name): \(stderr)")
        }
        #expect(try c.crl().entries == [CRL.Entry(rid: try c.rid(of: "Q1"))])
        #expect(FileManager.default.fileExists(atPath: c.dir.path + "/links/shl/Q2.txt"))
        #expect(FileManager.default.fileExists(atPath: linked.path + "/shl/Q1.txt"))
    }
}
