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

/// Links with FHIR content (`--content bundle|both`), the Kill the Clipboard rules (`--ktc`) and long-term links
/// (`LU`), through the real CLI; files opened by pyca/cryptography and the Bundle read by `fhir.resources` (R4B
/// models, which read R4 Bundles of these resources).
@Suite struct SHLContentTests {
    /// Whether the test Python has `fhir.resources` (`Tests/requirements.txt`).
    static let fhirAvailable: Bool = {
        guard SHLTestSupport.pythonCryptoAvailable, let python = TestSupport.python else { return false }
        return (try? TestSupport.run(python, ["-c", "import fhir.resources.R4B.bundle"]))?.status == 0
    }()
    static let fhirMissing: Comment = "no test Python with fhir.resources and cryptography at .build/test-venv (run `make test`); skipped"

    /// Reads a Bundle with fhir.resources' models (which refuse unknown members and wrong types) and prints what
    /// a receiver sees: type, timestamp, fullUrls, resource types and every reference.
    static let fhirScript = """
        import json, sys
        from fhir.resources.R4B.bundle import Bundle
        bundle = Bundle.model_validate(json.load(open(sys.argv[1])))
        refs = []
        def walk(value):
            if isinstance(value, dict):
                for k, v in value.items():
                    if k == "reference" and isinstance(v, str): refs.append(v)
                    walk(v)
            elif isinstance(value, list):
                for v in value: walk(v)
        walk(json.load(open(sys.argv[1])))
        print(json.dumps({"type": bundle.type, "timestamp": bundle.timestamp.isoformat(),
            "fullUrls": [e.fullUrl for e in bundle.entry],
            "types": [e.resource.get_resource_type() for e in bundle.entry], "references": refs}))
        """

    /// `--content bundle`: the file is `application/fhir+json`, a collection with the card's Patient and resources
    /// (urn:uuid fullUrls, references rewritten, timestamp the card's nbf) that fhir.resources reads; verify checks
    /// its shape and says so; a rerun over the same card leaves the file as it is.
    @Test(.enabled(if: fhirAvailable, fhirMissing))
    func bundleRoundTrip() throws {
        let dir = try TestSupport.tempDir("shl-bundle")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--content", "bundle"])
        let linkFile = out.path + "/shl/P-1001.txt"
        let (plaintext, info) = try SHLTestSupport.pythonDecrypt(linkFile: linkFile, site: site, in: dir)
        #expect(info["header"] == .object(["alg": "dir", "enc": "A256GCM", "cty": "application/fhir+json"]))
        let bundleFile = try TestSupport.write(String(decoding: plaintext, as: UTF8.self), to: "bundle.json", in: dir)
        let python = try #require(TestSupport.python)
        let run = try TestSupport.run(python, ["-c", Self.fhirScript, bundleFile])
        #expect(run.status == 0, "fhir.resources: \(run.stderr)")
        let seen = try JSONParser.parse(Array(run.stdout.utf8))
        // What the card holds, read by our verifier from the card file itself.
        let card = try SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card")
        let reports = try FileVerifier(keySets: [site], now: 1_800_000_000).verify([out.path + "/cards/P-1001.smart-health-card"])
        let cardBundle = try #require(reports.first?.payload?["vc"]?["credentialSubject"]?["fhirBundle"])
        let cardTypes = (cardBundle["entry"]?.arrayValue ?? []).compactMap { $0["resource"]?["resourceType"]?.stringValue }
        #expect(seen["type"] == "collection")
        #expect(seen["timestamp"]?.stringValue == "2023-11-14T22:13:20+00:00", "the card's nbf, 1700000000")
        #expect(seen["types"]?.arrayValue?.compactMap(\.stringValue) == cardTypes && cardTypes.first == "Patient")
        let fullUrls = seen["fullUrls"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(fullUrls.count == cardTypes.count && Set(fullUrls).count == fullUrls.count)
        #expect(fullUrls.allSatisfy { $0.hasPrefix("urn:uuid:") && $0.count == 45 }, "\(fullUrls)")
        let references = seen["references"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(!references.isEmpty && references.allSatisfy { $0 == fullUrls[0] }, "each Immunization names the Patient")
        #expect(!String(decoding: plaintext, as: UTF8.self).contains("resource:"))
        // The resources are the card's, but for the rewritten references.
        let shared = try JSONParser.parse(plaintext)
        for (index, entry) in (cardBundle["entry"]?.arrayValue ?? []).enumerated() {
            let text = String(decoding: JSONWriter.minified(entry["resource"]!), as: UTF8.self)
                .replacingOccurrences(of: "\"resource:0\"", with: "\"\(fullUrls[0])\"")
            #expect(String(decoding: JSONWriter.minified(shared["entry"]![index]!["resource"]!), as: UTF8.self) == text)
        }
        #expect(try SharedBundle.make(cardFile: card) == plaintext, "the same card gives the same Bundle")

        let verify = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, linkFile])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(verify.stdout.contains("content application/fhir+json") && verify.stdout.contains("Patient, Immunization"))
        #expect(!verify.stdout.contains("SHL_CONTENT_NOT_CHECKED") && !verify.stdout.contains("SHL_BUNDLE"), "\(verify.stdout)")

        let siteFile = try SHLTestSupport.siteFile(of: try SHLTestSupport.linkText(out, id: "P-1001"), site: site)
        let before = try SiteTestSupport.bytes(siteFile)
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--content", "bundle"])
        #expect(try SiteTestSupport.bytes(siteFile) == before, "an unchanged card keeps its file (and IV)")
    }

