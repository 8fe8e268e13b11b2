import Foundation
import Testing

import HealthCardsCore
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsVerify
import HealthCardsTestSupport

/// The verify cases of issue 21 (Tests/Fixtures/cases, README there) run exactly as their README says, through
/// the real `healthcards verify`, with their right answers; and the kinds of fault they stand for, beyond the
/// given files, through the path walker. (`shl-cty-upper-case/` is in SHLStrictnessTests; the bytes API runs
/// them all in HealthCardsPublicAPITests.)
@Suite struct VerifyCasesCLITests {
    static let spec = "https://spec.smarthealth.cards/examples/issuer"

    static func path(_ folder: String, _ file: String) -> String {
        VerifyFixtures.cases.appendingPathComponent("\(folder)/\(file)").path
    }

    static func card(_ json: JSONValue, _ n: Int = 0) throws -> JSONValue {
        try #require(json["credentials"]?[n])
    }

    static func codes(_ report: JSONValue) -> [String] {
        (report["findings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
    }

    @Test func keySetOnlyEncKey() throws {
        let run = try TestSupport.cli([
            "verify", "--json", "--jwks", "\(Self.spec)=\(Self.path("keyset-only-enc-key", "jwks-only-enc-key.json"))",
            "--now", "1700000100", Self.path("keyset-only-enc-key", "forged-claims-spec-kid.smart-health-card"),
        ])
        #expect(run.status == 1)
        let json = try JSONParser.parse(run.stdout)
        let card = try Self.card(json)
        #expect(card["valid"] == .bool(false) && card["signature"] == "not-checked", "\(card)")
        #expect(Self.codes(card).contains("KEY_SET_INVALID") && !Self.codes(card).contains("SIG_NOT_CHECKED"))
        #expect(Self.codes(try #require(json["keySets"]?[0])).contains("JWKS_NO_KEYS"))
        // The text says the card is INVALID, never "signature not checked" with an OK.
        let text = try TestSupport.cli([
            "verify", "--jwks", "\(Self.spec)=\(Self.path("keyset-only-enc-key", "jwks-only-enc-key.json"))", "--now",
            "1700000100", Self.path("keyset-only-enc-key", "forged-claims-spec-kid.smart-health-card"),
        ])
        #expect(
            text.stdout.contains("forged-claims-spec-kid.smart-health-card [credential 0]: INVALID"), "\(text.stdout)")
    }

    /// The same through a bare key set alone (the walker's stand-in choice): a key set with no usable key
    /// stands for the card's issuer, so the card is invalid too.
    @Test func aLoneKeySetWithoutUsableKeysLeavesTheCardInvalid() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", Self.path("keyset-only-enc-key", "jwks-only-enc-key.json"), "--now", "1700000100",
            Self.path("keyset-only-enc-key", "forged-claims-spec-kid.smart-health-card"),
        ])
        #expect(run.status == 1 && run.stdout.contains("error KEY_SET_INVALID at signature"), "\(run.stdout)")
        #expect(run.stdout.contains("is not bound to an issuer, so it was taken as the key set of every card's issuer"))
    }

    @Test func jwsCritExp() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", "\(Self.spec)=\(Self.path("jws-crit-exp", "jwks-spec-issuer.json"))", "--now",
            "1700000100",
            Self.path("jws-crit-exp", "jws-crit-exp.smart-health-card"),
        ])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(run.stdout.contains("error JWS_HEADER_CRIT at header.crit: crit names 'exp'"), "\(run.stdout)")
        #expect(!run.stdout.contains("JWS_HEADER_EXTRA_MEMBER"))
    }

    @Test func crlRidTimestampMilliseconds() throws {
        let dir = VerifyFixtures.cases.appendingPathComponent("crl-rid-timestamp-ms")
        let run = try TestSupport.cli([
            "verify", "--json", "--jwks", "\(Self.spec)=\(dir.path)/site/.well-known/jwks.json", "--now", "1700000000",
            dir.appendingPathComponent("example-03-e-file.smart-health-card").path,
            dir.appendingPathComponent("corrected-card-issued-after-cutoff.smart-health-card").path,
        ])
        #expect(run.status == 1)
        let json = try JSONParser.parse(run.stdout)
        let keySet = try #require(json["keySets"]?[0])
        let finding = try #require(keySet["findings"]?.arrayValue?.first { $0["code"] == "CRL_RID_TIMESTAMP" })
        #expect(finding["severity"] == "error" && finding["path"] == "rids[0]")
        #expect(
            finding["message"]?.stringValue?.contains("Probably meant: 1687450765 (2023-06-22 16:19:25 UTC)") == true)
        #expect(keySet["valid"] == .bool(false))
        for (n, when) in [(0, "before"), (1, "after")] {
            let card = try Self.card(json, n)
            #expect(Self.codes(card).contains("REVOKED") && Self.codes(card).contains("KEY_SET_INVALID"))
            let revoked = card["findings"]?.arrayValue?.first { $0["code"] == "REVOKED" }?["message"]?.stringValue ?? ""
            #expect(
                revoked.contains("That entry decided the verdict") && revoked.contains("this card was issued \(when) that"),
                "\(revoked)")
        }
        // The spec's own list (timestamps in seconds, before now) is sound.
        let spec = try TestSupport.cli([
            "verify", "--jwks", "\(Self.spec)=\(TestSupport.spec("issuer").path)", "--now", "1700000000",
            TestSupport.spec("issuer/.well-known/jwks.json").path,
        ])
        #expect(!spec.stdout.contains("CRL_RID_TIMESTAMP"), "\(spec.stdout)")
    }

    /// The kind, through a site folder: a CRL written beside the key set with a timestamp after --now, and one
    /// after --now but before a later --now.
    @Test func crlTimestampsAreJudgedAtNow() throws {
        let forge = try VerifyForge()
        let keySet = try forge.writeKeySet()
        let crl = #"{"kid":"\#(forge.kid)","method":"rid","ctr":1,"rids":["abc.1750000000"]}"#
        _ = try forge.write(crl, "site/.well-known/crl/\(forge.kid).json")
        var key = try JSONParser.parse(try VerifyFixtures.bytes(URL(fileURLWithPath: keySet)))["keys"]![0]!.objectValue!
        key["crlVersion"] = .integer(1)
        _ = try forge.writeKeySet([.object(key)])
        let early = try TestSupport.cli(["verify", "--now", "1700000000", keySet])
        #expect(early.status == 1 && early.stdout.contains("error CRL_RID_TIMESTAMP"), "\(early.stdout)")
        #expect(early.stdout.contains("is after now") && !early.stdout.contains("milliseconds"))
        let late = try TestSupport.cli(["verify", "--now", "1760000000", keySet])
        #expect(late.status == 0 && !late.stdout.contains("CRL_RID_TIMESTAMP"), "\(late.stdout)")
    }

    /// The walker reads the revocation list beside a key set for the bytes API; one that is a FIFO is never
    /// opened (it would wait forever): CRL_INVALID says it cannot be read, and it revokes nothing.
    @Test func aRevocationListThatIsAFIFOIsRefusedNotWaitedOn() throws {
        let forge = try VerifyForge()
        let keySet = try forge.writeKeySet()
        let crl = forge.dir.appendingPathComponent("site/.well-known/crl")
        try FileManager.default.createDirectory(at: crl, withIntermediateDirectories: true)
        #expect(mkfifo(crl.appendingPathComponent("\(forge.kid).json").path, 0o644) == 0)
        let run = try TestSupport.cli(["verify", "--now", "1700000000", keySet])
        #expect(run.status == 1 && run.stdout.contains("error CRL_INVALID"), "\(run.stdout)")
        #expect(run.stdout.contains("FIFO"), "\(run.stdout)")
    }

    /// Bidirectional controls and invisible characters in a name are a warning (the name may display as
    /// another), shown escaped; a Persian name's zero-width non-joiner between letters is how it is written.
    @Test func invisibleCharactersInANameAreAWarning() throws {
        let forge = try VerifyForge()
        let site = FileIO.parent(of: FileIO.parent(of: try forge.writeKeySet()))
        func findings(family: String) throws -> [Finding] {
            var bundle = VerifyForge.bundle().objectValue!
            VerifyForge.changing(&bundle, "Patient") {
                $0["name"] = .array([.object(["family": .string(family), "given": ["Ada"]])])
            }
            let card = try forge.card(try forge.jws(claims: VerifyForge.claims(bundle: .object(bundle))))
            return try forge.verify([card], keySets: [site]).flatMap(\.findings)
        }
        for family in ["Test\u{202E}nosrep", "Test\u{200B}person", "\u{2066}Testperson\u{2069}", "Test\u{00AD}person"] {
            let found = try findings(family: family).filter { $0.code == .patientNameInvisible }
            #expect(found.count == 1 && found[0].severity == .warning, "\(family.unicodeScalars.map(\.value))")
            #expect(found.first?.location.path == "Bundle.entry[0].resource.name[0].family")
            #expect(found.first?.message.contains("\\u{") == true, "shown escaped: \(found.first?.message ?? "")")
        }
        #expect(try findings(family: "Testperson").filter { $0.code == .patientNameInvisible }.isEmpty)
        #expect(
            try findings(family: "\u{645}\u{06CC}\u{200C}\u{0631}\u{0648}").filter { $0.code == .patientNameInvisible }
                .isEmpty)
    }

    /// A hostile card's findings are listed within the limit per code, so --json stays small: the payload it
    /// echoes is most of it.
    @Test func aHostileCardGivesASmallJSONReport() throws {
        let dir = try TestSupport.tempDir("hostile")
        let count = 1500
        var entries = [
            #"{"fullUrl":"resource:0","resource":{"resourceType":"Patient","name":[{"family":"X"}],"birthDate":"1960-01-01"}}"#
        ]
        for i in 1...count {
            entries.append(
                #"{"fullUrl":"resource:\#(i)","resource":{"resourceType":"Immunization","status":"x","vaccineCode":{"coding":[{"#
                    + #""system":"http://hl7.org/fhir/sid/cvx","code":"999999"}]},"patient":{"reference":"resource:\#(i + count)"},"#
                    + #""occurrenceDateTime":"20x1","id":"a","meta":{"b":1},"text":{"div":"x"}}}"#)
        }
        let payload =
            #"{"iss":"https://issuer.example.org","nbf":1700000000,"vc":{"type":["https://smarthealth.cards#health-card"],"#
            + #""credentialSubject":{"fhirVersion":"4.0.1","fhirBundle":{"resourceType":"Bundle","type":"collection","entry":["#
            + entries.joined(separator: ",") + "]}}}}"
        let jws =
            Base64URL.encode(Array(#"{"zip":"DEF","alg":"ES256","kid":"k"}"#.utf8)) + "."
            + Base64URL.encode(try RawDeflater(level: 9).deflate(Array(payload.utf8))) + "."
            + Base64URL.encode([UInt8](repeating: 0, count: 64))
        let card = try TestSupport.write(
            #"{"verifiableCredential":["\#(jws)"]}"#, to: "hostile.smart-health-card", in: dir)
        let run = try TestSupport.cli(["verify", "--json", "--now", "1700000100", card])
        #expect(run.status == 1)
        let json = try JSONParser.parse(run.stdout)
        let credential = try Self.card(json)
        let listed = credential["findings"]?.arrayValue?.count ?? 0
        #expect(listed > 100 && listed < 250, "\(listed)")
        #expect(credential["findingsOmitted"]?["IMMUNIZATION_STATUS"] == .integer(Int64(count - 20)))
        // The findings are a few tens of kB; the payload, over 256 KiB once inflated, is checked but not repeated.
        let findingsBytes = JSONWriter.pretty(credential["findings"]!).count
        #expect(findingsBytes < 96 * 1024, "\(findingsBytes)")
        #expect(payload.utf8.count > 256 * 1024)
        #expect(credential["payload"] == .null)
        #expect(credential["payloadOmitted"]?["bytes"] == .integer(Int64(payload.utf8.count)))
        #expect(run.stdout.utf8.count < findingsBytes + 16 * 1024, "\(run.stdout.utf8.count) bytes of --json")
        // The readable summary lists the first 100 entries and counts the rest.
        let text = try TestSupport.cli(["verify", "--now", "1700000100", card])
        #expect(text.status == 1)
        #expect(text.stdout.components(separatedBy: "\n  dose ").count - 1 == 99, "\(text.stdout.prefix(2000))")
        #expect(text.stdout.contains("… and \(count + 1 - 100) more entries"), "\(text.stdout.suffix(2000))")
        #expect(text.stdout.utf8.count < 200 * 1024, "\(text.stdout.utf8.count) bytes of summary")
    }

    /// A PATH argument that does not exist is named in the error with its control and Bidi characters escaped:
    /// a name cannot recolour the terminal or turn the message around.
    @Test func aMissingPathIsNamedEscaped() throws {
        for name in ["no\u{202E}txt.gnp", "a\u{1B}[31mb"] {
            let run = try TestSupport.cli(["verify", "/nonexistent/\(name)"])
            #expect(run.status == 2, "\(run.stderr)")
            #expect(!run.stderr.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x1B }, "\(run.stderr)")
            #expect(run.stderr.contains("\\u{202E}") || run.stderr.contains("\\u{1B}"), "\(run.stderr)")
        }
    }
}
