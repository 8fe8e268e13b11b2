import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// Messages an operator reads when something is wrong: each names the right option, says what the value
/// is, and quotes values from outside cut to a line (`Quote.text`). Through the real CLI where the
/// message comes from a command.
@Suite struct OperatorMessageTests {
    static let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
    static let sample = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path

    @Test func quoteCutsWithAnEllipsisThatSaysSo() {
        #expect(Quote.text("abc") == "'abc'")
        #expect(Quote.text(String(repeating: "x", count: 60)) == "'\(String(repeating: "x", count: 60))'")
        #expect(
            Quote.text(String(repeating: "x", count: 61))
                == "'\(String(repeating: "x", count: 60))…' (61 characters, cut)")
        #expect(Quote.text("a\u{1B}[2Jb") == "'a\\u{1B}[2Jb'")
        #expect(Quote.text("12345678901234567890/12345678901234567890", limit: 40).hasSuffix("…' (41 characters, cut)"))
        let huge = String(repeating: "y", count: 200_000)
        #expect(Quote.text(huge) == "'\(String(repeating: "y", count: 60))…' (200000 bytes, cut)")
    }

    /// `--qr-scale` below what readers read reliably is refused, with the reason; 3 is read back by verify.
    @Test func qrScaleHasAReadableMinimum() throws {
        let dir = try TestSupport.tempDir("qr-scale")
        let key = try TestSupport.demoKey(in: dir)
        func issue(_ scale: String, out: String) throws -> TestSupport.Run {
            try TestSupport.cli([
                "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template", Self.template, "--out",
                dir.appendingPathComponent(out).path, "--nbf", "1700000000", "--qr-scale", scale, "--quiet",
                Self.sample,
            ])
        }
        for scale in ["1", "2"] {
            let run = try issue(scale, out: "o\(scale)")
            #expect(run.status == 2, "\(run.stderr)")
            #expect(
                run.stderr.contains(
                    "--qr-scale '\(scale)' must be a whole number of pixels per module from 3 to 64; at fewer than 3 a "
                        + "scaled or blurred image is not read reliably"), "\(run.stderr)")
        }
        let shl = try TestSupport.cli([
            "shl", "--base-url", "https://issuer.example.org/shl", "--site", "s", "--qr-scale", "1", "x",
        ])
        #expect(shl.status == 2 && shl.stderr.contains("from 3 to 64"), "\(shl.stderr)")
        let three = try issue("3", out: "o3")
        #expect(three.status == 0, "\(three.stderr)")
        let verify = try TestSupport.cli(["verify", "--now", "1800000000", dir.appendingPathComponent("o3/qr").path])
        #expect(!verify.stdout.contains("QR_NO_SYMBOL"), "\(verify.stdout)")
        #expect(verify.stdout.contains("verify: 4 credential(s) checked"), "\(verify.stdout)")
        for command in ["issue", "shl"] {
            let help = try TestSupport.cli([command, "--help"]).stdout
            #expect(
                help.contains("--qr-scale PIXELS     pixels per QR module (default 4; 3 to 64). Fewer are refused:"))
            #expect(help.contains("is no longer read by zbar"))
        }
    }

    /// The scale zbar cannot read at all, which the minimum is set against: zbar reads a symbol at 1 px per
    /// module not even unscaled (verify's later passes, zxing-cpp and enlarging, do), and at the minimum zbar
    /// alone reads the largest single QR (version 22).
    @Test func ourReaderAndTheMinimumScale() throws {
        let jws = String(repeating: "eyJhbGciOiJFUzI1NiJ9", count: 60).prefix(QRNumeric.maxSingleJWSCharacters)
        let code = try QRCode(jws: Substring(jws), chunk: 1, of: 1)
        #expect(code.version == 22)
        let tiny = try GrayImage(png: QRImage(scale: 1).png(code))
        #expect(try QRDecoder().decode(tiny, decoders: [.zbar]).isEmpty)
        #expect(try QRDecoder().decode(tiny).first?.text == (try QRNumeric.text(jws: String(jws))))
        let least = try GrayImage(png: QRImage(scale: QRImage.minimumReliableScale).png(code))
        let read = try QRDecoder().decode(least, decoders: [.zbar])
        #expect(read.count == 1 && read.first?.version == 22)
    }

    /// `shl --label` errors name `--label` (not `issue`'s `--shl-label`).
    @Test func linkLabelErrorsNameTheOptionGiven() throws {
        let dir = try TestSupport.tempDir("label")
        let made = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: made.key, out: out)
        let card = out.appendingPathComponent("cards/P-1001.smart-health-card").path
        let long = String(repeating: "x", count: 90)
        for (label, message) in [
            ("a{bad}", "--label 'a{bad}' has a placeholder other than {name}"),
            (long, "--label is 90 characters without {name}"),
        ] {
            let run = try TestSupport.cli([
                "shl", "--base-url", SHLTestSupport.base, "--site", made.site, "--label", label, card,
            ])
            #expect(run.status == 2)
            #expect(run.stderr.contains(message), "\(run.stderr)")
            #expect(!run.stderr.contains("--shl-label"), "\(run.stderr)")
        }
        let issue = try TestSupport.cli([
            "issue", "--issuer", SHLTestSupport.issuer, "--key", made.key, "--site", made.site, "--shl",
            SHLTestSupport.base,
            "--shl-label", "a{bad}", "--template", Self.template, "--out", dir.appendingPathComponent("o2").path,
            Self.sample,
        ])
        #expect(issue.status == 2 && issue.stderr.contains("--shl-label 'a{bad}' has a placeholder"), "\(issue.stderr)")
    }

    /// A template member of the wrong type is named as such, not as missing or undeclared.
    @Test func templateMembersOfTheWrongType() throws {
        let dir = try TestSupport.tempDir("template-types")
        let shipped = try JSONParser.parse(try VerifyFixtures.bytes(URL(fileURLWithPath: Self.template))).objectValue!
        func message(_ edit: (inout JSONObject) -> Void) throws -> String {
            var template = shipped
            edit(&template)
            let path = try TestSupport.write(
                String(decoding: JSONWriter.minified(.object(template)), as: UTF8.self),
                to: "\(UUID().uuidString).json", in: dir)
            let run = try TestSupport.cli([
                "issue", "--issuer", "https://issuer.example.org", "--key", "k.pem", "--template", path, "--out",
                dir.appendingPathComponent("out").path, Self.sample,
            ])
            #expect(run.status == 2)
            return run.stderr
        }
        let key = shipped["patientKey"]!.stringValue!
        var columns = shipped["columns"]!.objectValue!
        var spec = columns[key]!.objectValue!
        spec["required"] = "yes"
        columns[key] = .object(spec)
        let required = try message { $0["columns"] = .object(columns) }
        #expect(
            required.contains("column '\(key)' has \"required\": 'yes' (a string); \"required\" is true or false"),
            "\(required)")
        #expect(!required.contains("must be a declared, required column"), "\(required)")
        let name = try message { $0["name"] = .integer(5) }
        #expect(name.contains("\"name\" must be a string (the template's name), found a number 5"), "\(name)")
        #expect(!name.contains("is missing"), "\(name)")
        let patientKey = try message { $0["patientKey"] = .array(["patient_id"]) }
        #expect(patientKey.contains("\"patientKey\" must be a string (a column name), found an array"), "\(patientKey)")
        let undeclared = try message { $0["patientKey"] = "nobody" }
        #expect(undeclared.contains("patientKey 'nobody' is not a declared column"), "\(undeclared)")
        spec["required"] = .bool(false)
        columns[key] = .object(spec)
        let optional = try message { $0["columns"] = .object(columns) }
        #expect(optional.contains("patientKey '\(key)' must be a required column"), "\(optional)")
    }

    /// A link whose exp is no date at all (1e999) is said to be so, not "milliseconds"; a millisecond exp still is.
    @Test func linkExpBeyondAnyDateIsNotMilliseconds() throws {
        let f = try SHLVerifyTests.Fixture()
        func message(_ exp: String) throws -> String {
            let value = try JSONParser.parse(Array(exp.utf8))
            let link = try f.link(UUID().uuidString) { $0["exp"] = value }
            let findings = try f.verify([link]).flatMap(\.findings).filter { $0.code == .shlExpInvalid }
            return findings.first?.message ?? ""
        }
        let huge = try message("1e999")
        #expect(huge.contains("(it is far beyond any date)"), "\(huge)")
        #expect(!huge.contains("milliseconds"), "\(huge)")
        #expect(try message("1900000000000").contains("(it looks like milliseconds)"))
        #expect(try message("-5").contains("(it is before 1970)"))
    }

    /// A link URL with `..` under the site's issuer is refused for its `..`, not for its origin.
    @Test func linkURLWithDotDotSaysWhy() throws {
        let f = try SHLVerifyTests.Fixture()
        let link = try f.link("dotdot") { $0["url"] = .string(SHLTestSupport.base + "/../healthcards-site.json") }
        let run = try TestSupport.cli(["verify", "--jwks", f.site, "--shl-site", f.site, link])
        #expect(run.stdout.contains("SHL_NOT_RESOLVED"), "\(run.stdout)")
        #expect(run.stdout.contains("the url's path segment '..' starts with '.'"), "\(run.stdout)")
        #expect(!run.stdout.contains("is published at its origin"), "\(run.stdout)")
    }

    /// A 5000-character --rid and other long values are quoted cut, saying so.
    @Test func longValuesAreQuotedCut() throws {
        let rid = String(repeating: "r", count: 5000)
        let run = try TestSupport.cli(["revoke", "--site", "s", "--key", "k", "--report", "r", "--rid", rid])
        #expect(run.status == 2)
        #expect(
            run.stderr.contains("--rid '\(String(repeating: "r", count: 60))…' (5000 characters, cut) is not a rid"))
        #expect(run.stderr.utf8.count < 400, "\(run.stderr.utf8.count) bytes")
        let option = try TestSupport.cli(["verify", "--" + String(repeating: "o", count: 3000), "x"])
        #expect(option.status == 2 && option.stderr.utf8.count < 400, "\(option.stderr.utf8.count) bytes")
        // A chunk header of 20-digit numbers is shown cut with an ellipsis, never silently.
        let dir = try TestSupport.tempDir("chunk-header")
        let text = try TestSupport.write(
            "shc:/12345678901234567890/12345678901234567890/5676", to: "chunk.txt", in: dir)
        let verify = try TestSupport.cli(["verify", text])
        #expect(
            verify.stdout.contains(
                "the chunk header '12345678901234567890/1234567890123456789…' (41 characters, cut) is not 'C/N/'"),
            "\(verify.stdout)")
    }
}
