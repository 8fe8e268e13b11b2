import Foundation

import HealthCardsCore

/// FHIR Bundles and times shared by the tests of several layers (validation in Core, issuing, verify).
package enum TestBundles {
    /// The spec's example signing key id (spec-examples, 3Kfdg…).
    package static let specKid = "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"

    /// The forge's good vaccination Bundle with one resource changed.
    package static func bundle(_ type: String = "Patient", doses: Int = 1, _ change: (inout JSONObject) -> Void) -> JSONValue {
        var b = VerifyForge.bundle(doses: doses).objectValue!
        VerifyForge.changing(&b, type, change)
        return .object(b)
    }
    /// A good lab Bundle: Patient + one Observation (LOINC 94558-4, SNOMED CT 260415000).
    package static func labBundle(_ change: (inout JSONObject) -> Void = { _ in }) -> JSONValue {
        var observation: JSONObject = [
            "resourceType": "Observation", "status": "final",
            "code": .object(["coding": [.object(["system": .string(Terminology.loinc), "code": "94558-4"])]]),
            "subject": .object(["reference": "resource:0"]), "effectiveDateTime": "2021-02-17T09:30:00-05:00",
            "performer": [.object(["display": "ABC General Hospital"])],
            "valueCodeableConcept": .object([
                "coding": [.object(["system": .string(Terminology.snomedCT), "code": "260415000"])]
            ]),
        ]
        change(&observation)
        let patient = VerifyForge.bundle()["entry"]![0]!
        return .object([
            "resourceType": "Bundle", "type": "collection",
            "entry": [
                patient, .object(["fullUrl": "resource:1", "resource": .object(observation)]),
            ],
        ])
    }
    package static func caseBundle(_ folder: String, _ file: String) throws -> JSONValue {
        try JSONParser.parse(try VerifyFixtures.bytes(VerifyFixtures.cases.appendingPathComponent("\(folder)/\(file)")))
    }
    /// An IPS-style patient summary: a `document` Bundle with a Composition, a Patient, an Immunization and
    /// a Condition. Any Bundle.type is allowed; the generic SHC rules apply and no vaccination rule does.
    package static func patientSummary() -> JSONValue {
        .object([
            "resourceType": "Bundle", "type": "document",
            "entry": [
                .object([
                    "fullUrl": "resource:0",
                    "resource": .object([
                        "resourceType": "Composition", "status": "final", "title": "Patient summary",
                        "date": "2024-01-01",
                        "type": .object([
                            "coding": [.object(["system": .string(Terminology.loinc), "code": "60591-5"])]
                        ]),
                        "subject": .object(["reference": "resource:1"]),
                        "author": [.object(["reference": "resource:1"])],
                    ]),
                ]),
                .object([
                    "fullUrl": "resource:1",
                    "resource": .object([
                        "resourceType": "Patient", "name": [.object(["family": "Testperson", "given": ["Ada"]])],
                        "birthDate": "1960-01-01",
                        "gender": "female",
                    ]),
                ]),
                .object([
                    "fullUrl": "resource:2",
                    "resource": .object([
                        "resourceType": "Immunization", "status": "not-done",
                        "vaccineCode": .object([
                            "coding": [.object(["system": "http://example.org/local", "code": "X1"])]
                        ]),
                        "patient": .object(["reference": "resource:1"]), "occurrenceString": "childhood",
                    ]),
                ]),
                .object([
                    "fullUrl": "resource:3",
                    "resource": .object([
                        "resourceType": "Condition", "subject": .object(["reference": "resource:1"]),
                        "code": .object([
                            "coding": [.object(["system": .string(Terminology.snomedCT), "code": "38341003"])]
                        ]),
                    ]),
                ]),
            ],
        ])
    }
    package static func seconds(_ iso: String) -> Int64 {
        Int64(ISO8601DateFormatter().date(from: iso)!.timeIntervalSince1970)
    }
}
