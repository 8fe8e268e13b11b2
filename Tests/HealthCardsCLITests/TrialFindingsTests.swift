import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

import HealthCardsCore
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsVerify
import HealthCardsTestSupport

/// What a new user found trying the toolkit from the README (this stop's trial): links inside an output folder
/// that lead into the published site, a patient id with control characters, a header-less CSV whose values were
/// echoed, and `print` with a key set of another issuer. Through the real `healthcards`.
@Suite struct TrialFindingsTests {
    static let issuer = SiteTestSupport.issuer

    /// A site laid out by `site`, and the demo key, in `dir`.
    static func site(in dir: URL) throws -> (site: String, key: String) {
        let key = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, "--issuer", issuer, key])
        return (site, key)
    }

    static func csv(_ rows: String, in dir: URL) throws -> String {
        try TestSupport.write(ClinicInputTests.header + "\n" + rows, to: "in.csv", in: dir)
    }

    /// `cards/` (or `report.ndjson`) as a link into the site: refused before anything is written, the site untouched.
    @Test(arguments: ["cards", "report.ndjson"]) func anOutputEntryLinkingIntoTheSiteIsRefused(entry: String) throws {
        let dir = try TestSupport.tempDir("site-link")
        let (site, key) = try Self.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.path + "/" + entry, withDestinationPath: site + "/pub-" + entry)
        let csv = try Self.csv("P-1,Ann,,Example,1970-01-02,2021-03-01,207,L1,Clinic,E1\n", in: dir)
        let run = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", key, "--template", ClinicInputTests.template, "--no-qr",
            "--out", out.path, csv,
        ])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("a symbolic link into the published site"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: site + "/pub-" + entry))
    }

    /// `site` refuses a folder holding a card, whatever the card's folder is called.
    @Test func siteRefusesAFolderHoldingACardAnywhere() throws {
        let dir = try TestSupport.tempDir("site-card")
        let (site, key) = try Self.site(in: dir)
        try FileManager.default.createDirectory(atPath: site + "/pubcards", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: TestSupport.spec("example-00-e-file.smart-health-card").path,
            toPath: site + "/pubcards/P-1.smart-health-card")
        let run = try TestSupport.cli(["site", "--out", site, "--issuer", Self.issuer, key])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("pubcards/P-1.smart-health-card"), "\(run.stderr)")
    }

    /// A control character inside a patient id rejects the row with STRING_CONTROL_CHARACTER, shown escaped; the
    /// other patient is issued.
    @Test func aControlCharacterInAPatientIDIsRefused() throws {
        let dir = try TestSupport.tempDir("id-control")
        let csv = try Self.csv(
            "C-\u{1B}[2J1,Ann,,Example,1970-01-02,2021-03-01,207,L1,Clinic,E1\n"
                + "C-2,Bo,,Example,1971-01-02,2021-03-01,207,L1,Clinic,E2\n", in: dir)
        let run = try ClinicInputTests.issue(csv, in: dir)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(!run.stderr.unicodeScalars.contains { $0.value == 0x1B }, "\(run.stderr)")
        let report = try ClinicInputTests.reportLines(dir)
        let rejected = report.filter { $0["status"] == "rejected" }
        #expect(rejected.count == 1)
        #expect(rejected.first?["errors"]?[0]?["code"] == "STRING_CONTROL_CHARACTER", "\(rejected)")
        #expect(report.contains { $0["status"] == "issued" && $0["id"] == "C-2" })
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out/cards").path) == ["C-2.smart-health-card"])
    }

    /// A CSV without a header line whose first row holds a value two edits from a column name ("X", "cvx") is
    /// still treated as header-less: the row's values (a person's name and birth date) are not echoed.
    @Test func aHeaderlessRowIsNotEchoedForANearValue() throws {
        let dir = try TestSupport.tempDir("headerless")
        let csv = try TestSupport.write("E1,D-1,Annabel,,Beeson,1970-01-01,X,2021-05-01,208,L1\n", to: "nh.csv", in: dir)
        let run = try ClinicInputTests.issue(csv, in: dir)
        #expect(run.status != 0)
        #expect(run.stderr.contains("none of the columns"), "\(run.stderr)")
        #expect(!run.stderr.contains("Annabel") && !run.stderr.contains("Beeson") && !run.stderr.contains("1970-01-01"), "\(run.stderr)")
    }

    /// `print --jwks` with a key set that does not hold the card's key: not printed (exit 1), saying why; with the
    /// issuer's key set it prints.
    @Test func printRefusesACardWhoseSignatureTheGivenKeysCannotCheck() throws {
        let dir = try TestSupport.tempDir("print-unchecked")
        let (site, _) = try Self.site(in: dir)
        let card = TestSupport.spec("example-00-e-file.smart-health-card").path
        let run = try TestSupport.cli(["print", "--out", dir.appendingPathComponent("pdf").path, "--jwks", site, card])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("signature was not checked"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("pdf/example-00-e-file.pdf").path))
        // The spec key set's key that signs example 00 (its other key's example x5c leaf expired in 2022, an error
        // that makes print refuse the whole key set).
        let jwks = try TestSupport.specKeySetOfKey0()
        let good = try TestSupport.cli([
            "print", "--out", dir.appendingPathComponent("pdf").path,
            "--jwks", "https://spec.smarthealth.cards/examples/issuer=\(jwks)", card,
        ])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("pdf/example-00-e-file.pdf").path))
    }
}

