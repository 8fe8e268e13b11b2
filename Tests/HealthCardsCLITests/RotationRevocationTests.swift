import Foundation
import Testing

import HealthCardsCore
import HealthCardsFixtures
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsPrint
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsVerify
import HealthCardsTestSupport

/// Revocations that survive a key rotation (issue 22): a person revoked under any key of the site is not reissued
/// under another, each run's report lines are kept (the issuance log) so `revoke` finds a card's run whatever key
/// signed it, `site` keeps the site's choice of CRLs, and a long batch holds the site's lock only while it writes
/// into the site. Through the real `healthcards`, except the store protocols' own tests.
@Suite struct RotationRevocationTests {
    static let templates = SiteTestSupport.templates

    /// An issuer with a rid secret, a 2025 key published with `--crl`, the sample issued with it, and a 2026 key.
    struct Issuer {
        let dir: URL
        let old: (path: String, kid: String)
        let new: (path: String, kid: String)
        let secret: String
        let site: URL
        let out: URL

        @discardableResult
        func issue(key: String, nbf: String? = nil, site withSite: Bool = true, expect status: Int32 = 0) throws
            -> TestSupport.Run
        {
            var arguments = [
                "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--rid-secret", secret, "--template",
                templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--no-qr",
                "--quiet",
            ]
            if withSite { arguments += ["--site", site.path] }
            if let nbf { arguments += ["--nbf", nbf] }
            return try SiteTestSupport.cli(
                arguments + [templates.appendingPathComponent("covid19-vaccination.sample.csv").path], expect: status)
        }

        @discardableResult
        func revoke(key: String, _ extra: [String], expect status: Int32 = 0) throws -> TestSupport.Run {
            try SiteTestSupport.cli(
                [
                    "revoke", "--site", site.path, "--key", key, "--rid-secret", secret, "--report",
                    out.path + "/report.ndjson",
                ]
                    + extra, expect: status)
        }
    }