    /// `--content both` on a static link carries the signed card (one file), and says so.
    @Test func bothCarriesTheCard() throws {
        let dir = try TestSupport.tempDir("shl-both")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--content", "both"])
        #expect(run.stderr.contains("each link carries the signed card"), "\(run.stderr)")
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        let jwe = JWE(compact: String(decoding: try SiteTestSupport.bytes(try SHLTestSupport.siteFile(of: text, site: site)), as: UTF8.self))
        let opened = try jwe.decrypt(key: try #require(AES256Key.decode(base64url: try SHLinkText.parse(text).key)))
        #expect(opened.parts.contentType == JWE.smartHealthCard)
        #expect(opened.plaintext == (try SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card")))
        if SHLTestSupport.pythonCryptoAvailable {
            // And by the independent decryptor: the same card, the same content type.
            let (plaintext, info) = try SHLTestSupport.pythonDecrypt(linkFile: out.path + "/shl/P-1001.txt", site: site, in: dir)
            #expect(plaintext == opened.plaintext && info["header"]?["cty"] == "application/smart-health-card")
        }
        let bad = try SiteTestSupport.cli(
            ["shl", "--base-url", SHLTestSupport.base, "--site", site, "--content", "pdf", out.path + "/cards/P-1001.smart-health-card"],
            expect: 2)
        #expect(bad.stderr.contains("--content 'pdf' is not card, bundle or both"), "\(bad.stderr)")
    }

    /// `verify` on FHIR content that is not a readable Bundle: each problem an SHL_BUNDLE error, never an OK.
    @Test func verifyFindsBundleProblems() throws {
        let dir = try TestSupport.tempDir("shl-bundle-bad")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--content", "bundle"])
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        let linkKey = try #require(AES256Key.decode(base64url: try SHLinkText.parse(text).key))
        let siteFile = try SHLTestSupport.siteFile(of: text, site: site)
        let cases: [(content: String, says: String)] = [
            (#"{"resourceType":"Patient"}"#, "resourceType is 'Patient', not Bundle"),
            (#"[1,2]"#, "not a JSON object"),
            (
                #"{"resourceType":"Bundle","type":"collection","timestamp":"2023-11-14","entry":[{"fullUrl":"urn:uuid:a","resource":{"resourceType":"Patient","birthDate":"1960-02-30"}},{"fullUrl":"urn:uuid:a","resource":{"resourceType":"Immunization","patient":{"reference":"urn:uuid:b"},"occurrenceDateTime":"yesterday"}}]}"#,
                "timestamp is not a FHIR instant"
            ),
            (#"{"resourceType":"Bundle","type":"pile","entry":[{"resource":{"resourceType":"Observation"}}]}"#, "holds no Patient"),
            (
                #"{"resourceType":"Bundle","type":"collection","entry":[{"fullUrl":"urn:uuid:p","resource":{"resourceType":"Patient"}},{"fullUrl":"urn:uuid:d","resource":{"resourceType":"DocumentReference","content":[{"attachment":{"contentType":"application/pdf","data":"aGVsbG8="}}]}}]}"#,
                "that are not a PDF"
            ),
        ]
        for (content, says) in cases {
            let jwe = try JWE.encrypt(Array(content.utf8), key: linkKey, contentType: SharedBundle.contentType)
            try FileIO.writeAtomically(Array(jwe.compact.utf8), to: siteFile, access: .published, sync: false)
            let verify = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, out.path + "/shl/P-1001.txt"])
            #expect(verify.status == 1, "\(content): \(verify.stdout)")
            #expect(verify.stdout.contains("SHL_BUNDLE") && verify.stdout.contains(says), "\(content): \(verify.stdout)")
        }
        // The third case lists each of its problems.
        let third = SharedBundleCheck.check(Array(cases[2].content.utf8)).problems.joined(separator: "\n")
        for part in ["not unique", "birthDate is not a FHIR date", "points at no entry", "occurrenceDateTime is not a FHIR dateTime"] {
            #expect(third.contains(part), "\(third)")
        }
        // Hostile shapes never trap: deep nesting, huge arrays of junk.
        let deep = String(repeating: "[", count: 5000) + String(repeating: "]", count: 5000)
        #expect(!SharedBundleCheck.check(Array(deep.utf8)).problems.isEmpty)
        let nested =
            #"{"resourceType":"Bundle","type":"collection","entry":[{"resource":{"resourceType":"Patient","a":"#
            + String(repeating: #"{"b":"#, count: 200) + "1" + String(repeating: "}", count: 200) + "}}]}"
        #expect(SharedBundleCheck.check(Array(nested.utf8)).problems.contains { $0.contains("nested more than") })
    }

    /// `--ktc`: exp required and at most 48 hours ahead, content bundle by default, flag U, warnings where the
    /// links differ from the profile (card content, LU) and about the audit it asks for.
    @Test func ktcRules() throws {
        let dir = try TestSupport.tempDir("shl-ktc")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        let noExp = try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--ktc"], expect: 2)
        #expect(noExp.stderr.contains("requires exp; give --shl-exp"), "\(noExp.stderr)")
        let tooLong = try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--ktc", "--shl-exp", "+49h"], expect: 2)
        #expect(tooLong.stderr.contains("at most 48 hours"), "\(tooLong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path + "/shl"), "nothing written when refused")
        let before = Int64(Date().timeIntervalSince1970)
        let run = try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--ktc", "--shl-exp", "+15m"])
        #expect(run.stderr.contains("SHALL audit every access") && run.stderr.contains("shl audit"), "\(run.stderr)")
        #expect(!run.stderr.contains("carry the signed card"))
        let link = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001"))
        let exp = try #require(link.exp)
        #expect(link.flag == "U" && exp >= before + 900 && exp <= Int64(Date().timeIntervalSince1970) + 900)
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        let opened = try JWE(compact: String(decoding: try SiteTestSupport.bytes(try SHLTestSupport.siteFile(of: text, site: site)), as: UTF8.self))
            .decrypt(key: try #require(AES256Key.decode(base64url: link.key)))
        #expect(opened.parts.contentType == SharedBundle.contentType)

        let card = try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: dir.appendingPathComponent("out2"),
            extra: ["--ktc", "--shl-exp", "+24h", "--content", "card", "--shl-long-term"])
        #expect(card.stderr.contains("carry the signed card (--content card)"), "\(card.stderr)")
        #expect(card.stderr.contains("these are LU (long-term)"), "\(card.stderr)")
        let help = try TestSupport.cli(["shl", "--help"])
        #expect(help.stdout.contains("5-15 minutes") && help.stdout.contains("24-48") && help.stdout.contains("at most 48 hours"))
    }

    /// `--shl-long-term`: flag LU; a later run with changed content re-encrypts it under the same key and file
    /// name with a fresh IV (the old ciphertext is gone); a run without the option keeps the link long-term;
    /// withdrawal and renewal work as for U links.
    @Test func longTermLinksUpdateInPlace() throws {
        let dir = try TestSupport.tempDir("shl-lu")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--shl-long-term", "--content", "bundle"])
        let first = try SHLTestSupport.linkText(out, id: "P-1001")
        let link = try SHLinkText.parse(first)
        #expect(link.flag == "LU")
        let siteFile = try SHLTestSupport.siteFile(of: first, site: site)
        let firstJWE = String(decoding: try SiteTestSupport.bytes(siteFile), as: UTF8.self)
        let linkKey = try #require(AES256Key.decode(base64url: link.key))
        let firstContent = try JSONParser.parse(try JWE(compact: firstJWE).decrypt(key: linkKey).plaintext)

        // A reissued card (another nbf): the content changes, the link does not.
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out,
            extra: ["--force", "--content", "bundle"], nbf: "1700003600")
        let second = try SHLTestSupport.linkText(out, id: "P-1001")
        #expect(second == first, "same key, URL and flag LU (kept without the option)")
        let secondJWE = String(decoding: try SiteTestSupport.bytes(siteFile), as: UTF8.self)
        #expect(secondJWE != firstJWE)
        #expect(try JWE(compact: secondJWE).parts().iv != (try JWE(compact: firstJWE).parts().iv), "a fresh IV")
        let secondContent = try JSONParser.parse(try JWE(compact: secondJWE).decrypt(key: linkKey).plaintext)
        #expect(firstContent["timestamp"] == "2023-11-14T22:13:20Z" && secondContent["timestamp"] == "2023-11-14T23:13:20Z")
        #expect(FileIO.list(site + "/shl").count == Set(try TestSupport.report(out).compactMap { $0["id"]?.stringValue }).count)

        // Withdrawn, it stays dead; --shl-renew makes a new LU link.
        try SiteTestSupport.cli(["revoke", "--site", site, "--link", out.path + "/shl/P-1001.txt"])
        #expect(!FileManager.default.fileExists(atPath: siteFile))
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out,
            extra: ["--shl-long-term", "--shl-renew", "P-1001"])
        let renewed = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001"))
        #expect(renewed.flag == "LU" && renewed.key != link.key && renewed.url != link.url)
    }
    /// `shl --update`: after the cards were reissued without links, it re-encrypts each link's file with the
    /// current content (same key and file name, fresh IV) and makes no link for a card that has none.
    @Test func shlUpdateReencryptsCurrentContent() throws {
        let dir = try TestSupport.tempDir("shl-update")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--shl-long-term", "--content", "bundle"])
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        let link = try SHLinkText.parse(text)
        let linkKey = try #require(AES256Key.decode(base64url: link.key))
        let siteFile = try SHLTestSupport.siteFile(of: text, site: site)
        let before = String(decoding: try SiteTestSupport.bytes(siteFile), as: UTF8.self)
        // Reissued without --shl: the link still opens the old Bundle.
        let templates = SiteTestSupport.templates
        try SiteTestSupport.cli([
            "issue", "--issuer", SHLTestSupport.issuer, "--key", key, "--template",
            templates.appendingPathComponent("covid19-vaccination.json").path, "--out", out.path, "--nbf", "1700007200",
            "--force", "--quiet", templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(String(decoding: try SiteTestSupport.bytes(siteFile), as: UTF8.self) == before)
        let card = out.path + "/cards/P-1001.smart-health-card"
        let stray = dir.appendingPathComponent("other/cards")
        try FileManager.default.createDirectory(at: stray, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: card, toPath: stray.path + "/P-9.smart-health-card")
        let run = try SiteTestSupport.cli(
            [
                "shl", "--update", "--content", "bundle", "--base-url", SHLTestSupport.base, "--site", site, card,
                stray.path + "/P-9.smart-health-card",
            ], expect: 1)
        #expect(run.stderr.contains("no link updated"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/other/shl/P-9.txt"))
        #expect(try SHLTestSupport.linkText(out, id: "P-1001") == text, "same link: key, URL, flag LU")
        let after = String(decoding: try SiteTestSupport.bytes(siteFile), as: UTF8.self)
        let ivs = (try JWE(compact: after).parts().iv, try JWE(compact: before).parts().iv)
        #expect(after != before && ivs.0 != ivs.1)
        let content = try JSONParser.parse(try JWE(compact: after).decrypt(key: linkKey).plaintext)
        #expect(content["timestamp"] == "2023-11-15T00:13:20Z", "the reissued card's nbf, 1700007200")
        #expect(try SharedBundle.make(cardFile: try SiteTestSupport.bytes(card)) == (try JWE(compact: after).decrypt(key: linkKey).plaintext))
    }
    /// `issue --pdf --shl --content bundle`: the printed card rides in the Bundle as a DocumentReference (LOINC
    /// 60591-5) whose attachment is exactly `pdf/<id>.pdf`; fhir.resources reads it; verify checks it is a PDF; a
    /// rerun leaves the file as it is.
    @Test(.enabled(if: fhirAvailable, fhirMissing))
    func pdfRidesInTheBundle() throws {
        let dir = try TestSupport.tempDir("shl-bundle-pdf")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--content", "bundle", "--pdf", "--no-qr"])
        let linkFile = out.path + "/shl/P-1001.txt"
        let (plaintext, _) = try SHLTestSupport.pythonDecrypt(linkFile: linkFile, site: site, in: dir)
        let bundleFile = try TestSupport.write(String(decoding: plaintext, as: UTF8.self), to: "bundle.json", in: dir)
        let run = try TestSupport.run(try #require(TestSupport.python), ["-c", Self.fhirScript, bundleFile])
        #expect(run.status == 0, "fhir.resources: \(run.stderr)")
        let seen = try JSONParser.parse(Array(run.stdout.utf8))
        #expect(seen["types"]?.arrayValue?.last == "DocumentReference")
        let shared = try JSONParser.parse(plaintext)
        let document = try #require(shared["entry"]?.arrayValue?.last?["resource"])
        #expect(document["type"]?["coding"]?[0]?["system"] == "http://loinc.org" && document["type"]?["coding"]?[0]?["code"] == "60591-5")
        #expect(document["subject"]?["reference"] == shared["entry"]?[0]?["fullUrl"])
        let attachment = try #require(document["content"]?[0]?["attachment"])
        #expect(attachment["contentType"] == "application/pdf")
        let data = try #require(Data(base64Encoded: attachment["data"]?.stringValue ?? ""))
        #expect([UInt8](data) == (try SiteTestSupport.bytes(out.path + "/pdf/P-1001.pdf")), "the printed card itself")
        let verify = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, linkFile])
        #expect(verify.status == 0 && verify.stdout.contains("DocumentReference"), "\(verify.stdout)")
        let report = try TestSupport.report(out)
        #expect(report.allSatisfy { ($0["warnings"]?.arrayValue ?? []).isEmpty }, "a link made with its PDF is no news: \(report)")

        let siteFile = try SHLTestSupport.siteFile(of: try SHLTestSupport.linkText(out, id: "P-1001"), site: site)
        let before = try SiteTestSupport.bytes(siteFile)
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--content", "bundle", "--pdf", "--no-qr"])
        #expect(try SiteTestSupport.bytes(siteFile) == before)
    }
    /// `verify --ktc` judges links against the profile: a `--ktc` link passes; no exp, no U, a P and a foreign
    /// content type are SHL_KTC errors; an exp more than 48 hours ahead is a warning; without --ktc none of it.
    @Test func verifyJudgesTheProfile() throws {
        let dir = try TestSupport.tempDir("shl-verify-ktc")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let ktc = dir.appendingPathComponent("ktc")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: ktc, extra: ["--ktc", "--shl-exp", "+15m", "--no-qr"])
        let good = try TestSupport.cli(["verify", "--ktc", "--jwks", site, "--shl-site", site, ktc.path + "/shl/P-1001.txt"])
        #expect(good.status == 0 && !good.stdout.contains("SHL_KTC"), "\(good.stdout)")

        let plain = dir.appendingPathComponent("plain")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: plain, extra: ["--no-qr"])
        let noExp = try TestSupport.cli(["verify", "--ktc", "--jwks", site, "--shl-site", site, plain.path + "/shl/P-1001.txt"])
        #expect(noExp.status == 1 && noExp.stdout.contains("error SHL_KTC") && noExp.stdout.contains("requires exp"), "\(noExp.stdout)")
        let notAsked = try TestSupport.cli(["verify", "--jwks", site, "--shl-site", site, plain.path + "/shl/P-1001.txt"])
        #expect(notAsked.status == 0 && !notAsked.stdout.contains("SHL_KTC"))

        let long = dir.appendingPathComponent("long")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: long, extra: ["--shl-exp", "+72h", "--no-qr"])
        let lengthy = try TestSupport.cli(["verify", "--ktc", "--jwks", site, "--shl-site", site, long.path + "/shl/P-1001.txt"])
        #expect(lengthy.status == 0 && lengthy.stdout.contains("warning SHL_KTC") && lengthy.stdout.contains("more than 48 hours"), "\(lengthy.stdout)")

        let now = Int64(Date().timeIntervalSince1970)
        let passcode = SHLink(
            url: "https://links.example.org/m/" + String(repeating: "Qz7", count: 15), key: try AES256Key.random().base64url,
            exp: now + 600, flag: "LP", label: "x")
        let p = try TestSupport.cli(["verify", "--ktc", passcode.text])
        #expect(p.status == 1 && p.stdout.contains("flag U") && p.stdout.contains("negative test vectors"), "\(p.stdout)")

        // Content its receivers do not read.
        let text = try SHLTestSupport.linkText(ktc, id: "P-1002")
        let linkKey = try #require(AES256Key.decode(base64url: try SHLinkText.parse(text).key))
        let jwe = try JWE.encrypt(Array("{}".utf8), key: linkKey, contentType: "application/smart-api-access")
        try FileIO.writeAtomically(Array(jwe.compact.utf8), to: try SHLTestSupport.siteFile(of: text, site: site), access: .published, sync: false)
        let other = try TestSupport.cli(["verify", "--ktc", "--jwks", site, "--shl-site", site, ktc.path + "/shl/P-1002.txt"])
        #expect(other.status == 1 && other.stdout.contains("receivers read application/fhir+json"), "\(other.stdout)")
    }
}