/// Members FHIR R4 does not define on a Patient or an Immunization are refused (`FHIR_UNKNOWN_ELEMENT`), in issue and
/// in verify, and a primitive's `_element` twin is not.
@Suite struct UnknownElementTests {
    static func bundle(adding members: [String: String], to type: String) throws -> JSONValue {
        let parsed = try JSONParser.parse(try VerifyFixtures.bytes(VerifyFixtures.specExamples.appendingPathComponent("example-00-a-fhirBundle.json")))
        guard var bundle = parsed.objectValue, var entries = parsed["entry"]?.arrayValue else { throw HealthCardError(.input, "no entries") }
        for i in entries.indices where entries[i]["resource"]?["resourceType"]?.stringValue == type {
            guard var entry = entries[i].objectValue, var resource = entry["resource"]?.objectValue else { continue }
            for (k, v) in members { resource[k] = .string(v) }
            entry["resource"] = .object(resource)
            entries[i] = .object(entry)
        }
        bundle["entry"] = .array(entries)
        return .object(bundle)
    }

    @Test func aMemberFHIRDoesNotDefineIsAnError() throws {
        for (type, member) in [("Patient", "ssn"), ("Immunization", "foo")] {
            let findings = BundleValidator.validate(try Self.bundle(adding: [member: "123-45-6789"], to: type), now: 1_700_000_000).all
            #expect(findings.contains { $0.code == .fhirUnknownElement && $0.severity == .error && $0.location.path?.hasSuffix(".\(member)") == true }, "\(findings)")
        }
        let twin = BundleValidator.validate(try Self.bundle(adding: ["_birthDate": "x"], to: "Patient"), now: 1_700_000_000).all
        #expect(!twin.contains { $0.code == .fhirUnknownElement }, "\(twin)")
    }

