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

/// What `verify` says about odd inputs: control characters from cards, nothing to check, a PEM given as
/// key set, malformed key sets and crlVersion, an unreadable header. Also `issue` refusing control
/// characters from a CSV.
@Suite struct VerifyInputMessagesTests {
    static let escape = "\u{1B}[2J\u{1B}]0;pwned\u{7}"

    /// A Bundle whose Patient family name carries terminal escape sequences.
    static func hostileBundle() -> JSONValue {
        TestBundles.bundle {
            $0["name"] = [.object(["family": .string("Test" + escape + "person"), "given": ["Ada\u{9B}31m"]])]
        }
    }

    @Test func escapedReplacesC0DELAndC1() {
        #expect(
            ControlCharacters.escaped("a\u{1B}[31m\u{9B}\u{7F}\u{0}\tb\n")
                == "a\\u{1B}[31m\\u{9B}\\u{7F}\\u{0}\\u{9}b\\u{A}")
        #expect(ControlCharacters.escaped("Ada Lovelace, né 1815 → ok") == "Ada Lovelace, né 1815 → ok")
        #expect(ControlCharacters.codePoint("\u{1B}") == "U+001B")
    }

    @Test func humanOutputNeverCarriesControlCharactersFromACardOrFileName() throws {
        let forge = try VerifyForge()
        let site = try forge.writeKeySet()
        let card = try forge.card(
            try forge.jws(claims: VerifyForge.claims(bundle: Self.hostileBundle())), "card\u{1B}[1m.smart-health-card")
        let run = try TestSupport.cli(["verify", "--jwks", site, "--now", String(VerifyForge.now), card])
        #expect(run.status == 1, "\(run.stdout)")
        let bytes = Array(run.stdout.utf8)
        #expect(!bytes.contains(0x1B) && !bytes.contains(0x07), "raw control characters reached the terminal")
        #expect(!run.stdout.unicodeScalars.contains { (0x80...0x9F).contains($0.value) })
        #expect(
            run.stdout.contains("patient  Ada\\u{9B}31m Test\\u{1B}[2J\\u{1B}]0;pwned\\u{7}person"), "\(run.stdout)")
        #expect(run.stdout.contains("card\\u{1B}[1m.smart-health-card"))
        #expect(run.stdout.contains("STRING_CONTROL_CHARACTER at Bundle.entry[0].resource.name[0].family"))
        #expect(run.stdout.contains("U+001B"))
        // --json keeps the data: the decoded payload still has the characters (JSON-escaped on the wire).
        let json = try TestSupport.cli(["verify", "--jwks", site, "--now", String(VerifyForge.now), "--json", card])
        let family = try JSONParser.parse(json.stdout)["credentials"]?[0]?["payload"]?["vc"]?["credentialSubject"]?[
            "fhirBundle"]?["entry"]?[0]?["resource"]?["name"]?[0]?["family"]
        #expect(family?.stringValue == "Test" + Self.escape + "person")
        #expect(!Array(json.stdout.utf8).contains(0x1B))
    }

    @Test func issueRefusesControlCharactersFromACSV() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
        let csv = try TestSupport.write(
            """
            recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx,lot_number,admin_name
            P-1,Ada,Test\u{1B}[2Jperson,1960-04-12,2021-01-15,207,011J20A,ABC General Hospital
            P-2,Bob,Sampleton,1975-11-03,2021-03-02,208,EN6201,Main St Pharmacy

            """, to: "in.csv", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template", template,
            "--out", out.path, "--no-qr", csv,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        let rejected = try #require(report.first { $0["status"]?.stringValue == "rejected" })
        let message = rejected["errors"]?[0]?["message"]?.stringValue ?? ""
        #expect(rejected["errors"]?[0]?["code"]?.stringValue == "STRING_CONTROL_CHARACTER", "\(rejected)")
        #expect(message.contains("U+001B"), "\(rejected)")
        #expect(message.contains("name[0].family"), "\(rejected)")
        #expect(
            rejected["errors"]?[0]?["at"]?.stringValue?.hasSuffix("in.csv:2 column recip_last_name") == true,
            "\(rejected)")
        #expect(report.filter { $0["status"]?.stringValue == "issued" }.count == 1)
        #expect(!Array(run.stderr.utf8).contains(0x1B))
    }

    @Test func nothingToCheckIsAnErrorNamingThePaths() throws {
        let forge = try VerifyForge()
        let empty = forge.dir.appendingPathComponent("empty").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let other = forge.dir.appendingPathComponent("csvs")
        try TestSupport.write("a,b\n1,2\n", to: "rows.csv", in: other)
        for paths in [[empty], [other.path], [empty, other.path]] {
            let run = try TestSupport.cli(["verify"] + paths)
            #expect(run.status == 1, "\(paths): \(run.stdout)")
            #expect(run.stdout.contains("error NOTHING_TO_CHECK"), "\(run.stdout)")
            #expect(paths.allSatisfy { run.stdout.contains("'\($0)'") }, "\(run.stdout)")
        }
        // A folder with only the key set also given as --jwks: that key set was checked, so no error.
        let site = forge.dir.appendingPathComponent("site").path
        try forge.writeKeySet()
        let run = try TestSupport.cli(["verify", "--jwks", site, site])
        #expect(run.status == 0 && !run.stdout.contains("NOTHING_TO_CHECK"), "\(run.stdout)")
        // A folder with a key set alone is something to check.
        #expect(try !forge.codes([site], keySets: []).contains("NOTHING_TO_CHECK"))
    }

    @Test func pemGivenAsKeySetIsNamedAndTheSignatureMessageSaysSo() throws {
        let forge = try VerifyForge()
        let pem = try forge.write(try forge.key.pkcs8PEM(), "k.pem")
        let card = try forge.card(try forge.jws(claims: VerifyForge.claims()))
        let run = try TestSupport.cli(["verify", "--jwks", pem, "--now", String(VerifyForge.now), card])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(
            run.stdout.contains("JWKS_NOT_JSON: the key set is a PEM file (PRIVATE KEY), not a JWK Set"),
            "\(run.stdout)")
        #expect(run.stdout.contains("healthcards jwks KEY --out jwks.json"))
        #expect(!run.stdout.contains("digit was expected"))
        // A key set given for the card's issuer that holds no usable key leaves the signature unverifiable: an error
        // on the card (a forged card must never pass as "signature not checked").
        #expect(
            run.stdout.contains(
                "KEY_SET_INVALID at signature: the key set given for the card's issuer (\(pem) (not bound to an issuer)) "
                    + "holds no usable signing key: JWKS_NOT_JSON"),
            "\(run.stdout)")
        #expect(!run.stdout.contains("no key set was given"))
        // Without --jwks the message is unchanged.
        let none = try TestSupport.cli(["verify", "--now", String(VerifyForge.now), card])
        #expect(
            none.stdout.contains("no key set was given, so the signature was not checked; everything else was (give the "
                + "issuer's key set with --jwks ISSUER_URL=PATH"), "\(none.stdout)")
    }

    @Test func keysThatIsNotAnArrayIsAMalformedKeySet() throws {
        let forge = try VerifyForge()
        for (name, text) in [("set.json", #"{"keys":{}}"#), ("other.json", #"{"keys":"none"}"#)] {
            let path = try forge.write(text, name)
            let findings = try forge.verify([path], keySets: []).flatMap(\.findings)
            #expect(findings.map(\.code) == [.jwksNotJSON], "\(findings)")
            #expect(findings.first?.message.contains("not an array") == true, "\(findings)")
        }
    }

    @Test func crlVersionMustBeAPositiveInteger() throws {
        let forge = try VerifyForge()
        let good = JWK(key: forge.key).json.objectValue!
        for (bad, shown) in [
            (JSONValue.number("-1"), "-1"), (.number("0"), "0"), (.number("1.5"), "1.5"), (.number("2e0"), "2e0"),
            (.string("abc"), "'abc'"),
        ] {
            var key = good
            key["crlVersion"] = bad
            let path = try forge.writeKeySet([.object(key)], site: "s\(shown.hashValue)")
            let findings = KeySetCheck.check(bytes: try VerifyFixtures.bytes(URL(fileURLWithPath: path)), file: path, now: Clock.nowSeconds())
                .findings
            #expect(findings.map(\.code) == [.jwkCRLVersion], "\(shown): \(findings)")
            #expect(findings.first?.location.path == "keys[0].crlVersion")
            #expect(findings.first?.message.hasSuffix("found \(shown)") == true, "\(findings)")
        }
        var key = good
        key["crlVersion"] = .number("3")
        let path = try forge.writeKeySet([.object(key)], site: "ok")
        let result = KeySetCheck.check(bytes: try VerifyFixtures.bytes(URL(fileURLWithPath: path)), file: path, now: Clock.nowSeconds())
        #expect(result.findings.isEmpty && result.keys.first?.crlVersion == 3)
    }

    @Test func unreadableHeaderSaysTheKidIsUnknown() throws {
        let forge = try VerifyForge()
        let other = try P256Key.generate()
        let card = try forge.card(
            try forge.jws(
                header: Array("zip=DEF".utf8), payload: JSONWriter.minified(.object(VerifyForge.claims())),
                signer: other))
        let findings = try forge.verify([card]).flatMap(\.findings)
        let kid = try #require(findings.first { $0.code == .kidUnknown })
        #expect(kid.message.hasPrefix("the JWS header could not be read, so the kid is unknown"), "\(kid.message)")
        #expect(!kid.message.contains("nothing"))
        #expect(findings.contains { $0.code == .headerNotJSON })
    }
}
