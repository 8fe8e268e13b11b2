import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsTestSupport

/// Messages a trial found misleading (s40): each says what was found, not only what was expected.
@Suite struct MessageTruthTests {
    /// The findings of a forged card whose claims `change` edits (no key set: only the claims are of interest).
    static func findings(_ change: (inout JSONObject) -> Void) throws -> [Finding] {
        let forge = try VerifyForge()
        var claims = VerifyForge.claims()
        change(&claims)
        let report = HealthCardVerifier(trustStore: TrustStore()).verify(jws: try forge.jws(claims: claims), now: VerifyForge.now)
        return report.findings
    }

    /// `"vc":[]` was "the payload has no vc object": the member is there, as an array. Each JSON type found is named.
    @Test(arguments: [
        (JSONValue.array([]), "vc is an array of 0 elements where an object is required"),
        (.array([.object(["type": ["https://smarthealth.cards#health-card"]])]), "vc is an array of 1 element where an object is required"),
        (.string("x"), "vc is a string ('x') where an object is required"),
        (.integer(7), "vc is a number (7) where an object is required"),
        (.null, "vc is null where an object is required"),
        (.bool(true), "vc is a boolean (true) where an object is required"),
    ])
    func vcOfAnotherTypeIsNamed(value: JSONValue, expected: String) throws {
        let found = try Self.findings { $0["vc"] = value }.filter { $0.code == .vcMissing }
        #expect(found.count == 1 && found[0].message.hasPrefix(expected), "\(found.map(\.message))")
        #expect(found.first?.message.contains("no vc object") == false)
        #expect(found.first?.location.path == "vc")
    }

    @Test func absentVCIsStillSaidAbsent() throws {
        let found = try Self.findings { $0["vc"] = nil }.filter { $0.code == .vcMissing }
        #expect(found.count == 1 && found[0].message.hasPrefix("the payload has no vc object"), "\(found.map(\.message))")
    }