    @Test func issueRefusesABundleWithAnUnknownMember() throws {
        let dir = try TestSupport.tempDir("unknown-element")
        let key = try TestSupport.demoKey(in: dir)
        let input = try TestSupport.write(
            String(decoding: JSONWriter.minified(try Self.bundle(adding: ["ssn": "123-45-6789"], to: "Patient")), as: UTF8.self),
            to: "b.json", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli(["issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--no-qr", "--out", out.path, input])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try TestSupport.report(out)
        #expect(report.first?["status"] == "rejected")
        #expect(report.first?["errors"]?.arrayValue?.contains { $0["code"] == "FHIR_UNKNOWN_ELEMENT" } == true, "\(report)")
        #expect(!run.stderr.contains("123-45-6789") && !run.stdout.contains("123-45-6789"))
    }
}

/// The second trial's small messages: a `--out` that is not a folder, standard input as an input, rule codes without
/// a short reason in the rejected-rows table, and a refusal that an unrelated warning came before.
@Suite struct TrialMessageTests {
    static func issue(_ key: String, out: String, input: String) -> [String] {
        [
            "issue", "--issuer", SiteTestSupport.issuer, "--key", key, "--template", ClinicInputTests.template, "--no-qr",
            "--out", out, input,
        ]
    }

    /// `--out` a FIFO, `/dev/null` or a file: it said only "cannot write …/report.ndjson: Not a directory", after the
    /// `--rid-secret` warning. Now the one line says what was found and that --out must be a folder; nothing made.
    @Test func anOutThatIsNotAFolderIsSaidFirst() throws {
        let dir = try TestSupport.tempDir("out-not-folder")
        let key = try TestSupport.demoKey(in: dir)
        let csv = try TrialFindingsTests.csv("P-1,Ann,,Example,1970-01-02,2021-03-01,207,L1,Clinic,E1\n", in: dir)
        let fifo = dir.appendingPathComponent("fifo-out").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let file = try TestSupport.write("x", to: "a-file", in: dir)
        for (out, what) in [(fifo, "is a FIFO (named pipe)"), ("/dev/null", "is a character device"), (file, "is a regular file")] {
            let run = try TestSupport.cli(Self.issue(key, out: out, input: csv))
            #expect(run.status == 2, "\(run.stderr)")
            let lines = run.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(run.stderr)")
            #expect(run.stderr.hasPrefix("healthcards: --out \(out) \(what); --out must be a folder"), "\(run.stderr)")
        }
        #expect(OutputSafetyTests.kind(fifo) == S_IFIFO)
        #expect(try SiteTestSupport.bytes(file) == Array("x".utf8))
    }

    /// `-` as an input said "input - does not exist": now that standard input is not read, and what to give.
    @Test func standardInputIsSaidNotToBeRead() throws {
        let dir = try TestSupport.tempDir("stdin-input")
        let key = try TestSupport.demoKey(in: dir)
        let run = try TestSupport.cli(Self.issue(key, out: dir.appendingPathComponent("out").path, input: "-"))
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("input - (standard input): `healthcards issue` does not read standard input"), "\(run.stderr)")
        #expect(!run.stderr.contains("does not exist"), "\(run.stderr)")
    }

    /// QR_FAILED and OBSERVATION_STATUS were "fails rule … (docs/error-codes.md)" in the table: now a short reason.
    @Test func rejectedRowsSayWhyInWords() {
        #expect(RejectedRow.reason(for: .qrFailed) == "no QR code could be made for the card (usually: too large for one QR code)")
        #expect(RejectedRow.reason(for: .observationStatus) == "a lab result is not final (its status must be final, amended or corrected)")
        #expect(RejectedRow.reason(for: .outputSymlink).contains("symbolic link"))
    }

    /// `--out` inside the published site: the refusal came after the `--rid-secret` warning; now it is all that is said.
    @Test func theSiteRefusalComesAlone() throws {
        let dir = try TestSupport.tempDir("site-refusal-alone")
        let (site, key) = try TrialFindingsTests.site(in: dir)
        let csv = try TrialFindingsTests.csv("P-1,Ann,,Example,1970-01-02,2021-03-01,207,L1,Clinic,E1\n", in: dir)
        let run = try TestSupport.cli(Self.issue(key, out: site + "/patients", input: csv))
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("healthcards: --out \(site)/patients is inside the published site"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: site + "/patients"))
    }
}
