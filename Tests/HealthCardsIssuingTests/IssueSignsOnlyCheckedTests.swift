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

/// The library signs only what it checked: the issuer makes the signed bytes from the `CheckedBundle` it
/// judged, its settings are checked when it is made, and through its public API it cannot be made to
/// sign a payload that `verify` rejects. Every card it does sign verifies with no error, with the
/// library's verifier and with the independent checker.
@Suite(.serialized) struct IssueSignsOnlyCheckedTests {
    static let issuer = "https://issuer.example.org"

    /// Every Bundle the tests know that breaks a rule, the reported cases, and good ones of each profile.
    static func corpus() throws -> [(name: String, bundle: JSONValue)] {
        var out: [(String, JSONValue)] = [
            ("good vaccination", VerifyForge.bundle()), ("good lab", TestBundles.labBundle()),
            ("patient summary", TestBundles.patientSummary()),
        ]
        for (rule, _, change) in VerifyIssueRoundTripTests.badBundles {
            var b = VerifyForge.bundle().objectValue!
            change(&b)
            out.append((rule, .object(b)))
        }
        for (folder, file) in [
            ("meta-security-bad", "bundle-meta-security-badkey.json"),
            ("occurrence-string-only", "occurrence-string-only.json"),
            ("lab-loinc-answer-code", "lab-value-LA11883-8.json"),
        ] {
            out.append((folder, try TestBundles.caseBundle(folder, file)))
        }
        let mutations: [(String, (inout JSONObject) -> Void)] = [
            ("string meta", { $0["meta"] = "IAL1.2" }),
            (
                "IAL3",
                {
                    $0["meta"] = .object([
                        "security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL3"])]
                    ])
                }
            ),
            ("occurrenceString too", { $0["occurrenceString"] = "Jan 2021" }),
            ("zone trap", { $0["occurrenceDateTime"] = "2021-01-01T00:00:00+-1:00" }),
            ("NUL in lot", { $0["lotNumber"] = "A\u{0}B" }),
            (
                "unknown LOINC answer",
                {
                    $0["vaccineCode"] = .object([
                        "coding": [.object(["system": .string(Terminology.loinc), "code": "LA11883-8"])]
                    ])
                }
            ),
        ]
        for (name, change) in mutations {
            out.append((name, TestBundles.bundle("Immunization", doses: 1, change)))
        }
        out.append(
            (
                "newline in name",
                TestBundles.bundle { $0["name"] = [.object(["family": "Test\nperson", "given": ["Ada"]])] }
            ))
        var duplicate = VerifyForge.bundle(doses: 2).objectValue!
        var entries = duplicate["entry"]!.arrayValue!
        entries[2] = .object(["fullUrl": "resource:2", "resource": entries[1]["resource"]!])
        duplicate["entry"] = .array(entries)
        out.append(("duplicate dose", .object(duplicate)))
        return out
    }

    @Test func theLibraryCannotBeMadeToSignAPayloadVerifyRejects() throws {
        let (_, _, issued, refused) = try Self.signCorpus()
        #expect(issued == ["good vaccination", "good lab", "patient summary", "lab-loinc-answer-code"], "\(issued)")
        #expect(refused.count == (try Self.corpus()).count - 4)
    }

    /// The cards the library signed from the corpus pass the independent checker.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func signedCorpusCardsPassIndependentChecker() throws {
        let (dir, site, issued, _) = try Self.signCorpus()
        #expect(issued.count == 4)
        let check = try TestSupport.check(["--jwks", site.path, dir.appendingPathComponent("cards").path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.contains("3 credentials checked, 0 errors"), "\(check.stdout)")
        // Known disagreement: since SHC 1.3.0 a card that is not a vaccination or lab card (here an
        // IPS-style `document` with a not-done Immunization, which IPS allows) is judged by the generic
        // SHC rules only; the checker applies the vaccination IG's Immunization rules to every
        // Immunization. Its findings on that card are exactly those two rules; anything else fails.
        let generic = try TestSupport.check(["--jwks", site.path, dir.appendingPathComponent("generic").path])
        let errors = generic.stdout.split(separator: "\n").filter { $0.hasPrefix("error: ") }.map {
            $0.split(separator: ":")[1]
        }
        #expect(errors == [" profile-immunization-status", " profile-vaccine-code"], "\(generic.stdout)")
    }

    /// Offers every Bundle of the corpus to a `CardIssuer` both ways (a Bundle, a checked Bundle's payload),
    /// writes what it signs (`cards/N.smart-health-card`, the patient summary in `generic/`) and checks each
    /// signed card with our verifier; returns the folder, the key set and the names signed and refused.
    static func signCorpus() throws -> (dir: URL, site: URL, issued: [String], refused: [String]) {
        let dir = try TestSupport.tempDir("signs-checked")
        let key = try P256Key.generate()
        let nbf = Clock.nowSeconds() - 60
        let issuer = try CardIssuer(
            signer: try ES256Signer(key: key), settings: IssueSettings(issuer: Self.issuer, notBefore: nbf), clock: SystemWallClock())
        let site = dir.appendingPathComponent("site/.well-known/jwks.json")
        try FileManager.default.createDirectory(at: site.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(JSONWriter.pretty(.object(["keys": [JWK(key: key).json]]))).write(to: site)
        let verifier = try FileVerifier(keySets: [site.path], now: Clock.nowSeconds())
        var issued: [String] = []
        var refused: [String] = []
        for (name, bundle) in try Self.corpus() {
            // Every public way in: a Bundle, and a checked Bundle's payload.
            let checked = try? CheckedBundle.minimizing(bundle, now: Clock.nowSeconds())
            var card: IssuedCard?
            do { card = try issuer.issue(bundle: bundle) } catch {}
            if let checked {
                let viaPayload = try? issuer.issue(issuer.payload(for: checked))
                #expect((viaPayload == nil) == (card == nil), "\(name): both ways agree")
                #expect(checked.isAcceptable == (card != nil), "\(name): signed exactly when the check has no error")
            }
            guard let card else {
                refused.append(name)
                continue
            }
            issued.append(name)
            // The patient summary goes apart: the independent checker judges its Immunization by the
            // vaccination IG (see below).
            let folder = name == "patient summary" ? "generic" : "cards"
            let file = dir.appendingPathComponent("\(folder)/\(issued.count).smart-health-card")
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(card.fileBytes).write(to: file)
            let reports = try verifier.verify([file.path])
            let valid = reports.allSatisfy { $0.isValid }
            let comment = Comment(
                rawValue: name + ": " + reports.flatMap { $0.findings.map(\.description) }.joined(separator: "; "))
            #expect(valid, comment)
            #expect(reports.first?.signature == .verified)
        }
        return (dir, site, issued, refused)
    }

    @Test func settingsThatMakeCardsVerifyRejectsAreRefused() throws {
        let key = try P256Key.generate()
        let now = Clock.nowSeconds()
        let bad: [(IssueSettings, String)] = [
            (IssueSettings(issuer: "http://issuer.example.org", notBefore: now - 60), "is not https"),
            (IssueSettings(issuer: "https://issuer.example.org/", notBefore: now - 60), "ends with '/'"),
            (IssueSettings(issuer: Self.issuer, notBefore: now + 3_600), "is in the future"),
            (IssueSettings(issuer: Self.issuer, notBefore: now * 1_000), "milliseconds"),
            (IssueSettings(issuer: Self.issuer, notBefore: -1), "not whole seconds"),
            (IssueSettings(issuer: Self.issuer, notBefore: now - 60, expires: now - 30), "has passed"),
            (IssueSettings(issuer: Self.issuer, notBefore: now - 60, expires: now * 1_000), "not whole seconds"),
        ]
        for (settings, says) in bad {
            do {
                _ = try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock())
                Issue.record("accepted \(settings)")
            } catch let error as HealthCardError {
                #expect(error.kind == .configuration)
                #expect(error.message.contains(says), "\(error.message)")
            }
        }
        // The same settings with a later exp are fine.
        _ = try CardIssuer(
            signer: try ES256Signer(key: key),
            settings: IssueSettings(issuer: Self.issuer, notBefore: now - 60, expires: now + 60), clock: SystemWallClock())
    }

    @Test func aPayloadMadeByAnotherIssuerIsNotSigned() throws {
        let settings = IssueSettings(issuer: Self.issuer, notBefore: Clock.nowSeconds() - 60)
        let one = try CardIssuer(signer: try ES256Signer(key: try P256Key.generate()), settings: settings, clock: SystemWallClock())
        let other = try CardIssuer(signer: try ES256Signer(key: try P256Key.generate()), settings: settings, clock: SystemWallClock())
        let card = one.payload(for: try CheckedBundle.minimizing(VerifyForge.bundle(), now: Clock.nowSeconds()))
        #expect(card.bytes == card.payload.minifiedBytes)
        #expect(try one.issue(card).payload == card.bytes)
        do {
            _ = try other.issue(card)
            Issue.record("signed another issuer's payload")
        } catch {
            #expect(error.all.first?.message.contains("made by the issuer of kid") == true)
        }
    }

    /// `nbf` and `exp` are numbers in the settings and in the card: whole seconds, never strings.
    @Test func nbfAndExpAreWrittenAsTheNumbersGiven() throws {
        let now = Clock.nowSeconds()
        let issuer = try CardIssuer(
            signer: try ES256Signer(key: try P256Key.generate()),
            settings: IssueSettings(issuer: Self.issuer, notBefore: now - 60, expires: now + 86_400), clock: SystemWallClock())
        let claims = try JSONParser.parse(try issuer.issue(bundle: VerifyForge.bundle()).payload)
        #expect(claims["nbf"]?.numberLexeme == String(now - 60))
        #expect(claims["exp"]?.numberLexeme == String(now + 86_400))
    }
}
