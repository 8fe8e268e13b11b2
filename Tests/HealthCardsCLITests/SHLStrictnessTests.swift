import Foundation
import Testing

import HealthCardsCore
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsVerify
import HealthCardsTestSupport

/// SMART Health Links judged as strictly as the IG, no stricter, no looser: where it says SHALL, an error;
/// where it says SHOULD or calls a value a hint, a warning; each finding names its rule. Case
/// `shl-cty-upper-case/` and the other kinds of issue 21.
@Suite struct SHLStrictnessTests {
    typealias Fixture = SHLVerifyTests.Fixture

    static func codes(_ reports: [CredentialReport]) -> [String] { SHLVerifyTests.codes(reports) }

    /// The case as its README runs it: `Application/Smart-Health-Card` is a card (RFC 9110 8.3.1), and its card
    /// is verified, as the control's is.
    @Test func caseContentTypeInUpperCaseIsACard() throws {
        let dir = VerifyFixtures.cases.appendingPathComponent("shl-cty-upper-case")
        let site = dir.appendingPathComponent("site").path
        let run = try TestSupport.cli([
            "verify", "--json", "--jwks", site, "--shl-site", site, "--now", "1700000100",
            dir.appendingPathComponent("link-cty-upper.txt").path, dir.appendingPathComponent("link-cty-good.txt").path,
        ])
        #expect(run.status == 0, "\(run.stdout)")
        let json = try JSONParser.parse(run.stdout)
        #expect(json["links"]?.arrayValue?.count == 2 && json["credentials"]?.arrayValue?.count == 2)
        #expect(
            json["credentials"]?.arrayValue?.allSatisfy { $0["signature"] == "verified" && $0["valid"] == .bool(true) }
                == true)
        #expect(json["summary"]?["errors"] == .integer(0) && json["summary"]?["warnings"] == .integer(0))
    }

    /// Media types compare case-insensitively and without parameters; content of another type is opened but
    /// not checked, and says so (never "OK, 0 warnings").
    @Test(arguments: [
        ("application/smart-health-card; charset=utf-8", true), ("APPLICATION/SMART-HEALTH-CARD", true),
        (" application/smart-health-card ;x=1", true), ("application/smart-api-access", false), ("application/json", false),
        ("application/smart-health-card-x", false),
    ])
    func contentTypes(cty: String, isCard: Bool) throws {
        let f = try Fixture()
        let reports = try f.verify([try f.link("cty", contentType: cty)])
        if isCard {
            #expect(reports.map(\.source) == [.shlink, .smartHealthCard] && Self.codes(reports) == [], "\(cty)")
            #expect(reports[1].signature == .verified)
        } else {
            #expect(reports.map(\.source) == [.shlink], "\(cty)")
            let finding = try #require(reports[0].findings.first { $0.code == .shlContentNotChecked }, "\(cty)")
            #expect(finding.severity == .warning && reports[0].warningCount == 1)
        }
    }

    /// FHIR content is checked, not waved through: a card file labelled `application/fhir+json` (in any case, with
    /// parameters) is no Bundle, an `SHL_BUNDLE` error.
    @Test(arguments: ["application/fhir+json", "Application/FHIR+JSON; fhirVersion=4.0"])
    func fhirContentIsChecked(cty: String) throws {
        let f = try Fixture()
        let reports = try f.verify([try f.link("fhir", contentType: cty)])
        #expect(reports.map(\.source) == [.shlink], "\(cty)")
        let finding = try #require(reports[0].findings.first { $0.code == .shlBundle }, "\(cty)")
        #expect(finding.severity == .error && finding.message.contains("not Bundle"), "\(finding.message)")
        #expect(!reports[0].findings.contains { $0.code == .shlContentNotChecked })
    }

    @Test func jweCritIsAnErrorAndKidAWarning() throws {
        let f = try Fixture()
        let crit = try f.verify([
            try f.link(
                "crit",
                header: {
                    $0["crit"] = ["exp"]
                    $0["exp"] = .integer(1)
                })
        ])
        let finding = try #require(crit[0].findings.first { $0.code == .shlJWEHeader })
        #expect(finding.isError && finding.message.contains("RFC 7516 section 4.1.13"), "\(finding.message)")
        #expect(crit.count == 1, "a JWE with an unknown crit is not opened")
        let kid = try f.verify([try f.link("kid", header: { $0["kid"] = "abc" })])
        #expect(Self.codes(kid) == ["SHL_JWE_KID"] && kid.allSatisfy(\.isValid) && kid.count == 2)
    }

    @Test func aLinkFileEndingInOneNewlineOpens() throws {
        let f = try Fixture()
        #expect(Self.codes(try f.verify([try f.link("lf", trailer: "\n")])) == [])
        #expect(Self.codes(try f.verify([try f.link("crlf", trailer: "\r\n")])) == [])
        #expect(Self.codes(try f.verify([try f.link("two", trailer: "\n\n")])) == ["SHL_JWE_FORM"])
    }

    @Test func viewerPrefixEndsInExactlyOneHash() throws {
        let f = try Fixture()
        let one = try f.verify([try f.link("one", text: { "https://viewer.example/#" + $0 })])
        #expect(Self.codes(one) == [])
        for viewer in ["https://viewer.example/##", "https://viewer.example/#a#"] {
            let reports = try f.verify([try f.link("bad", text: { viewer + $0 })])
            let finding = try #require(reports[0].findings.first { $0.code == .shlViewerURL }, "\(viewer)")
            #expect(finding.isError && finding.message.contains("exactly one '#'"), "\(viewer)")
        }
        // Not https: a warning, as before.
        let http = try f.verify([try f.link("http", text: { "http://viewer.example/#" + $0 })])
        #expect(http[0].findings.first { $0.code == .shlViewerURL }?.severity == .warning)
    }

    /// A bare link given as an argument is never echoed with its key, however it is malformed.
    @Test func aLinkArgumentIsNeverEchoed() throws {
        let f = try Fixture()
        let text = try VerifyFixtures.text(URL(fileURLWithPath: try f.link("echo")))
        let key = try SHLinkText.parse(text).key
        for argument in [
            text, "https://viewer.example/##" + text, "SHLINK:/" + text.dropFirst(8), "x" + text, text + " ",
        ] {
            for extra in [[], ["--json"]] {
                let run = try TestSupport.cli(["verify", "--shl-site", f.site] + extra + [argument])
                #expect(
                    !run.stdout.contains(key) && !run.stderr.contains(key),
                    "\(argument.prefix(30)): \(run.stdout)\(run.stderr)")
                #expect(run.status != 2, "\(argument.prefix(30)): \(run.stderr)")
            }
        }
    }

    @Test func expIsAHintAndPaddedOrPrettyPayloadsAreWarnings() throws {
        let f = try Fixture()
        let stale = try f.verify([try f.link("stale") { $0["exp"] = .integer(1_700_000_000) }])
        #expect(Self.codes(stale) == ["SHL_EXPIRED"] && stale.allSatisfy(\.isValid) && stale.count == 2)
        // '=' padding: read, with a warning.
        let padded = try f.link(
            "padded",
            text: { text in
                var t = text
                while (t.count - 8) % 4 != 0 { t += "=" }
                return t
            })
        let paddedReports = try f.verify([padded])
        let paddedText = try VerifyFixtures.text(URL(fileURLWithPath: padded))
        if paddedText.hasSuffix("=") {
            #expect(Self.codes(paddedReports) == ["SHL_PAYLOAD_FORM"] && paddedReports.count == 2)
        }
        // Pretty-printed JSON: read, with a warning.
        let pretty = try f.link(
            "pretty",
            text: { text in
                let payload = try! JSONParser.parse(Base64URL.decode(String(text.dropFirst(8)))!)
                return SHLink.scheme + Base64URL.encode(JSONWriter.pretty(payload))
            })
        let prettyReports = try f.verify([pretty])
        #expect(Self.codes(prettyReports) == ["SHL_PAYLOAD_FORM"] && prettyReports.count == 2)
        #expect(prettyReports[0].findings[0].severity == .warning)
    }

    @Test(arguments: [
        "0000000000000000000000000000000000000000001", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        "patient-ada-lovelace-covid-vaccination-card", "0123456789abcdef0123456789abcdef0123456789abcdef",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "P1001P1001P1001P1001P1001P1001P1001P1001P10",
        "vaccination-card-of-Ada-Testperson-born-1960", "AdaLovelaceVaccinationCardForSchool2024January",
        "1234567890123456789012345678901234567890123",
    ])
    func lowEntropyFileNamesAreWarned(name: String) throws {
        let f = try Fixture()
        let reports = try f.verify([try f.link("low", fileName: name)])
        let finding = try #require(reports[0].findings.first { $0.code == .shlURLEntropy }, "\(name)")
        #expect(finding.severity == .warning && finding.message.contains(String(name.prefix(20))), "\(finding.message)")
        // The file still opens: a warning, not a refusal.
        #expect(reports.count == 2 && reports.allSatisfy(\.isValid))
    }

    /// Random names pass: 2,000 of them, as `shl` makes them (32 random bytes, base64url).
    @Test func randomFileNamesPass() throws {
        for _ in 0..<2000 {
            let name = try SHLDestination.newFileName()
            #expect(SHLEntropy.problem(url: SHLTestSupport.base + "/" + name) == nil, "\(name)")
        }
        // The name CI once drew (five 3s in a row, about 1 in 430,000 random names) is random, not zero-padded.
        #expect(SHLEntropy.problem(url: SHLTestSupport.base + "/tWxGkWkKkZmqg0E22ChD_D33333q7uOirSfE7Py8vCo") == nil)
        #expect(SHLEntropy.problem(url: SHLTestSupport.base + "/tWxGkWkKkZmqg0E22ChD_D3333333OirSfE7Py8vCo") != nil)
    }

    @Test func aKeyOfTextCharactersIsWarnedEvenWhenItDecrypts() throws {
        let f = try Fixture()
        for text in ["0123456789abcdef0123456789abcdef", "correct horse battery staple 123"] {
            let key = try #require(AES256Key.decode(base64url: Base64URL.encode(Array(text.utf8))))
            let reports = try f.verify([try f.link("text-key", key: key)])
            #expect(Self.codes(reports) == ["SHL_KEY_TEXT"], "\(text)")
            #expect(reports.count == 2 && reports[1].signature == .verified, "it decrypts")
        }
    }

    /// What the entropy and key findings say is what was found: `AAAA…` is one character repeated (it said "16 kinds
    /// of characters (hex digits)"), hex says its 16 different characters and the bits they hold; a key of 32 zero
    /// bytes (`AAAA…`, which decrypts) is SHL_KEY_WEAK (it passed without a word); a 43-character key that is not
    /// canonical says so (it said "not 43 base64url characters"), and a key with '=' says where.
    @Test func entropyAndKeyMessagesSayWhatWasFound() throws {
        let f = try Fixture()
        let a43 = String(repeating: "A", count: 43)
        let repeated = try #require(
            try f.verify([try f.link("aaaa", fileName: a43)])[0].findings.first { $0.code == .shlURLEntropy })
        #expect(repeated.message.contains("'\(a43)' is one character, 'A', repeated 43 times: it holds no entropy at all"), "\(repeated.message)")
        #expect(repeated.message.contains("asks for at least 256 bits of entropy"))
        let hex = String(repeating: "0123456789abcdef", count: 3)
        let hexFinding = try #require(
            try f.verify([try f.link("hex", fileName: hex)])[0].findings.first { $0.code == .shlURLEntropy })
        #expect(
            hexFinding.message.contains(
                "uses 16 different characters (lower-case letters, digits): hex digits only (0-9, A-F or a-f), an alphabet of 16, "
                    + "in which its 48 characters hold at most 192 bits"), "\(hexFinding.message)")

        let zero = try #require(AES256Key.decode(base64url: a43))
        let weak = try f.verify([try f.link("zero-key", key: zero)])
        #expect(Self.codes(weak) == ["SHL_KEY_WEAK"], "\(weak.flatMap(\.findings))")
        #expect(weak[0].findings.first?.message.hasPrefix("the key's 32 bytes take only 1 different value (the same byte 32 times)") == true)
        #expect(weak.count == 2 && weak[1].signature == .verified, "it decrypts")

        let noncanonical = String(repeating: "A", count: 42) + "B"
        #expect(Base64URL.decode(noncanonical) == nil && AES256Key.decode(base64url: noncanonical) == nil)
        let bad = try f.verify([try f.link("noncanonical") { $0["key"] = .string(noncanonical) }])
        let invalid = try #require(bad[0].findings.first { $0.code == .shlKeyInvalid })
        #expect(invalid.message.hasPrefix("key is 43 base64url characters but not canonical: its last character carries 6 bits"), "\(invalid.message)")
        #expect(!invalid.message.contains(noncanonical), "never the key's text")
        let padded = try f.verify([try f.link("padded-key") { $0["key"] = .string(a43 + "=") }])
        let paddedFinding = try #require(padded[0].findings.first { $0.code == .shlKeyInvalid })
        #expect(paddedFinding.message.hasPrefix("key has a character that is not base64url at position 44"), "\(paddedFinding.message)")
    }

    @Test func labelsAreCountedAsTheIGCountsCharacters() throws {
        let f = try Fixture()
        let emoji = String(repeating: "😀", count: 80)
        // 80 code points, within the IG's count, but 160 UTF-16 code units as a JavaScript receiver counts: a warning.
        #expect(Self.codes(try f.verify([try f.link("emoji") { $0["label"] = .string(emoji) }])) == ["SHL_LABEL_UTF16"])
        let long = try f.verify([try f.link("long") { $0["label"] = .string(emoji + "😀") }])
        let finding = try #require(long[0].findings.first { $0.code == .shlLabelInvalid })
        #expect(finding.message.hasPrefix("label is 81 Unicode characters (code points)"), "\(finding.message)")
    }

    /// A link QR larger than its text needs is warned; the smallest one is not.
    @Test func anOversizedLinkQRIsWarned() throws {
        let f = try Fixture()
        let text = try VerifyFixtures.text(URL(fileURLWithPath: try f.link("qr")))
        let smallest = try QRCode(link: text)
        let big = try QRCode(segments: [(.byte, Array(text.utf8))], level: .M, minimumVersion: smallest.version + 4)
        let png = try TestSupport.write("", to: "big.png", in: f.dir)
        try Data(try QRImage().png(big)).write(to: URL(fileURLWithPath: png))
        let reports = try f.verify([png])
        let finding = try #require(reports[0].findings.first { $0.code == .shlQRNotMinimal }, "\(Self.codes(reports))")
        #expect(
            finding.message.contains("version \(smallest.version + 4)")
                && finding.message.contains("fits version \(smallest.version)"))
        let fine = try TestSupport.write("", to: "fine.png", in: f.dir)
        try Data(try QRImage().png(smallest)).write(to: URL(fileURLWithPath: fine))
        #expect(Self.codes(try f.verify([fine])) == [])
    }
}