    /// `"iss":[…]` was "iss (the issuer URL) is required" as if there were none: the array is named, and what is
    /// required (a string holding an https URL).
    @Test func issOfAnotherTypeIsNamed() throws {
        let array = try Self.findings { $0["iss"] = [.string(VerifyForge.issuer)] }.filter { $0.code == .issMissing }
        #expect(array.count == 1, "\(array)")
        #expect(array.first?.message.hasPrefix(
            "iss is an array ([\"https://issuer.example.org\"]) where a string (an https URL) is required; "
                + "write the issuer's https URL") == true, "\(array.map(\.message))")
        let number = try Self.findings { $0["iss"] = .integer(5) }.filter { $0.code == .issMissing }
        #expect(number.first?.message.hasPrefix("iss is a number (5) where a string (an https URL) is required") == true,
                "\(number.map(\.message))")
        let empty = try Self.findings { $0["iss"] = "" }.filter { $0.code == .issMissing }
        #expect(empty.first?.message.hasPrefix("iss is an empty string;") == true, "\(empty.map(\.message))")
        let absent = try Self.findings { $0["iss"] = nil }.filter { $0.code == .issMissing }
        #expect(absent.first?.message.hasPrefix("iss (the issuer URL) is required, and the payload has none") == true,
                "\(absent.map(\.message))")
    }

    /// A name holding U+202E gave PATIENT_NAME_INVISIBLE and STRING_INVISIBLE_CHARACTER for the same character at the
    /// same place: it is said once, as PATIENT_NAME_INVISIBLE (a warning in someone else's card, still an error that
    /// refuses the record when issuing). A different hidden character in the same name is still its own finding.
    @Test func anInvisibleCharacterInANameIsReportedOnce() throws {
        func findings(family: String, purpose: BundleValidator.Purpose) throws -> [Finding] {
            var bundle = VerifyForge.bundle(doses: 1).objectValue!
            VerifyForge.changing(&bundle, "Patient") { $0["name"] = .array([.object(["family": .string(family), "given": ["Ada"]])]) }
            let all = BundleValidator.validate(try BundleMinimizer.minimize(.object(bundle)), now: VerifyForge.now, purpose: purpose).all
            return all.filter { $0.location.path == "Bundle.entry[0].resource.name[0].family" }
        }
        for (purpose, severity) in [(BundleValidator.Purpose.verifying, Finding.Severity.warning), (.issuing, .error)] {
            let found = try findings(family: "Test\u{202E}nosrep", purpose: purpose)
            #expect(found.map(\.code) == [.patientNameInvisible], "\(purpose): \(found)")
            #expect(found.first?.severity == severity, "\(purpose): \(found)")
            #expect(found.first?.message.contains("U+202E") == true && found.first?.message.contains("\\u{202E}") == true)
            // U+00A0 (a lookalike space, not a format character) is the string rule's alone; U+202E the name rule's.
            let two = try findings(family: "Test\u{00A0}per\u{202E}son", purpose: purpose)
            #expect(Set(two.map(\.code)) == [.patientNameInvisible, .stringInvisibleCharacter], "\(purpose): \(two)")
            #expect(two.first { $0.code == .stringInvisibleCharacter }?.message.contains("U+00A0") == true, "\(two)")
            #expect(two.first { $0.code == .patientNameInvisible }?.message.contains("U+202E") == true, "\(two)")
        }
    }

    /// A VCI snapshot signature file cut short was "the snapshot was changed, the signature is of another snapshot,
    /// or another key made it": it is said to be truncated, with the length found and the length its DER header
    /// gives, and what to do; bytes that are no DER signature at all are said to be that.
    @Test func aTruncatedDirectorySignatureIsSaidTruncated() throws {
        let dir = try TestSupport.tempDir("message-truth-directory")
        let key = dir.appendingPathComponent("signer.key.pem").path
        let cert = dir.appendingPathComponent("signer.crt").path
        let snapshotPath = try TestSupport.write(#"{"directory":"https://example.org","time":"2023-11-01T04:00:00Z","issuerInfo":[]}"#,
                                                 to: "vci_snapshot.json", in: dir)
        let sigPath = dir.appendingPathComponent("vci_snapshot.sig").path
        for arguments in [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-521", "-nodes", "-keyout", key, "-out", cert,
             "-days", "3650", "-subj", "/CN=signer.test", "-sha512"],
            ["dgst", "-sha512", "-sign", key, "-out", sigPath, snapshotPath],
        ] {
            let run = try TestSupport.run("/usr/bin/env", ["openssl"] + arguments)
            try #require(run.status == 0, "openssl \(arguments): \(run.stderr)")
        }
        let snapshot = Array(try Data(contentsOf: URL(fileURLWithPath: snapshotPath)))
        let signature = Array(try Data(contentsOf: URL(fileURLWithPath: sigPath)))
        let certificate = Array(try Data(contentsOf: URL(fileURLWithPath: cert)))
        // The whole signature verifies: the snapshot is good.
        _ = try Directory(snapshot: snapshot, signature: signature, certificate: certificate)
        func refusal(_ signature: [UInt8]) -> HealthCardError? {
            do {
                _ = try Directory(snapshot: snapshot, signature: signature, certificate: certificate)
                return nil
            } catch { return error }
        }
        // A DER ECDSA signature: SEQUENCE (0x30), its length, two INTEGERs; P-521's are at most 139 bytes (more than 100).
        #expect(signature.first == 0x30 && (101...139).contains(signature.count), "\(signature.count)")
        let cut = try #require(refusal(Array(signature.prefix(100))))
        #expect(cut.code == .directorySignatureInvalid)
        #expect(cut.text.contains("vci_snapshot.sig is truncated: it is 100 bytes, and the DER signature it starts is "
                                  + "\(signature.count) bytes"), "\(cut.text)")
        #expect(!cut.text.contains("was changed"), "\(cut.text)")
        #expect(cut.text.contains("download vci_snapshot.json and vci_snapshot.sig again"), "\(cut.text)")
        let garbage = try #require(refusal(Array("not a signature".utf8)))
        #expect(garbage.code == .directorySignatureInvalid)
        #expect(garbage.text.contains("vci_snapshot.sig is not a DER ECDSA signature (15 bytes"), "\(garbage.text)")
        #expect(!garbage.text.contains("was changed"), "\(garbage.text)")
        let empty = try #require(refusal([]))
        #expect(empty.text.contains("vci_snapshot.sig is empty"), "\(empty.text)")
        // A whole signature of other bytes is still "does not verify".
        var flipped = signature
        flipped[flipped.count - 1] ^= 0x01
        let other = try #require(refusal(flipped))
        #expect(other.text.contains("does not verify"), "\(other.text)")
    }
}
