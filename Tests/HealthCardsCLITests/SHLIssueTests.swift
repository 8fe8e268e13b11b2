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

/// `issue --shl` and `healthcards shl`, driven through the real CLI; link files opened by an independent
/// AES-GCM implementation (pyca/cryptography) and the link QR read back by zbar.
@Suite struct SHLIssueTests {
    static let expectedHeader = JSONValue.object([
        "alg": "dir", "enc": "A256GCM", "cty": "application/smart-health-card",
    ])

    /// The cards issued with links (each link's file decrypts to exactly its card, as the test below shows)
    /// pass the independent checker.
    @Test(
        .enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing),
        arguments: ["covid19-vaccination", "lab-result"])
    func linkedCardsPassIndependentChecker(template: String) throws {
        let dir = try TestSupport.tempDir("shl-check-\(template)")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: template, key: key, site: site, out: out)
        let check = try TestSupport.check(["--jwks", site + "/.well-known/jwks.json", out.path + "/cards"])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains(" 0 errors"), "\(check.stdout)")
    }

    /// Every sample card gets a link: a 0644 file in SITE/shl named by 43 random characters, a 0600 link
    /// text and QR in OUT/shl. Python decrypts each file with the link's key to exactly the card file, the
    /// card inside verifies (our verifier; the independent checker in the test below), and zbar reads each
    /// link QR back to exactly the link text.
    @Test(
        .enabled(if: SHLTestSupport.pythonCryptoAvailable, SHLTestSupport.pythonCryptoMissing),
        arguments: ["covid19-vaccination", "lab-result"])
    func roundTripEverySampleCard(template: String) throws {
        let dir = try TestSupport.tempDir("shl-\(template)")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: template, key: key, site: site, out: out)
        let lines = try TestSupport.report(out)
        let issued = lines.filter { $0["status"] == "issued" }
        #expect(!issued.isEmpty && issued.count == lines.count)
        #expect(FileIO.mode(site + "/shl") == 0o755 && FileIO.mode(out.path + "/shl") == 0o700)
        var ivs: Set<String> = []
        var keys: Set<String> = []
        let report = String(decoding: try SiteTestSupport.bytes(out.path + "/report.ndjson"), as: UTF8.self)
        #expect(!report.contains("shlink:/"), "the report lists the link by file name only")
        for line in issued {
            let id = try #require(line["id"]?.stringValue)
            let files = line["files"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(files.contains("shl/\(id).txt") && files.contains("shl/\(id).png"), "\(files)")
            let linkFile = out.path + "/shl/\(id).txt"
            #expect(FileIO.mode(linkFile) == 0o600 && FileIO.mode(out.path + "/shl/\(id).png") == 0o600)
            let text = try SHLTestSupport.linkText(out, id: id)
            let link = try SHLinkText.parse(text)
            #expect(link.flag == "U" && link.label == "SMART Health Card" && link.exp == nil && link.viewer == nil)
            #expect(link.url.count <= 128 && link.url.hasPrefix(SHLTestSupport.base + "/"))
            let fileName = String(link.url.dropFirst(SHLTestSupport.base.count + 1))
            #expect(SHLDestination.isFileName(fileName) && !fileName.contains(id))
            #expect(!report.contains(link.key) && !report.contains(fileName))
            let siteFile = try SHLTestSupport.siteFile(of: text, site: site)
            #expect(FileIO.mode(siteFile) == 0o644)
            let (plaintext, info) = try SHLTestSupport.pythonDecrypt(linkFile: linkFile, site: site, in: dir)
            #expect(plaintext == (try SiteTestSupport.bytes(out.path + "/cards/\(id).smart-health-card")))
            #expect(info["header"] == Self.expectedHeader)
            ivs.insert(info["iv"]?.stringValue ?? "")
            keys.insert(link.key)
            let symbols = try SHCQRCodeReader.read(png: try SiteTestSupport.bytes(out.path + "/shl/\(id).png"))
            #expect(symbols.map(\.text) == [text])
            #expect(symbols.first?.errorCorrection == .M)
        }
        #expect(ivs.count == issued.count && keys.count == issued.count, "a fresh key and IV for every file")
        #expect(FileIO.list(site + "/shl").count == issued.count)
        // Our verifier opens every link from the site folder and verifies the card inside.
        let verify = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, out.path + "/shl"])
        #expect(verify.status == 0, "\(verify.stdout)")
        // Each link is read twice, from its text and from its QR image; each opens its card.
        #expect(
            verify.stdout.contains(
                "verify: \(2 * issued.count) credential(s), \(2 * issued.count) link(s) checked, 0 error(s)"),
            "\(verify.stdout)")
    }

    /// A card of 1,500+ JWS characters is refused without --shl (the message points to it) and issued with a
    /// working link (and no QR of its own) with it.
    @Test func oversizedCardGetsALink() throws {
        let dir = try TestSupport.tempDir("shl-big")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let csv = try SHLTestSupport.manyDosesCSV(doses: 24, in: dir)
        let plain = dir.appendingPathComponent("plain")
        try SiteTestSupport.cli(
            [
                "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--site", site, "--template",
                SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", plain.path,
                "--quiet", csv,
            ], expect: 1)
        let refused = try TestSupport.report(plain)[0]
        #expect(refused["status"] == "rejected")
        let message = refused["errors"]?[0]?["message"]?.stringValue ?? ""
        #expect(
            message.contains("one QR holds at most 1195") && message.contains("--shl BASE_URL --site SITE"),
            "\(message)")

        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", csv: csv, key: key, site: site, out: out)
        let line = try TestSupport.report(out)[0]
        #expect(line["status"] == "issued")
        #expect(line["files"] == ["cards/P-9001.smart-health-card", "shl/P-9001.txt", "shl/P-9001.png"])
        let warnings = line["warnings"]?.arrayValue?.compactMap { $0["message"]?.stringValue } ?? []
        #expect(warnings.contains { $0.contains("has no QR image of its own") }, "\(warnings)")
        let jws = try SiteTestSupport.jws(in: out, id: "P-9001")
        #expect(jws.count >= 1500, "the test card must be over 1,500 characters; it is \(jws.count)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/qr/P-9001.png"))
        let verify = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, out.path + "/shl/P-9001.txt"])
        #expect(verify.status == 0 && verify.stdout.contains("signature verified"), "\(verify.stdout)")
        #expect(verify.stdout.contains("JWS_TOO_LONG"), "the card inside is the long one: \(verify.stdout)")
        if SHLTestSupport.pythonCryptoAvailable {
            let (plaintext, _) = try SHLTestSupport.pythonDecrypt(
                linkFile: out.path + "/shl/P-9001.txt", site: site, in: dir)
            #expect(plaintext == (try SiteTestSupport.bytes(out.path + "/cards/P-9001.smart-health-card")))
        }
    }

    /// Label with the name (only when asked), exp, viewer: in the link and its QR; exp judged by `verify --now`.
    @Test func labelExpAndViewer() throws {
        let dir = try TestSupport.tempDir("shl-options")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out,
            extra: [
                "--shl-label", "Vaccinations of {name}", "--shl-exp", "4102444800", "--viewer",
                "https://viewer.example.org/#",
            ])
        #expect(run.stderr.contains("puts the Patient's name in each link's label"))
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        #expect(text.hasPrefix("https://viewer.example.org/#shlink:/"))
        let link = try SHLinkText.parse(text)
        #expect(link.label == "Vaccinations of Ada M. Testperson" && link.exp == 4_102_444_800)
        let symbols = try SHCQRCodeReader.read(png: try SiteTestSupport.bytes(out.path + "/shl/P-1001.png"))
        #expect(symbols.map(\.text) == [text])
        let fresh = try TestSupport.cli([
            "verify", "--jwks", site, "--shl-site", site, "--now", "1800000000", out.path + "/shl/P-1001.txt",
        ])
        #expect(fresh.status == 0, "\(fresh.stdout)")
        #expect(fresh.stdout.contains("label 'Vaccinations of Ada M. Testperson'"))
        let stale = try TestSupport.cli([
            "verify", "--jwks", site, "--shl-site", site, "--now", "4102444801", out.path + "/shl/P-1001.txt",
        ])
        // exp is a hint (links-specification): past it, a warning, not an error.
        #expect(stale.status == 0 && stale.stdout.contains("warning SHL_EXPIRED"), "\(stale.stdout)")
    }

    /// A repeated run keeps every link as it is; --force re-encrypts each file with the same key and a fresh
    /// IV (the link handed out keeps working); a withdrawn link stays dead: the next run makes a new one.
    /// A link kept as it is (a run with another base URL of the same site, whose file is elsewhere) is reported as
    /// kept, saying what was not done (LINK_KEPT, a warning), and a link whose file now opens a new card as updated
    /// (LINK_UPDATED): both were LINK_FAILED, the code of a link that could not be made.
    @Test func keptAndUpdatedLinksAreNotReportedAsFailed() throws {
        let dir = try TestSupport.tempDir("shl-kept")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--no-qr"])
        let link = try SHLTestSupport.linkText(out, id: "P-1001")
        func warnings(_ id: String) throws -> [JSONValue] {
            try #require(try TestSupport.report(out).first { $0["id"] == .string(id) })["warnings"]?.arrayValue ?? []
        }
        let templates = SiteTestSupport.templates
        try SiteTestSupport.cli([
            "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--site", site, "--shl",
            SHLTestSupport.issuer + "/other/shl", "--template", templates.appendingPathComponent("covid19-vaccination.json").path,
            "--out", out.path, "--nbf", "1700000000", "--quiet", "--no-qr",
            templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        let kept = try warnings("P-1001")
        #expect(kept.map { $0["code"] } == ["LINK_KEPT"], "\(kept)")
        #expect(
            kept.first?["message"]?.stringValue?.hasPrefix("shl/P-1001.txt was kept as it is: it is a live link whose file ") == true
                && kept.first?["message"]?.stringValue?.contains("neither updated its file to this card nor made a link under \(SHLTestSupport.issuer)/other/shl") == true,
            "\(kept)")
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == link)

        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--no-qr", "--force"], nbf: "1700000100")
        let updated = try warnings("P-1001")
        #expect(updated.contains { $0["code"] == "LINK_UPDATED" && $0["message"]?.stringValue?.contains("now opens this run's card") == true }, "\(updated)")
        #expect(!updated.contains { $0["code"] == "LINK_FAILED" }, "\(updated)")
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == link)
    }

    @Test func rerunsKeepLinksAndWithdrawnLinksStayDead() throws {
        let dir = try TestSupport.tempDir("shl-rerun")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out)
        let first = try SHLTestSupport.linkText(out, id: "P-1001")
        let firstFile = try SHLTestSupport.siteFile(of: first, site: site)
        let firstBytes = try SiteTestSupport.bytes(firstFile)

        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out)
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == first)
        #expect(try SiteTestSupport.bytes(firstFile) == firstBytes)

        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--force"])
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == first)
        let updated = JWE(compact: String(decoding: try SiteTestSupport.bytes(firstFile), as: UTF8.self))
        let linkKey = try #require(AES256Key.decode(base64url: try SHLinkText.parse(first).key))
        #expect(try updated.parts().iv != JWE(compact: String(decoding: firstBytes, as: UTF8.self)).parts().iv)
        #expect(
            try updated.decrypt(key: linkKey).plaintext
                == SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card"))
        let warnings =
            try TestSupport.report(out)[0]["warnings"]?.arrayValue?.compactMap { $0["message"]?.stringValue } ?? []
        #expect(warnings.contains { $0.contains("same key and a fresh IV") }, "\(warnings)")
        #expect(FileIO.list(site + "/shl").count == 4)

        let withdraw = try SiteTestSupport.cli(["revoke", "--site", site, "--link", out.path + "/shl/P-1001.txt"])
        #expect(
            withdraw.stdout.contains("withdrew \(out.path)/shl/P-1001.txt: deleted \(firstFile)"), "\(withdraw.stdout)")
        #expect(!FileManager.default.fileExists(atPath: firstFile))
        let dead = try TestSupport.cli(["verify", "--shl-site", site, out.path + "/shl/P-1001.txt"])
        #expect(dead.status == 1 && dead.stdout.contains("error SHL_FILE_MISSING"), "\(dead.stdout)")
        // Withdrawn again: the first withdrawal's record (and its time) is kept, not rewritten.
        let marker = out.path + "/shl/P-1001.withdrawn"
        let recorded = try #require(try JSONParser.parse(try SiteTestSupport.bytes(marker)).objectValue)
        var earlier = recorded
        earlier["withdrawn"] = .integer(1_700_000_000)
        let earlierBytes = JSONWriter.minified(.object(earlier))
        try FileIO.writeAtomically(earlierBytes, to: marker)
        let again = try SiteTestSupport.cli(["revoke", "--site", site, "--link", out.path + "/shl/P-1001.txt"])
        #expect(again.stdout.contains("already withdrawn"))
        #expect(try SiteTestSupport.bytes(marker) == earlierBytes)
        #expect(again.stdout.contains("kept the withdrawal recorded in \(marker)"), "\(again.stdout)")

        // The next run makes no new link for a withdrawn one (LinkMemoryTests); named, it does.
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out)
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == first)
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--shl-renew", "P-1001"])
        let renewed = try SHLTestSupport.linkText(out, id: "P-1001")
        #expect(try SHLinkText.parse(renewed).url != SHLinkText.parse(first).url)
        #expect(try SHLinkText.parse(renewed).key != SHLinkText.parse(first).key)
        #expect(!FileManager.default.fileExists(atPath: firstFile), "the withdrawn link stays dead")
        let line = try TestSupport.report(out)[0]
        #expect(line["alreadyIssued"] == true)
        #expect(
            line["warnings"]?.arrayValue?.contains {
                $0["message"]?.stringValue?.contains("the old link stays dead") == true
            } == true)
    }

    /// A record rejected on a later run, whose earlier card has a link, is told that the link still opens it.
    @Test func rejectedRecordNamesItsLiveLink() throws {
        let dir = try TestSupport.tempDir("shl-rejected")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        let sample = try String(
            contentsOf: SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv"),
            encoding: .utf8)
        let csv = try TestSupport.write(sample, to: "export.csv", in: dir)
        try SHLTestSupport.issue(template: "covid19-vaccination", csv: csv, key: key, site: site, out: out)
        // CVX 998 ("no vaccine administered") on P-1001's first row: the record is now rejected.
        var lines = sample.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let row = try #require(lines.firstIndex { $0.contains(",P-1001,") })
        var fields = lines[row].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        fields[13] = "998"
        lines[row] = fields.joined(separator: ",")
        try TestSupport.write(lines.joined(separator: "\n"), to: "export.csv", in: dir)
        try SHLTestSupport.issue(template: "covid19-vaccination", csv: csv, key: key, site: site, out: out, expect: 1)
        let line = try #require(try TestSupport.report(out).first { $0["id"] == "P-1001" })
        #expect(line["status"] == "rejected")
        let warnings = line["warnings"]?.arrayValue?.compactMap { $0["message"]?.stringValue } ?? []
        #expect(
            warnings.contains {
                $0.contains("shl/P-1001.txt is the SMART Health Link of that earlier card and still opens it")
            },
            "\(warnings)")
    }

    /// `revoke --link` deletes only a file the link opens, in the site it was made for.
    @Test func withdrawRefusesAFileTheLinkDoesNotOpen() throws {
        let dir = try TestSupport.tempDir("shl-withdraw")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "lab-result", key: key, site: site, out: out)
        let text = try SHLTestSupport.linkText(out, id: "L-2001")
        var link = try SHLinkText.parse(text)
        link.key = try AES256Key.random().base64url
        let wrong = try TestSupport.write(link.text, to: "wrong-key.txt", in: dir)
        let refused = try SiteTestSupport.cli(["revoke", "--site", site, "--link", wrong], expect: 2)
        #expect(refused.stderr.contains("does not open with this link's key"), "\(refused.stderr)")
        #expect(FileManager.default.fileExists(atPath: try SHLTestSupport.siteFile(of: text, site: site)))
        // A link of another issuer's site is refused by name.
        let other = dir.appendingPathComponent("other")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        let otherSite = try SHLTestSupport.site(in: other, issuer: "https://other.example.org").site
        let foreign = try SiteTestSupport.cli(
            ["revoke", "--site", otherSite, "--link", out.path + "/shl/L-2001.txt"], expect: 2)
        #expect(foreign.stderr.contains("is not a link file of site"), "\(foreign.stderr)")
        // The link text itself is accepted too.
        let byText = try SiteTestSupport.cli(["revoke", "--site", site, "--link", text])
        #expect(byText.stdout.contains("withdrew argument 1"), "\(byText.stdout)")
        #expect(!byText.stdout.contains("shlink:/"))
    }

    /// `healthcards shl` links cards already issued, and refuses a card a verifier would reject.
    @Test func shlCommandLinksIssuedCards() throws {
        let dir = try TestSupport.tempDir("shl-command")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key, out: out)
        let cards = try VerifyFixtures.files(in: out.appendingPathComponent("cards"), suffix: ".smart-health-card").map(
            \.path)
        let run = try SiteTestSupport.cli(
            ["shl", "--base-url", SHLTestSupport.base, "--site", site, "--label", "Vaccination record"] + cards)
        #expect(run.stdout.split(separator: "\n").count == cards.count)
        #expect(!run.stdout.contains("shlink:/"))
        let link = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1002"))
        #expect(link.label == "Vaccination record")
        #expect(FileManager.default.fileExists(atPath: out.path + "/shl/P-1002.png"))
        let verify = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, out.path + "/shl"])
        #expect(verify.status == 0, "\(verify.stdout)")

        // A card whose signature was altered gets no link.
        let bad = dir.appendingPathComponent("bad/cards")
        try FileManager.default.createDirectory(at: bad, withIntermediateDirectories: true)
        let jws = try SiteTestSupport.jws(in: out, id: "P-1001")
        let flipped = String(jws.dropLast()) + (jws.last == "A" ? "B" : "A")
        let badCard = try TestSupport.write(
            #"{"verifiableCredential":["\#(flipped)"]}"#, to: "P-1001.smart-health-card", in: bad)
        let refused = try SiteTestSupport.cli(
            ["shl", "--base-url", SHLTestSupport.base, "--site", site, badCard], expect: 1)
        #expect(refused.stderr.contains("no link made"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/bad/shl/P-1001.txt"))
        // A card outside a cards/ folder needs --out; --out inside the site is refused.
        let loose = try TestSupport.write(
            String(decoding: try SiteTestSupport.bytes(cards[0]), as: UTF8.self), to: "loose.smart-health-card", in: dir
        )
        let noOut = try SiteTestSupport.cli(
            ["shl", "--base-url", SHLTestSupport.base, "--site", site, loose], expect: 2)
        #expect(noOut.stderr.contains("give --out DIR"))
        let inSite = try SiteTestSupport.cli(
            ["shl", "--base-url", SHLTestSupport.base, "--site", site, "--out", site + "/x", loose], expect: 2)
        #expect(inSite.stderr.contains("inside the published site"), "\(inSite.stderr)")
    }

    @Test func usageErrors() throws {
        let dir = try TestSupport.tempDir("shl-usage")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let template = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path
        let csv = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path
        func issue(_ extra: [String]) throws -> TestSupport.Run {
            try SiteTestSupport.cli(
                [
                    "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--template", template, "--out",
                    dir.path + "/out", "--quiet",
                ]
                    + extra + [csv], expect: 2)
        }
        #expect(try issue(["--shl", SHLTestSupport.base]).stderr.contains("--shl needs --site SITE"))
        #expect(try issue(["--site", site, "--shl-label", "x"]).stderr.contains("give --shl BASE_URL too"))
        #expect(
            try issue(["--site", site, "--shl", "https://cdn.example.org/shl"]).stderr.contains(
                "is not under the issuer URL"))
        #expect(
            try issue(["--site", site, "--shl", SHLTestSupport.base, "--viewer", "https://v.example.org/"]).stderr
                .contains("must end with '#'"))
        #expect(
            try issue(["--site", site, "--shl", SHLTestSupport.base, "--shl-exp", "1000"]).stderr.contains("has passed")
        )
        #expect(
            try issue(["--site", site, "--shl", SHLTestSupport.base, "--shl-label", "{id}"]).stderr.contains(
                "placeholder other than {name}"))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"), "nothing written")
    }

    /// `shl` takes the output lock `issue` takes: while another run holds OUT (here this test process, as an
    /// `issue` would), `shl` into OUT and `issue --shl` into OUT both stop at once with status 2 and write no
    /// link, so neither can race the other on shl/<id>.txt; once the lock is released, `shl` links the card.
    @Test func shlAndIssueShareTheOutputLock() throws {
        let dir = try TestSupport.tempDir("shl-lock")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key, out: out)
        let card = out.path + "/cards/P-1001.smart-health-card"
        let siteFiles = try FileManager.default.contentsOfDirectory(atPath: site)
        var lock: OutputLock? = try OutputLock(folder: out.path, mode: 0o600)
        let shl = try SiteTestSupport.cli(
            ["shl", "--base-url", SHLTestSupport.base, "--site", site, card], expect: 2)
        #expect(shl.stderr.contains("is writing into \(out.path) right now"), "\(shl.stderr)")
        let issue = try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, expect: 2)
        #expect(issue.stderr.contains("is writing into \(out.path) right now"), "\(issue.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/shl/P-1001.txt"))
        // Nor does a refused run make the PDF folder or the combined PDF.
        let printed = try TestSupport.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template",
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path,
            "--pdf", "--pdf-combined", dir.path + "/all.pdf",
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(printed.status == 2 && printed.stderr.contains("right now"), "\(printed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/pdf"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("all") }.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: site) == siteFiles)
        #expect(FileIO.list(site + "/shl").isEmpty)
        withExtendedLifetime(lock) {}
        lock = nil
        // A process another test spawns at this instant holds a copy of this process's descriptors (the lock's
        // too) until it execs, so the released lock may look held for a moment: retry for a few seconds.
        var linked = try TestSupport.cli(["shl", "--base-url", SHLTestSupport.base, "--site", site, card])
        for _ in 0..<50 where linked.status == 2 && linked.stderr.contains("right now") {
            Thread.sleep(forTimeInterval: 0.1)
            linked = try TestSupport.cli(["shl", "--base-url", SHLTestSupport.base, "--site", site, card])
        }
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001")).flag == "U")
    }
}