    static func issuer() throws -> Issuer {
        let dir = try TestSupport.tempDir("rotation-revocation")
        let old = try SiteTestSupport.keygen("issuer-2025.pem", in: dir)
        let new = try SiteTestSupport.keygen("issuer-2026.pem", in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, "--issuer", SiteTestSupport.issuer, "--crl", old.path])
        let issuer = Issuer(
            dir: dir, old: old, new: new, secret: secret, site: site, out: dir.appendingPathComponent("out"))
        try issuer.issue(key: old.path, nbf: "1700000000")
        return issuer
    }

    /// The tester's case: revoke a person, rotate as docs/operations.md section 4 says (new key published with the
    /// old one, `--key` switched, the batch run again): the person was issued a fresh card under the new key with a
    /// rid no list names, and verify said OK. Now the record is refused, saying which key's entry revokes whom and
    /// how to narrow it; narrowing it on the old key (checked against the report of that run, without --force) lets
    /// a corrected card through while the old card stays revoked.
    @Test func aPersonRevokedUnderTheOldKeyGetsNoCardUnderTheNewOne() throws {
        let f = try Self.issuer()
        let oldCard = try SiteTestSupport.bytes(f.out.path + "/cards/P-1001.smart-health-card")
        try f.revoke(key: f.old.path, ["--id", "P-1001"])
        // Rotation step 2 exactly as the runbook writes it (no --crl): the new key gets a list as the old one has.
        let rotated = try SiteTestSupport.cli(["site", "--out", f.site.path, f.new.path, f.old.path])
        #expect(rotated.stdout.contains("\(f.new.kid) crlVersion 1"), "\(rotated.stdout)")

        try f.issue(key: f.new.path, expect: 1)
        let report = try TestSupport.report(f.out)
        let line = try #require(report.first { $0["id"] == "P-1001" })
        #expect(line["status"] == "rejected" && line["revoked"] == .bool(true))
        #expect(line["errors"]?[0]?["code"] == "RID_REVOKED")
        #expect(line["revokedBy"]?["kid"]?.stringValue == f.old.kid)
        let oldRid = try RID.derive(secret: try RIDSecretFile.read(f.secret), kid: f.old.kid, patientID: "P-1001")
        #expect(line["revokedBy"]?["rid"]?.stringValue == oldRid && line["revokedBy"]?["entry"]?.stringValue == oldRid)
        let message = try #require(line["errors"]?[0]?["message"]?.stringValue)
        #expect(message.hasPrefix("this person (id 'P-1001') is revoked under key \(f.old.kid)"), "\(message)")
        #expect(message.contains("signed now by key \(f.new.kid)") && message.contains("--narrow`"), "\(message)")
        #expect(report.filter { $0["status"] == "issued" }.count == 3)
        #expect(report.filter { $0["status"] == "issued" }.allSatisfy { $0["kid"]?.stringValue == f.new.kid })
        // The old card, which verify calls REVOKED, left the hand-out folder (issue 33).
        #expect(try SiteTestSupport.bytes(f.out.path + "/withdrawn/cards/P-1001.smart-health-card") == oldCard)

        // The old key's entry narrowed to the cards before now: checked against what was issued, no --force needed.
        let now = Clock.nowSeconds() - 1
        let narrowed = try f.revoke(key: f.old.path, ["--id", "P-1001", "--before", String(now), "--narrow"])
        #expect(
            narrowed.stdout.hasPrefix("narrowed \(oldRid) to \(oldRid).\(now) (patient P-1001)"), "\(narrowed.stdout)")
        try f.issue(key: f.new.path)
        let reissued = try #require(try TestSupport.report(f.out).first { $0["id"] == "P-1001" })
        #expect(reissued["status"] == "issued" && reissued["kid"]?.stringValue == f.new.kid)
        try SiteTestSupport.cli(["verify", "--jwks", f.site.path, f.out.path + "/cards/P-1001.smart-health-card"])
        let old = try TestSupport.write(
            String(decoding: oldCard, as: UTF8.self), to: "old.smart-health-card", in: f.dir)
        let verifyOld = try SiteTestSupport.cli(["verify", "--jwks", f.site.path, old], expect: 1)
        #expect(verifyOld.stdout.contains("REVOKED"), "\(verifyOld.stdout)")
    }

    /// The re-run under the new key replaced report.ndjson, so revoking a card of the old key needed --force. The
    /// output folder's issuance log keeps both runs: `revoke --key OLD --report OUT/report.ndjson` finds the old
    /// run's card, and says that the person's card under the new key is not reached by it.
    @Test func revokeFindsTheRunOfAnOldKeysCardAfterTheReportWasReplaced() throws {
        let f = try Self.issuer()
        try SiteTestSupport.cli(["site", "--out", f.site.path, f.new.path, f.old.path])
        try f.issue(key: f.new.path)
        #expect(try TestSupport.report(f.out).allSatisfy { $0["kid"]?.stringValue == f.new.kid })
        let revoked = try f.revoke(key: f.old.path, ["--id", "P-1002"])
        let oldRid = try RID.derive(secret: try RIDSecretFile.read(f.secret), kid: f.old.kid, patientID: "P-1002")
        #expect(revoked.stdout.hasPrefix("revoked \(oldRid) (patient P-1002)"), "\(revoked.stdout)")
        #expect(!revoked.stderr.contains("--force"), "\(revoked.stderr)")
        #expect(
            revoked.stderr.contains("note: 'P-1002' also has cards signed by key \(f.new.kid)")
                && revoked.stderr.contains("which this revocation does not reach"), "\(revoked.stderr)")
        #expect(
            try CRL(bytes: try SiteTestSupport.bytes(f.site.path + "/.well-known/crl/\(f.old.kid).json"), source: "crl")
                .entries.contains(CRL.Entry(rid: oldRid)))
        // The output folder itself is a report too (its log).
        let byFolder = try SiteTestSupport.cli(
            [
                "revoke", "--site", f.site.path, "--key", f.old.path, "--rid-secret", f.secret, "--report", f.out.path,
                "--id", "P-1003",
            ])
        #expect(byFolder.stdout.hasPrefix("revoked "), "\(byFolder.stdout)")

        // Both runs are in the log, each line tagged with its run, each run begun and ended.
        let log = try String(decoding: SiteTestSupport.bytes(f.out.path + "/issuance-log.ndjson"), as: UTF8.self)
            .split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        let begins = log.compactMap { $0["begin"] }
        #expect(begins.map { $0["kid"]?.stringValue } == [f.old.kid, f.new.kid])
        #expect(log.filter { $0["end"] != nil }.count == 2 && log.filter { $0["line"] != nil }.count == 8)
        #expect(FileIO.mode(f.out.path + "/issuance-log.ndjson").map { $0 & 0o777 } == 0o600)
    }

    /// `site` without `--crl` keeps the site's choice: the rotation step of the runbook gave the new key no list
    /// although the issuer's cards carry vc.rid; `--no-crl` still publishes a key without one.
    @Test func siteKeepsTheSitesChoiceOfRevocationLists() throws {
        let dir = try TestSupport.tempDir("site-crl-choice")
        let old = try SiteTestSupport.keygen("old.pem", in: dir)
        let new = try SiteTestSupport.keygen("new.pem", in: dir)
        let third = try SiteTestSupport.keygen("third.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, "--crl", old.path])
        let rotated = try SiteTestSupport.cli(["site", "--out", site, new.path, old.path])
        #expect(rotated.stdout == "\(new.kid) crlVersion 1\n\(old.kid) crlVersion 1\n", "\(rotated.stdout)")
        #expect(rotated.stderr.contains("note: gave \(new.kid) an empty revocation list"), "\(rotated.stderr)")
        #expect(
            try CRL(bytes: try SiteTestSupport.bytes(site + "/.well-known/crl/\(new.kid).json"), source: "crl").ctr == 1
        )
        let without = try SiteTestSupport.cli(["site", "--out", site, "--no-crl", third.path, new.path, old.path])
        #expect(without.stdout.hasPrefix("\(third.kid) (no CRL)\n"), "\(without.stdout)")
        // A site that never had a list gives none.
        let plain = dir.appendingPathComponent("plain").path
        try SiteTestSupport.cli(["site", "--out", plain, old.path])
        #expect(try SiteTestSupport.cli(["site", "--out", plain, new.path, old.path]).stdout.contains("(no CRL)"))
    }

    /// A revocation or a dropped key that lands while a batch runs: the lists and the key set are read again when
    /// they change, so the records signed after it are refused (library level, the site's files).
    @Test func listsAndKeySetAreReadAgainWhenTheyChange() throws {
        let dir = try TestSupport.tempDir("site-revocations")
        let key = try SiteTestSupport.keygen("k.pem", in: dir)
        let other = try SiteTestSupport.keygen("o.pem", in: dir)
        let sitePath = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", sitePath, key.path, other.path])
        let site = IssuerSite(root: sitePath)
        let secret = try RIDSecret(text: Base64URL.encode([UInt8](repeating: 7, count: 32)))
        let lists = try SiteRevocations(site: site, signingKid: key.kid)
        let rid = try RID.derive(secret: secret, kid: key.kid, patientID: "P-1")
        func refusal() throws -> RevocationRefusal? {
            try lists.current().refusal(
                rid: rid, ridFrom: "P-1", nbf: 1_700_000_000, signingKid: key.kid, secret: secret, site: sitePath,
                now: 1_700_000_000)
        }
        #expect(try refusal() == nil)
        // Revoked under the other key: found by the rid derived under that key.
        let otherRid = try RID.derive(secret: secret, kid: other.kid, patientID: "P-1")
        _ = try site.revoke([CRL.Entry(rid: otherRid, before: 1_700_000_001)], kid: other.kid)
        let refused = try #require(try refusal())
        #expect(
            refused.kid == other.kid && refused.rid == otherRid
                && refused.entry == CRL.Entry(rid: otherRid, before: 1_700_000_001))
        #expect(refused.message.contains("is revoked under key \(other.kid)"), "\(refused.message)")
        // A card issued at or after the entry's time is not revoked by it: the same rule as on the signing key's list.
        #expect(
            try lists.current().refusal(
                rid: rid, ridFrom: "P-1", nbf: 1_700_000_001, signingKid: key.kid, secret: secret, site: sitePath,
                now: 1_700_000_001) == nil)
        _ = try site.revoke([CRL.Entry(rid: rid)], kid: key.kid)
        #expect(try refusal()?.kid == key.kid)
        #expect(try lists.current().signingKeyPublished)
        try SiteTestSupport.cli(["site", "--out", sitePath, other.path, "--drop-kid", key.kid])
        #expect(try !lists.current().signingKeyPublished)
    }

    /// The issuance log file: a line a killed run cut off is skipped (the next run begins on a line of its own), a
    /// line in the middle that is not the log's is refused; a link, FIFO or device at its path is refused before a
    /// run writes anything.
    @Test func theIssuanceLogFileSkipsACutOffLineAndRefusesOtherFiles() throws {
        let dir = try TestSupport.tempDir("issuance-log")
        let path = dir.appendingPathComponent("issuance-log.ndjson").path
        let log = FileIssuanceLog(path: path)
        let line = ReportLine(source: "a.csv:2", id: "P-1", status: .issued, errors: [], warnings: [], files: [])
        let first = try log.begin(IssuanceRun(id: "run1", started: 1, issuer: "https://issuer.example.org", kid: "k1"))
        try first.append(reportLine: line.ndjson())
        try first.end(IssuanceRunEnd(issued: 1, rejected: 0, total: 1, interruptedBy: 0))
        // A killed run: begun, one line cut off in its middle.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        handle.seekToEndOfFile()
        handle.write(
            Data(
                #"{"run":"run2","begin":{"started":2,"issuer":"https://issuer.example.org","kid":"k2"}}"#.utf8 + [0x0A])
        )
        handle.write(Data(#"{"run":"run2","line":{"source":"a.csv:2","id":"P-2","sta"#.utf8))
        try handle.close()
        let third = try log.begin(IssuanceRun(id: "run3", started: 3, issuer: "https://issuer.example.org", kid: "k3"))
        var other = line
        other.id = "P-3"
        try third.append(reportLine: other.ndjson())
        try third.end(IssuanceRunEnd(issued: 1, rejected: 0, total: 1, interruptedBy: 0))
        var read: [(String?, String?)] = []
        try log.forEachLine { read.append(($0.run?.kid, $0.reportLine["id"]?.stringValue)) }
        #expect(read.map(\.0) == ["k1", "k3"] && read.map(\.1) == ["P-1", "P-3"])
        let cards = try IssuedCards(reports: [path])
        #expect(cards.cards.map(\.id) == ["P-1", "P-3"])

        // A line that is not the log's, followed by more of the log: not a log.
        let broken = dir.appendingPathComponent("broken.ndjson").path
        let text = try String(decoding: SiteTestSupport.bytes(path), as: UTF8.self)
        let lines = text.split(separator: "\n")
        let mixed: String = String(lines[0]) + "\nnot json\n" + lines[1...].joined(separator: "\n") + "\n"
        try mixed.write(toFile: broken, atomically: true, encoding: .utf8)
        #expect(throws: HealthCardError.self) { try IssuedCards(reports: [broken]) }

        let key = try TestSupport.demoKey(in: dir)
        for (name, make) in [
            (
                "link",
                { (p: String) in try FileManager.default.createSymbolicLink(atPath: p, withDestinationPath: "/dev/null")
                }
            ),
            ("fifo", { (p: String) in _ = mkfifo(p, 0o600) }),
        ] as [(String, (String) throws -> Void)] {
            let out = dir.appendingPathComponent("out-\(name)")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            try make(out.path + "/issuance-log.ndjson")
            let run = try SiteTestSupport.cli(
                [
                    "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template",
                    Self.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path,
                    "--no-qr", "--quiet",
                    Self.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
                ], expect: 2)
            #expect(
                run.stderr.contains("cannot write the issuance log \(out.path)/issuance-log.ndjson"), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path + "/cards"), "\(name): something was issued")
            #expect(FileIO.linkTarget("/dev/null") == nil && FileKind.of("/dev/null") == .characterDevice)
        }
    }

    /// A long `issue --shl` held the site's lock for its whole run, so an urgent `revoke` waited for it (then gave up
    /// after 60 s). Now it holds it only while it writes a link file: frozen (SIGSTOP) at a moment when it does not
    /// hold the lock, the batch lets a `revoke` through at once; and the record signed after that revocation
    /// landed is refused.
    @Test func aRevocationLandsWhileALinkBatchRuns() throws {
        let dir = try TestSupport.tempDir("shl-batch-lock")
        let (site, key, kid) = try SHLTestSupport.site(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", secret])
        let patients = 120
        let csv = try BatchTestSupport.synthetic(patients: patients, in: dir)
        let out = dir.appendingPathComponent("out")
        let (process, _, errFile) = try TestSupport.start(
            [
                "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--site", site, "--shl", SHLTestSupport.base,
                "--rid-secret", secret, "--template", BatchTestSupport.template, "--out", out.path, "--nbf",
                "1700000000",
                "--jobs", "1", "--quiet", csv,
            ], log: "batch", in: dir)
        defer {
            kill(process.processIdentifier, SIGCONT)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        func links() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: out.path + "/shl")) ?? []).filter {
                $0.hasSuffix(".txt")
            }.count
        }
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && links() < 3 && Date() < deadline { usleep(2000) }
        #expect(process.isRunning && links() < patients, "the batch ended before it could be caught")
        // Freeze the batch until it is caught outside a write into the site.
        let lockPath = site + "/" + SiteLock.fileName
        var caught = false
        for _ in 0..<400 where process.isRunning {
            kill(process.processIdentifier, SIGSTOP)
            usleep(3000)
            let fd = open(lockPath, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { close(fd) }
                if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                    flock(fd, LOCK_UN)
                    caught = true
                    break
                }
            }
            kill(process.processIdentifier, SIGCONT)
            usleep(2000)
        }
        try #require(caught, "the batch held the site's lock at every moment it was stopped")
        // The last patient's card is not made yet: revoke their rid while the batch is frozen.
        let last = String(format: "P-%08d", patients)
        #expect(!FileManager.default.fileExists(atPath: out.path + "/cards/\(last).smart-health-card"))
        let rid = try RID.derive(secret: try RIDSecretFile.read(secret), kid: kid, patientID: last)
        let revoked = try SiteTestSupport.cli(["revoke", "--site", site, "--key", key, "--rid", rid, "--force"])
        #expect(revoked.stdout.hasPrefix("revoked \(rid)"), "\(revoked.stdout)")
        kill(process.processIdentifier, SIGCONT)
        process.waitUntilExit()
        #expect(
            process.terminationStatus == 1,
            "\(String(decoding: (try? Data(contentsOf: errFile)) ?? Data(), as: UTF8.self))")
        let report = try TestSupport.report(out)
        #expect(report.count == patients)
        let line = try #require(report.first { $0["id"]?.stringValue == last })
        #expect(line["status"] == "rejected" && line["errors"]?[0]?["code"] == "RID_REVOKED", "\(line)")
        #expect(report.filter { $0["status"] == "issued" }.count == patients - 1)
    }
}
