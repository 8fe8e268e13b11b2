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

/// The real `healthcards` executable, run on files the tests make, judged by the independent checker.
@Suite(.serialized) struct IssueCLITests {
    static let issuer = "https://issuer.example.org"

    /// A shipped sample CSV issued with the demo key, and the demo key's key set.
    struct SampleRun {
        var site: URL
        var out: URL
        var run: TestSupport.Run
        var cards: [URL]
        var pngs: [URL]
    }

    static func issueSample(template: String) throws -> SampleRun {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site")
        let out = dir.appendingPathComponent("out")
        let jwks = try TestSupport.cli([
            "jwks", key, "--out", site.appendingPathComponent(".well-known/jwks.json").path, "--issuer", Self.issuer,
        ])
        #expect(jwks.status == 0, "\(jwks.stderr)")
        let root = VerifyFixtures.repoRoot.appendingPathComponent("templates")
        let run = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", key, "--template", root.appendingPathComponent("\(template).json").path,
            "--out", out.path, root.appendingPathComponent("\(template).sample.csv").path,
        ])
        return SampleRun(
            site: site, out: out, run: run,
            cards: try VerifyFixtures.files(in: out.appendingPathComponent("cards"), suffix: ".smart-health-card"),
            pngs: try VerifyFixtures.files(in: out.appendingPathComponent("qr"), suffix: ".png"))
    }

    /// Issues the shipped sample CSVs: every record issued, a card and an image each, and our own `verify`
    /// finds nothing wrong in any file.
    @Test(arguments: ["covid19-vaccination", "lab-result"])
    func sampleCSVIssuesEveryRecord(template: String) throws {
        let sample = try Self.issueSample(template: template)
        #expect(sample.run.status == 0, "\(sample.run.stderr)")
        let report = try TestSupport.report(sample.out)
        #expect(!report.isEmpty)
        #expect(report.allSatisfy { $0["status"]?.stringValue == "issued" })
        #expect(sample.cards.count == report.count && sample.pngs.count == report.count)
        let verify = try TestSupport.cli(["verify", "--jwks", sample.site.path, sample.out.path])
        #expect(verify.status == 0, "\(verify.stdout)")
        #expect(
            verify.stdout.contains("\(report.count * 2) credential(s) checked, 0 error(s), 0 warning(s)"),
            "\(verify.stdout)")
    }

    /// The shipped sample CSVs' cards and images pass `shc_check.py`: zero errors, zero warnings.
    @Test(
        .enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing),
        arguments: ["covid19-vaccination", "lab-result"])
    func sampleCSVPassesIndependentChecker(template: String) throws {
        let sample = try Self.issueSample(template: template)
        #expect(sample.run.status == 0, "\(sample.run.stderr)")
        #expect(!sample.cards.isEmpty && sample.pngs.count == sample.cards.count)
        let check = try TestSupport.check(["--jwks", sample.site.path, sample.out.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(
            check.stdout.hasSuffix(
                "\(sample.cards.count + sample.pngs.count) credentials checked, 0 errors, 0 warnings\n"),
            "\(check.stdout)")
    }

    @Test func vaccinationSampleGroupsRowsPerPatientInAnyOrder() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let root = VerifyFixtures.repoRoot.appendingPathComponent("templates")
        let run = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", key, "--template", root.appendingPathComponent("covid19-vaccination.json").path,
            "--out", out.path, "--nbf", "1700000000", "--no-qr", root.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(run.status == 0)
        let card = try JSONParser.parse(try VerifyFixtures.bytes(out.appendingPathComponent("cards/P-1001.smart-health-card")))
        let jws = try #require(card["verifiableCredential"]?.arrayValue?.first?.stringValue)
        let payload = try TestSupport.payload(of: jws)
        #expect(payload["nbf"] == .number("1700000000"))
        #expect(payload["iss"]?.stringValue == Self.issuer)
        let entries = try #require(payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue)
        // Rows 2, 4 and 7 of the sample are P-1001's three doses, in file order.
        #expect(entries.count == 4)
        #expect(entries.compactMap { $0["resource"]?["occurrenceDateTime"]?.stringValue } == ["2021-01-15", "2021-02-12", "2022-09-05"])
        #expect(entries[0]["resource"]?["name"] == .array([.object(["family": "Testperson", "given": ["Ada", "M."]])]))
        #expect(payload["vc"]?["type"] == [
            "https://smarthealth.cards#health-card", "https://smarthealth.cards#covid19", "https://smarthealth.cards#immunization",
        ])
        // Bob has no middle name: the empty placeholder drops that given name.
        let bob = try JSONParser.parse(try VerifyFixtures.bytes(out.appendingPathComponent("cards/P-1002.smart-health-card")))
        let bobPayload = try TestSupport.payload(of: try #require(bob["verifiableCredential"]?[0]?.stringValue))
        let bobName = bobPayload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?[0]?["resource"]?["name"]
        let expectedName: JSONValue = .array([.object(["family": "Sampleton", "given": ["Bob"]])])
        #expect(bobName == expectedName)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("qr").path))
    }

    @Test func minimalTypesAndBundleInput() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let input = TestSupport.spec("generator-input/covid-vaccines-bundle.json").path
        let run = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--vc-types", "minimal", "--out", out.path, input])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.count == 1)
        #expect(report[0]["source"]?.stringValue == "\(input):1")
        #expect(report[0]["id"]?.stringValue == "covid-vaccines-bundle-1")
        // Bundle cards are named for their person (docs/batch.md), as the report says.
        let card = try JSONParser.parse(try VerifyFixtures.bytes(BatchTestSupport.cardFile(out, id: "covid-vaccines-bundle-1")))
        let payload = try TestSupport.payload(of: try #require(card["verifiableCredential"]?[0]?.stringValue))
        #expect(payload["vc"]?["type"] == ["https://smarthealth.cards#health-card"])
        let expectedBundle = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json")))
        #expect(payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue?.count == expectedBundle["entry"]?.arrayValue?.count)
    }

    @Test func ndjsonInputRejectsBadLinesAndIssuesTheRest() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let good = JSONWriter.minifiedString(try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json"))))
        let unresolved = good.replacingOccurrences(of: "\"patient\":{\"reference\":\"resource:0\"}", with: "\"patient\":{\"reference\":\"Patient/nobody\"}")
        let input = try TestSupport.write([good, "{not json", unresolved, good].joined(separator: "\n") + "\n", to: "batch.ndjson", in: dir)
        let run = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--out", out.path, input])
        #expect(run.status == 1)
        let report = try TestSupport.report(out)
        #expect(report.map { $0["status"]?.stringValue ?? "" } == ["issued", "rejected", "rejected", "issued"])
        #expect(report[1]["source"]?.stringValue == "\(input):2")
        #expect(report[1]["errors"]?[0]?["message"]?.stringValue?.hasPrefix("not valid JSON") == true)
        let refError = try #require(report[2]["errors"]?[0])
        #expect(refError["at"]?.stringValue == "Bundle.entry[1].resource.patient.reference")
        #expect(refError["message"]?.stringValue?.contains("'Patient/nobody' resolves to no entry") == true)
        #expect(FileManager.default.fileExists(atPath: BatchTestSupport.cardFile(out, id: "batch-4").path))
        #expect(BatchTestSupport.cardFile(out, id: "batch-4") != BatchTestSupport.cardFile(out, id: "batch-1"))
        #expect(report[2]["files"]?.arrayValue?.isEmpty ?? true)
    }

    /// One patient with 30 doses with long, incompressible lot numbers: a JWS far over 1195 characters; with
    /// the demo key and its key set.
    struct Oversized {
        var dir: URL
        var key: String
        var input: String
        var template: String
        var site: URL
    }

    static func oversized() throws -> Oversized {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        var csv = "recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx,lot_number,vax_event_id\n"
        var generator = SystemRandomNumberGenerator()
        for i in 1...30 {
            let lot = String((0..<19).map { _ in "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789".randomElement(using: &generator)! })
            csv += "X-1,Zed,Manydoses,1970-01-01,2021-0\(1 + i % 9)-1\(i % 10),208,\(lot),E\(i)\n"
        }
        let input = try TestSupport.write(csv, to: "big.csv", in: dir)
        let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
        let site = dir.appendingPathComponent("site")
        let jwks = try TestSupport.cli([
            "jwks", key, "--out", site.appendingPathComponent(".well-known/jwks.json").path, "--issuer", Self.issuer,
        ])
        #expect(jwks.status == 0, "\(jwks.stderr)")
        return Oversized(dir: dir, key: key, input: input, template: template, site: site)
    }

    /// `issue ARGS --template … --out DIR INPUT` for the oversized patient.
    static func issueOversized(_ f: Oversized, _ options: [String], out: String) throws -> TestSupport.Run {
        try TestSupport.cli(
            ["issue", "--issuer", Self.issuer, "--key", f.key, "--template", f.template] + options
                + ["--out", f.dir.appendingPathComponent(out).path, f.input])
    }

    @Test func oversizedCardIsRejectedUnlessChunked() throws {
        let f = try Self.oversized()
        let run = try Self.issueOversized(f, [], out: "out")
        #expect(run.status == 1)
        let message = try #require(
            try TestSupport.report(f.dir.appendingPathComponent("out"))[0]["errors"]?[0]?["message"]?.stringValue)
        #expect(message.contains("one QR holds at most 1195"))
        #expect(message.contains("--chunk"))
        let chunkedOut = f.dir.appendingPathComponent("chunked")
        let chunked = try Self.issueOversized(f, ["--chunk"], out: "chunked")
        #expect(chunked.status == 0, "\(chunked.stderr)")
        let files = try #require(try TestSupport.report(chunkedOut)[0]["files"]?.arrayValue?.compactMap(\.stringValue))
        #expect(files.count >= 3)
        #expect(files.dropFirst().allSatisfy { $0.hasPrefix("qr/X-1-") })
        let chunkedVerify = try TestSupport.cli([
            "verify", "--json", "--jwks", f.site.path, chunkedOut.appendingPathComponent("qr").path,
        ])
        #expect(chunkedVerify.status == 0, "\(chunkedVerify.stdout)")

        // --no-qr: there is no QR to be too big for. The card is issued, with a warning that it cannot be
        // shown as one QR code and a pointer to SMART Health Links.
        let fileOnly = f.dir.appendingPathComponent("file-only")
        let noQR = try Self.issueOversized(f, ["--no-qr"], out: "file-only")
        #expect(noQR.status == 0, "\(noQR.stderr)")
        let line = try TestSupport.report(fileOnly)[0]
        #expect(line["status"] == "issued" && line["files"] == .array([.string("cards/X-1.smart-health-card")]))
        let warning = try #require(line["warnings"]?.arrayValue?.compactMap { $0["message"]?.stringValue }.first { $0.contains("one QR holds") })
        #expect(warning.contains("cannot be shown as one QR code") && warning.contains("SMART Health Link"))
        #expect(!FileManager.default.fileExists(atPath: fileOnly.appendingPathComponent("qr").path))
        // Running it again finds the card already issued (and still no QR).
        let again = try Self.issueOversized(f, ["--no-qr"], out: "file-only")
        #expect(again.status == 0 && again.stderr.contains("1 already issued"), "\(again.stderr)")
    }

    /// The oversized card as chunked QR images (reassembled by the checker) and as a file only (--no-qr) passes
    /// the independent checker.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func oversizedCardPassesIndependentChecker() throws {
        let f = try Self.oversized()
        #expect(try Self.issueOversized(f, ["--chunk"], out: "chunked").status == 0)
        let check = try TestSupport.check([
            "--json", "--jwks", f.site.path, f.dir.appendingPathComponent("chunked/qr").path,
        ])
        let findings = try JSONParser.parse(check.stdout)
        #expect(findings["errors"] == .number("0"), "\(check.stdout)")
        #expect(findings["credentials"] == .number("1"))
        #expect(try Self.issueOversized(f, ["--no-qr"], out: "file-only").status == 0)
        let fileCheck = try TestSupport.check([
            "--json", "--jwks", f.site.path, f.dir.appendingPathComponent("file-only/cards").path,
        ])
        #expect(try JSONParser.parse(fileCheck.stdout)["errors"] == .number("0"), "\(fileCheck.stdout)")
    }

    @Test func usageErrorsExitWithStatus2() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let input = TestSupport.spec("generator-input/covid-vaccines-bundle.json").path
        let out = dir.appendingPathComponent("out").path
        let copy = dir.appendingPathComponent("copy.json").path
        try FileManager.default.copyItem(atPath: input, toPath: copy)
        let link = dir.appendingPathComponent("hard-link.json").path
        try FileManager.default.linkItem(atPath: copy, toPath: link)
        let csvTemplate = try TestSupport.write("recip_id,recip_first_name\nP-1,Ann\n", to: "export.csv", in: dir)
        let cases: [([String], String)] = [
            (["issue", "--issuer", "https://issuer.example.org/", "--key", key, "--out", out, input], "ends with '/'"),
            (["issue", "--issuer", "http://issuer.example.org", "--key", key, "--out", out, input], "is not https"),
            (["issue", "--issuer", "https://issuer.example.org?x=1", "--key", key, "--out", out, input], "query or fragment"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "1700000000000", input], "milliseconds"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "people.csv"], "does not exist"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out], "at least one INPUT"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--frobnicate", input], "unknown option '--frobnicate'"),
            (["issue", "--issuer", Self.issuer, "--key", dir.appendingPathComponent("nokey.pem").path, "--out", out, input], "does not exist"),
            (["frobnicate"], "unknown command"),
            (["issue", "--issuer", "", "--key", key, "--out", out, input], "--issuer is empty"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, input, input], "is given twice"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, copy, link], "is given twice"),
            (["issue", "--issuer", Self.issuer, "--issuer", "https://b.example", "--key", key, "--out", out, input], "given more than once"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", String(Int(Date().timeIntervalSince1970) + 30), input], "is in the future"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--exp", "1650000000", input], "has passed"),
            (["issue", "--issuer", " https://a.example", "--key", key, "--out", out, input], "spaces or control characters"),
            (["issue", "--issuer", "https://user:pw@a.example", "--key", key, "--out", out, input], "user name or password"),
            (["issue", "--issuer", "https://a.example:99999", "--key", key, "--out", out, input], "not a number from 1 to 65535"),
            (["issue", "--issuer", "https://a.example/%zz", "--key", key, "--out", out, input], "%XX escape"),
            (["issue", "--issuer", "https://a.example/\\x", "--key", key, "--out", out, input], "cannot hold unescaped"),
            (["issue", "--issuer", "https://a.éxample", "--key", key, "--out", out, input], "punycode"),
            (["issue", "--issuer", "https://[::1]", "--key", key, "--out", out, input], "IP address"),
            (["issue", "--issuer", "https://ISSUER.example.org", "--key", key, "--out", out, input], "lowercase"),
            (["issue", "--issuer", "https://a.example:443", "--key", key, "--out", out, input], "default port 443"),
            (["issue", "--issuer", "https://a.example/a/../b", "--key", key, "--out", out, input], "'..' segment"),
            (["issue", "--issuer", "https://-bad-.org", "--key", key, "--out", out, input], "cannot start or end with '-'"),
            (["jwks", key, "--out", dir.path], "it is a folder"),
            (["issue", "--issuer", "https://10.0.0.5", "--key", key, "--out", out, input], "IP address"),
            (["issue", "--issuer", "https://999.999.999.999", "--key", key, "--out", out, input], "IP address"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "-5", input], "--nbf -5 is negative, before 1970"),
            // 1.5e9 is a whole number, written with an exponent; 1500000000.5 is not (it used to be called "not a whole
            // number" and 0x10 "not a whole number ... (16 without the fraction)": Double reads hexadecimal).
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "1.5e9", input],
             "--nbf 1.5e9 is written with an exponent: NumericDate values in SMART Health Cards are integer seconds written in digits (here 1500000000)"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "1500000000.5", input],
             "--nbf 1500000000.5 is not a whole number: NumericDate values in SMART Health Cards are integer seconds (1500000000 without the fraction)"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--exp", "4e9", input], "--exp 4e9 is written with an exponent"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "0x10", input],
             "--nbf '0x10' is hexadecimal; NumericDate values in SMART Health Cards are decimal integer seconds"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "+1700000000", input],
             "--nbf '+1700000000' is not written in decimal digits alone"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "1_700_000_000", input],
             "--nbf '1_700_000_000' is not written in decimal digits alone"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--nbf", "soon", "--out", out, input], "--nbf 'soon' is not a number"),
            (["issue", "--issuer", Self.issuer, "--key", key, input, "--out", "--force"],
             "--out lacks a value: it is followed by the option '--force'"),
            (["keygen", "--out", dir.path], "--out \(dir.path) is a folder; keygen writes one key file"),
            (["site", "--out", input, key, "--issuer", Self.issuer], "--out \(input) is a file; site lays out a folder"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--template", csvTemplate, "--out", out, csvTemplate],
             "--template \(csvTemplate) is not a template: a template is a JSON object"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--template", csvTemplate, "--out", out, csvTemplate],
             "It looks like the CSV export, which is an INPUT"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "4102444800", input], "is in the future"),
            (["issue", "--issuer", Self.issuer, "--key", key, "--out", out, "--nbf", "1600000000", "--exp", "1650000000", input], "has passed"),
        ]
        for (args, expected) in cases {
            let run = try TestSupport.cli(args)
            #expect(run.status == 2, "\(args)")
            #expect(run.stderr.contains(expected), "\(args): \(run.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A record rejected now whose card from an earlier run is still in cards/: left alone, but said.
    @Test func staleCardOfARejectedRecordIsReported() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
        let header = "recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx\n"
        let csv = try TestSupport.write(header + "A,Ann,Example,1990-01-01,2021-02-01,207\n", to: "in.csv", in: dir)
        #expect(try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--template", template, "--out", out.path, csv]).status == 0)
        try TestSupport.write(header + "A,Ann,Example,1990-01-01,2021-02-01,998\n", to: "in.csv", in: dir)
        let again = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--template", template, "--out", out.path, csv])
        #expect(again.status == 1)
        let line = try TestSupport.report(out)[0]
        #expect(line["status"]?.stringValue == "rejected")
        #expect(line["warnings"]?[0]?["message"]?.stringValue?.hasPrefix("cards/A.smart-health-card is a card from an earlier run") == true)
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("cards/A.smart-health-card").path))
    }

    @Test func issuerWithPortAndPathIsAccepted() throws {
        try Payload.validateIssuer("https://issuer.example.org:8443/shc/v1")
        try Payload.validateIssuer("https://spec.smarthealth.cards/examples/issuer")
        try Payload.validateIssuer("https://a.example/path%20with-escape")
    }

    /// A card cannot say it was issued before the dose it records.
    @Test func nbfBeforeTheEventRejectsTheRecord() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("out")
        let input = TestSupport.spec("example-00-a-fhirBundle.json").path
        // 2021-01-28 12:00 UTC: after the first dose (2021-01-01); the second (2021-01-29) is already that day in
        // UTC+14, so it passes; the third (2022-09-05) does not.
        let run = try TestSupport.cli(["issue", "--issuer", Self.issuer, "--key", key, "--out", out.path, "--nbf", "1611835200", input])
        #expect(run.status == 1)
        let errors = try #require(try TestSupport.report(out)[0]["errors"]?.arrayValue)
        #expect(errors.compactMap { $0["at"]?.stringValue } == ["Bundle.entry[3].resource.occurrenceDateTime"])
        #expect(errors[0]["code"]?.stringValue == "NBF_BEFORE_EVENT")
        #expect(errors[0]["message"]?.stringValue?.hasPrefix("nbf 2021-01-28 12:00:00 UTC is before this event (2022-09-05)") == true)
        // verify reports the same rule, as a warning: verifiers do not reject such cards.
        let card = JSONWriter.minifiedString(.object(["verifiableCredential": .array([.string(try Self.signedCard(nbf: 1_611_835_200, key: key))])]))
        let file = try TestSupport.write(card, to: "early.smart-health-card", in: dir)
        let verify = try TestSupport.cli(["verify", "--json", file])
        #expect(verify.stdout.contains("\"NBF_BEFORE_EVENT\""))
        // No error, but no key set was given: the card is valid and not verified (exit 1, never 0).
        #expect(verify.stdout.contains("\"valid\": true") && verify.stdout.contains("\"verified\": false"))
        #expect(verify.status == 1)
    }

    /// A card signed without the issue-time nbf check: the payload the issuer refuses, deflated and signed here as
    /// a JWS (a fixture only a verifier developer wants; the public API refuses it).
    static func signedCard(nbf: Int64, key: String) throws -> String {
        let bundle = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json")))
        let signingKey = try KeyFile.load(path: key, requirePrivate: true)
        let issuer = try CardIssuer(signer: try ES256Signer(key: signingKey), settings: IssueSettings(issuer: Self.issuer, notBefore: nbf), clock: SystemWallClock())
        let card = issuer.payload(for: try CheckedBundle.minimizing(bundle, now: Clock.nowSeconds()))
        #expect(card.errors.map(\.code) == [.nbfBeforeEvent])
        #expect(throws: HealthCardError.self) { try issuer.issue(card) }
        var signer = try ES256Signer(key: signingKey)
        return try JWS.sign(deflatedPayload: try RawDeflater().deflate(card.bytes), kid: JWK(key: signingKey).kid, signer: &signer).compact
    }

    @Test func everyCommandHasHelp() throws {
        for command in ["keygen", "jwks", "issue"] {
            let run = try TestSupport.cli([command, "--help"])
            #expect(run.status == 0)
            #expect(run.stdout.hasPrefix("Usage: healthcards \(command)"))
        }
        let top = try TestSupport.cli(["--help"])
        #expect(top.status == 0 && top.stdout.contains("Commands:"))
    }

    @Test func keygenWritesMode0600PKCS8AndPrintsKid() throws {
        let dir = try TestSupport.tempDir()
        let path = dir.appendingPathComponent("sub/issuer.pem").path
        let run = try TestSupport.cli(["keygen", "--out", path])
        #expect(run.status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let pem = try VerifyFixtures.bytes(URL(fileURLWithPath: path))
        #expect(String(decoding: pem, as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let key = try P256Key.load(pem: pem, source: path, requirePrivate: true)
        #expect(run.stdout == JWK(key: key).kid + "\n")
        let again = try TestSupport.cli(["keygen", "--out", path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("is only ever written to a new file"))
        #expect(try VerifyFixtures.bytes(URL(fileURLWithPath: path)) == pem)
    }

    /// The key set of the demo key, a new key, and the demo key again.
    static func twoKeySet() throws -> (out: URL, run: TestSupport.Run) {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let second = dir.appendingPathComponent("second.pem").path
        _ = try TestSupport.cli(["keygen", "--out", second])
        let out = dir.appendingPathComponent("jwks.json")
        return (out, try TestSupport.cli(["jwks", key, second, key, "--out", out.path, "--issuer", Self.issuer]))
    }

    @Test func jwksPublishesOnlyPublicMembers() throws {
        let (out, run) = try Self.twoKeySet()
        #expect(run.status == 0)
        let json = try JSONParser.parse(try VerifyFixtures.bytes(out))
        let keys = try #require(json["keys"]?.arrayValue)
        #expect(keys.count == 2)
        for jwk in keys {
            #expect(jwk.objectValue?.keys == ["kty", "kid", "use", "alg", "crv", "x", "y"])
            #expect(jwk["x"]?.stringValue.flatMap(Base64URL.decode)?.count == 32)
        }
    }

    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func keySetPassesIndependentChecker() throws {
        let (out, run) = try Self.twoKeySet()
        #expect(run.status == 0, "\(run.stderr)")
        let check = try TestSupport.check([out.path])
        #expect(check.status == 0, "\(check.stdout)")
    }
}
