import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsFixtures
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsVerify
import HealthCardsTestSupport

/// Issue 33, point 1: a Bundle record's files are named for its person (the Patient identifier that gives the rid,
/// or its name and birth date without one), never for its place in the export. An export that drops and reorders
/// records between two runs never leaves a file holding another person's card. Through the real `healthcards`.
@Suite struct PersonFileNameTests {
    static let system = RevocationIdentityTests.system

    /// The people of the export: identifier value (nil: none) and family name.
    static let people: [(value: String?, family: String)] = [
        ("A-1", "Alpha"), ("B 2/x", "Beta"), ("C-3", "Gamma"), (nil, "Delta"),
    ]

    static func line(_ person: (value: String?, family: String)) -> String {
        RevocationIdentityTests.bundle(
            family: person.family, birthDate: "1970-01-01", identifiers: person.value.map { [(system, $0)] } ?? [])
    }

    /// Every card file in `out/cards`: its name (without the extension), the family name of its Patient and its rid.
    static func cards(_ out: URL) throws -> [String: (family: String, rid: String?)] {
        let folder = out.appendingPathComponent("cards")
        var found: [String: (family: String, rid: String?)] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".smart-health-card") {
            let payload = try BatchTestSupport.payload(folder.appendingPathComponent(file))
            let patient = payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?[0]?["resource"]
            let family = try #require(patient?["name"]?[0]?["family"]?.stringValue)
            found[String(file.dropLast(".smart-health-card".count))] = (family, payload["vc"]?["rid"]?.stringValue)
        }
        return found
    }

    /// The person a file name says, checked by decoding the card: a name made from an identifier starts with its
    /// value's safe characters and holds the card whose rid is that identifier's; the one without starts `patient-`.
    static func checkEveryFileHoldsItsPerson(_ out: URL, secret: RIDSecret) throws {
        for (name, card) in try cards(out) {
            let person = try #require(people.first { $0.family == card.family }, "\(name)")
            if let value = person.value {
                let expected = OutputNames.person(identity: "\(system)|\(value)")
                #expect(name == expected || name.hasPrefix(expected + "."), "\(name) holds \(card.family)'s card")
                #expect(card.rid == (try RID.derive(secret: secret, kid: DemoKey.kid, patientID: "\(system)|\(value)")))
            } else {
                #expect(name.hasPrefix("patient-") && card.rid == nil, "\(name) holds \(card.family)'s card")
            }
        }
    }

    @Test func anExportThatDropsAndReordersRecordsNeverPutsOnePersonsCardInAnothersFile() throws {
        let s = try RevocationIdentityTests.setup()
        let secret = try RIDSecretFile.read(s.secret)
        let out = s.dir.appendingPathComponent("out")
        func issue(_ order: [Int]) throws {
            let input = try TestSupport.write(
                order.map { Self.line(Self.people[$0]) }.joined(separator: "\n") + "\n", to: "export.ndjson", in: s.dir)
            try SiteTestSupport.cli([
                "issue", "--issuer", SiteTestSupport.issuer, "--key", s.key, "--out", out.path, "--rid-secret", s.secret,
                "--nbf", "1700000000", input,
            ])
        }
        // Day 1: everyone, and Alpha's second Bundle.
        try issue([0, 1, 2, 3, 0])
        let first = try Self.cards(out)
        #expect(first.count == 5)
        try Self.checkEveryFileHoldsItsPerson(out, secret: secret)
        let alpha = OutputNames.person(identity: "\(Self.system)|A-1")
        #expect(first[alpha]?.family == "Alpha" && first[alpha + ".2"]?.family == "Alpha")
        #expect(first.keys.contains { $0.hasPrefix("B_2_x-") }, "\(first.keys.sorted())")
        // QR images carry their card's name.
        let images = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("qr").path)
        #expect(Set(images.map { String($0.dropLast(".png".count)) }) == Set(first.keys))
        let report = try TestSupport.report(out)
        #expect(report.allSatisfy { $0["status"] == "issued" }, "\(report)")
        #expect(report[1]["files"]?[0]?.stringValue == "cards/" + OutputNames.person(identity: "\(Self.system)|B 2/x") + ".smart-health-card")

        // Day 2: Beta's record dropped, the others reordered.
        try issue([2, 3, 0])
        let second = try Self.cards(out)
        try Self.checkEveryFileHoldsItsPerson(out, secret: secret)
        // No file changed its person; the unchanged people's cards were found already issued, under the same names.
        for (name, card) in second { #expect(first[name]?.family == card.family, "\(name)") }
        #expect(try TestSupport.report(out).allSatisfy { $0["alreadyIssued"] == .bool(true) })
        #expect(second.count == 5)
    }

    /// The Bundle example of docs/batch.md is what the code makes (and `printf '%s' SYSTEM|VALUE | sha256sum` agrees).
    @Test func theDocumentedBundleNameIsWhatTheCodeMakes() throws {
        let batch = try String(contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("docs/batch.md"), encoding: .utf8)
        #expect(batch.contains("`cards/" + OutputNames.person(identity: "https://hospital.example.org/mrn|12345") + ".smart-health-card`"))
        #expect(OutputNames.person(identity: "https://hospital.example.org/mrn|12345") == "12345-f98b5e7c2e400472")
    }

    /// Two people whose names would be one (here forced: one name claimed for two person keys) are refused with
    /// a reason; one person's next record gets `.2`.
    @Test func aNameClashBetweenTwoPeopleIsRefused() {
        var names = NameRegister(all: true)
        #expect(names.claim("n", person: "id:a|1", source: "x.ndjson:1") == .name("n"))
        #expect(names.claim("n", person: "id:a|1", source: "x.ndjson:2") == .name("n.2"))
        #expect(names.claim("n", person: "id:b|1", source: "x.ndjson:3") == .clash(earlier: "x.ndjson:1"))
        #expect(names.register("n.2", id: "n.2", source: "y.csv:2") == "x.ndjson:2")
    }

    /// A clash reaches the report with its code, and the later person's card is not written.
    @Test func aCSVPatientIDEqualToABundlePersonsNameIsRefused() throws {
        let s = try RevocationIdentityTests.setup()
        let out = s.dir.appendingPathComponent("out")
        let name = OutputNames.person(identity: "\(Self.system)|A-1")
        let bundle = try TestSupport.write(Self.line(Self.people[0]) + "\n", to: "export.ndjson", in: s.dir)
        let csv = try TestSupport.write(
            "recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx\n\(name),Eve,Other,1980-01-01,2021-01-01,207\n",
            to: "clinic.csv", in: s.dir)
        let run = try SiteTestSupport.cli(
            [
                "issue", "--issuer", SiteTestSupport.issuer, "--key", s.key, "--out", out.path, "--nbf", "1700000000", "--no-qr",
                "--template", SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path, bundle, csv,
            ], expect: 1)
        let report = try TestSupport.report(out)
        let refused = try #require(report.first { $0["status"] == "rejected" }, "\(run.stderr)")
        #expect(refused["errors"]?[0]?["code"] == "OUTPUT_NAME_CLASH", "\(refused)")
        #expect(try Self.cards(out)[name]?.family == "Alpha")
    }
}
