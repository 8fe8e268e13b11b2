import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// A FHIR `document` Bundle (an IPS) given to `link create` was shared without any check: FHIR R4's own Bundle
/// invariants say a document starts with its Composition (bdl-11) and has an identifier (bdl-9) and a timestamp
/// (bdl-10), and every Bundle has unique fullUrls (bdl-7), … A Bundle that breaks them is refused with
/// BUNDLE_INVARIANT, naming the rules, before anything is shared (no link is made); a good IPS document is shared.
@Suite struct SharedBundleInvariantsTests {
    static let patient = #"{"fullUrl":"urn:uuid:7a2d2a7c-2a4b-4d8e-9a55-2f1d2c1b0a01","resource":{"resourceType":"Patient","name":[{"family":"Testperson","given":["Ada"]}],"birthDate":"1960-01-01"}}"#
    static let composition = #"{"fullUrl":"urn:uuid:7a2d2a7c-2a4b-4d8e-9a55-2f1d2c1b0a00","resource":{"resourceType":"Composition","status":"final","type":{"coding":[{"system":"http://loinc.org","code":"60591-5"}]},"subject":{"reference":"urn:uuid:7a2d2a7c-2a4b-4d8e-9a55-2f1d2c1b0a01"},"date":"2024-03-01T09:00:00Z","author":[{"display":"Springfield Clinic"}],"title":"Patient Summary","section":[]}}"#

    static func document(entries: [String], identifier: Bool = true, timestamp: Bool = true) -> String {
        var members = [#""resourceType":"Bundle""#, #""type":"document""#]
        if identifier { members.append(#""identifier":{"system":"urn:ietf:rfc:3986","value":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0"}"#) }
        if timestamp { members.append(#""timestamp":"2024-03-01T09:00:00Z""#) }
        members.append(#""entry":[\#(entries.joined(separator: ","))]"#)
        return "{" + members.joined(separator: ",") + "}"
    }

    @Test func linkCreateRefusesADocumentThatBreaksFHIRsBundleInvariants() throws {
        let dir = try TestSupport.tempDir("link-ips")
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let cases: [(json: String, rules: [String])] = [
            (Self.document(entries: [Self.patient, Self.composition]), ["bdl-11"]),
            (Self.document(entries: [Self.composition, Self.patient], identifier: false, timestamp: false), ["bdl-9", "bdl-10"]),
            (Self.document(entries: [Self.composition, Self.patient, Self.patient]), ["bdl-7"]),
        ]
        for (i, (json, rules)) in cases.enumerated() {
            let file = try TestSupport.write(json, to: "ips-\(i).json", in: dir)
            let run = try TestSupport.cli(["link", "create", "--db", db, "--base-url", LinkCommandTests.base, file])
            #expect(run.status != 0, "\(rules): \(run.stdout)")
            #expect(!run.stdout.contains("shlink:/"), "nothing is shared: \(run.stdout)")
            #expect(run.stderr.contains("BUNDLE_INVARIANT") || run.stderr.contains("Bundle invariant"), "\(run.stderr)")
            for rule in rules { #expect(run.stderr.contains("invariant \(rule)"), "\(rule): \(run.stderr)") }
        }
        // The library says it with the rule code, before anything is encrypted.
        let bytes = Array(cases[0].json.utf8)
        #expect {
            _ = try LinkContent.read(bytes, name: "ips.json")
        } throws: { error in
            (error as? HealthCardError)?.code?.rawValue == "BUNDLE_INVARIANT"
                && (error as? HealthCardError)?.text.contains("first entry is a Patient, not its Composition") == true
        }
        #expect(try TestSupport.cli(["link", "list", "--db", db, "--json"]).stdout.contains("\"id\"") == false)

        // A good IPS document (its Composition first, an identifier, a timestamp) is shared.
        let good = try TestSupport.write(Self.document(entries: [Self.composition, Self.patient]), to: "ips-good.json", in: dir)
        let made = try TestSupport.cli(["link", "create", "--db", db, "--base-url", LinkCommandTests.base, good])
        #expect(made.status == 0 && made.stdout.hasPrefix("shlink:/"), "\(made.stderr)")
    }
}
