import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// Validator rules: control characters in FHIR strings, the IG's forbidden and data-minimization
/// elements, year 0000, and future dates judged with time zones against a fixed `now`.
@Suite struct ValidationProfileTests {
    /// 2026-11-30T12:00:00Z, from Foundation (independent of `FHIRDate.epochSeconds`).
    static let now = seconds("2026-11-30T12:00:00Z")

    static func seconds(_ iso: String) -> Int64 {
        Int64(ISO8601DateFormatter().date(from: iso)!.timeIntervalSince1970)
    }

    /// The forge's good vaccination Bundle with one resource changed (`TestBundles.bundle`).
    static func bundle(_ type: String = "Patient", doses: Int = 1, _ change: (inout JSONObject) -> Void) -> JSONValue {
        TestBundles.bundle(type, doses: doses, change)
    }

    /// A good lab Bundle (`TestBundles.labBundle`).
    static func labBundle(_ change: (inout JSONObject) -> Void = { _ in }) -> JSONValue { TestBundles.labBundle(change) }

    func findings(_ bundle: JSONValue, now: Int64? = ValidationProfileTests.now) -> [Finding] {
        BundleValidator.validate(bundle, now: now).all
    }

    @Test func goodBundlesHaveNoFinding() {
        #expect(findings(VerifyForge.bundle()).isEmpty)
        #expect(findings(Self.labBundle()).isEmpty)
    }

    // MARK: control characters

    @Test func controlCharacterInAStringIsAnErrorWithPathAndCodePoint() throws {
        let f = findings(Self.bundle { $0["name"] = [.object(["family": "Test\u{1B}[2Jperson", "given": ["Ada"]])] })
        let finding = try #require(f.first { $0.code == .stringControlCharacter })
        #expect(finding.severity == .error)
        #expect(finding.location.path == "Bundle.entry[0].resource.name[0].family")
        #expect(finding.message.contains("U+001B at character 5"))
        #expect(
            !finding.message.unicodeScalars.contains { $0.value < 0x20 },
            "the message must not carry the character itself")
        #expect(finding.message.contains("\\u{1B}"))
    }

    @Test func tabCRLFAndDELAreAllowedInsideStrings() {
        let f = findings(Self.bundle("Immunization") { $0["lotNumber"] = "A\tB\r\nC\u{7F}D" })
        #expect(!f.contains { $0.code == .stringControlCharacter }, "\(f)")
        for c in ["\u{0}", "\u{7}", "\u{8}", "\u{B}", "\u{C}", "\u{1F}"] {
            let g = findings(Self.bundle("Immunization") { $0["lotNumber"] = .string("A\(c)B") })
            #expect(g.map(\.code) == [.stringControlCharacter], "\(c.unicodeScalars.first!.value): \(g)")
        }
    }

    @Test func controlCharacterInAMemberNameAndOutsideTheResources() throws {
        let inResource = findings(Self.bundle { $0["bad\u{1}name"] = "x" })
        let named = try #require(inResource.first { $0.code == .stringControlCharacter })
        #expect(named.location.path == "Bundle.entry[0].resource.bad\\u{1}name")
        #expect(named.message.contains("U+0001") && named.message.contains("member name"))
        var b = VerifyForge.bundle().objectValue!
        b["timestamp"] = "2021\u{0}"
        let shell = findings(.object(b)).filter { $0.code == .stringControlCharacter }
        #expect(shell.map(\.location.path) == ["Bundle.timestamp"])
        #expect(shell.first?.message.contains("U+0000") == true)
    }

    // MARK: IG profiles

    @Test func patientElementsTheIGForbidsOrDrops() {
        let f = findings(
            Self.bundle { p in
                p["contact"] = [.object(["name": .object(["text": "Kin"])])]
                p["address"] = [
                    .object(["line": ["1 Main St"], "text": "1 Main St, Springfield", "city": "Springfield"])
                ]
                p["identifier"] = [.object(["system": "urn:example:mrn", "value": "12345"])]
                p["gender"] = "female"
                p["telecom"] = [.object(["system": "phone", "value": "555-0100"])]
                p["communication"] = [
                    .object(["language": .object(["coding": [.object(["system": "urn:ietf:bcp:47", "code": "en"])]])])
                ]
                p["extension"] = [.object(["url": "http://example.org/ext", "valueString": "x"])]
                p["active"] = .bool(true)
                p["deceasedBoolean"] = .bool(false)
            })
        let got = Set(f.map { "\($0.severity.rawValue) \($0.code.rawValue) \($0.location.path ?? "")" })
        let p = "Bundle.entry[0].resource"
        let expected: Set<String> = [
            "error PATIENT_CONTACT \(p).contact",
            "error PATIENT_ADDRESS_DETAIL \(p).address[0].line",
            "error PATIENT_ADDRESS_DETAIL \(p).address[0].text",
            "warning PATIENT_IDENTIFIER \(p).identifier",
            "warning PATIENT_GENDER \(p).gender",
            "warning PATIENT_DATA_MINIMIZATION \(p).telecom",
            "warning PATIENT_DATA_MINIMIZATION \(p).address",
            "warning PATIENT_DATA_MINIMIZATION \(p).communication",
            "warning PATIENT_DATA_MINIMIZATION \(p).extension",
            "warning PATIENT_DATA_MINIMIZATION \(p).active",
            "warning PATIENT_DATA_MINIMIZATION \(p).deceasedBoolean",
        ]
        #expect(
            got == expected,
            "extra \(got.subtracting(expected).sorted()), missing \(expected.subtracting(got).sorted())")
        #expect(f.first { $0.code == .patientIdentifier }?.message.contains("US Patient profiles") == true)
        #expect(f.first { $0.location.path == "\(p).deceasedBoolean" }?.message.contains("deceased[x]") == true)
        #expect(f.first { $0.code == .patientDataMinimization }?.message.contains("shc-patient-general-dm") == true)
    }

    @Test func immunizationElementsTheDataMinimizationProfileDrops() {
        let dropped = ["manufacturer", "site", "route", "doseQuantity", "identifier", "note", "reaction"]
        let f = findings(
            Self.bundle("Immunization") { r in
                r["manufacturer"] = .object(["display": "Moderna"])
                r["site"] = .object([
                    "coding": [.object(["system": "http://terminology.hl7.org/CodeSystem/v3-ActSite", "code": "LA"])]
                ])
                r["route"] = .object([
                    "coding": [
                        .object([
                            "system": "http://terminology.hl7.org/CodeSystem/v3-RouteOfAdministration", "code": "IM",
                        ])
                    ]
                ])
                r["doseQuantity"] = .object(["value": .number("0.5"), "unit": "mL"])
                r["identifier"] = [.object(["value": "EV-1"])]
                r["note"] = [.object(["text": "fine"])]
                r["reaction"] = [.object(["reported": .bool(false)])]
                r["performer"] = [
                    .object(["actor": .object(["display": "ABC General Hospital", "reference": "resource:0"])])
                ]
            })
        let p = "Bundle.entry[1].resource"
        let warnings = f.filter { $0.code == .immunizationDataMinimization }
        #expect(
            Set(warnings.compactMap(\.location.path))
                == Set(dropped.map { "\(p).\($0)" } + ["\(p).performer[0].actor.reference"]))
        #expect(warnings.allSatisfy { $0.severity == .warning && $0.message.contains("data minimization") })
        #expect(warnings.first?.message.contains("vaccination-credential-immunization-dm") == true)
    }

    @Test func observationElementsTheDataMinimizationProfileDrops() {
        let dropped = ["category", "issued", "interpretation", "note", "method", "specimen", "device"]
        let f = findings(
            Self.labBundle { o in
                o["category"] = [
                    .object([
                        "coding": [
                            .object([
                                "system": "http://terminology.hl7.org/CodeSystem/observation-category",
                                "code": "laboratory",
                            ])
                        ]
                    ])
                ]
                o["issued"] = "2021-02-18T10:00:00Z"
                o["interpretation"] = [
                    .object([
                        "coding": [
                            .object([
                                "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation",
                                "code": "N",
                            ])
                        ]
                    ])
                ]
                o["note"] = [.object(["text": "ok"])]
                o["method"] = .object([
                    "coding": [.object(["system": .string(Terminology.snomedCT), "code": "258500001"])]
                ])
                o["specimen"] = .object(["display": "swab"])
                o["device"] = .object(["display": "analyzer"])
            })
        let warnings = f.filter { $0.code == .observationDataMinimization }
        #expect(
            Set(warnings.compactMap(\.location.path)) == Set(dropped.map { "Bundle.entry[1].resource.\($0)" }), "\(f)")
        #expect(warnings.allSatisfy { $0.severity == .warning })
        #expect(!f.contains { $0.isError }, "\(f)")
    }

    // MARK: dates

    @Test func yearZeroIsNotAFHIRDate() {
        for bad in ["0000", "0000-01", "0000-01-01", "0000-01-01T00:00:00Z"] {
            #expect(!FHIRDate.isValidDateTime(bad), "\(bad)")
        }
        #expect(!FHIRDate.isValidDate("0000-01-01"))
        for good in ["0001", "0001-01-01", "1000-01-01", "2000-02-29", "0001-01-01T00:00:00Z"] {
            #expect(FHIRDate.isValidDateTime(good), "\(good)")
        }
        let f = findings(Self.bundle { $0["birthDate"] = "0000-01-01" })
        #expect(f.map(\.code) == [.patientBirthDate], "\(f)")
        let g = findings(Self.bundle("Immunization") { $0["occurrenceDateTime"] = "0000-06-01" })
        #expect(g.map(\.code) == [.immunizationOccurrence], "\(g)")
    }

    /// A birthDate that is not a JSON string (a number, null, true, an array) is not "missing": it is not a
    /// FHIR date, and the independent checker rejects such a card; nor may a Patient-only or other generic
    /// Bundle carry a birthDate that is no date. Both were signed with a warning at most.
    @Test func aBirthDateThatIsNoFHIRDateIsAnErrorInEveryProfile() throws {
        for bad: JSONValue in [.number("19600412"), .null, .bool(true), ["1960"]] {
            let f = findings(Self.bundle { $0["birthDate"] = bad })
            #expect(f.map(\.code) == [.patientBirthDate], "\(bad): \(f)")
            #expect(f.first?.severity == .error && f.first?.location.path == "Bundle.entry[0].resource.birthDate")
        }
        let number = try #require(findings(Self.bundle { $0["birthDate"] = .number("19600412") }).first)
        #expect(number.message.hasPrefix("19600412 is not a FHIR date"), "\(number.message)")
        var patient = VerifyForge.bundle()["entry"]![0]!["resource"]!.objectValue!
        for (bad, code) in [("not a date", RuleCode.patientBirthDate), ("1960-13-01", .patientBirthDate)] {
            patient["birthDate"] = .string(bad)
            let generic: JSONValue = .object([
                "resourceType": "Bundle", "type": "collection",
                "entry": [.object(["fullUrl": "resource:0", "resource": .object(patient)])],
            ])
            let f = BundleValidator.validate(generic, now: Self.now)
            #expect(f.profile == .generic)
            #expect(f.all.filter(\.isError).map(\.code) == [code], "\(bad): \(f.all)")
        }
        patient["birthDate"] = "1960-04-12"
        let good: JSONValue = .object([
            "resourceType": "Bundle", "type": "collection",
            "entry": [.object(["fullUrl": "resource:0", "resource": .object(patient)])],
        ])
        #expect(BundleValidator.validate(good, now: Self.now).all.map(\.code) == [.bundleNoClinicalEntry])
    }

    /// A name part of the wrong JSON type was signed without a word (`"given": "Ada"`, `"family": 5`,
    /// `"given": [null]`): it is not FHIR's HumanName, and an app shows no name or refuses the card.
    @Test func aNamePartOfTheWrongJSONTypeIsPatientNameForm() throws {
        let cases: [(String, JSONValue)] = [
            ("family", .number("5")), ("given", "Ada"), ("given", [.null]), ("text", ["Ada"]), ("prefix", "Dr"),
        ]
        for (part, bad) in cases {
            var name: JSONObject = part == "text" ? [:] : ["family": "Testperson", "given": ["Ada"]]
            name[part] = bad
            let f = findings(Self.bundle { $0["name"] = [.object(name)] })
            #expect(f.map(\.code) == [.patientNameForm], "\(part) \(bad): \(f)")
            #expect(f.first?.location.path == "Bundle.entry[0].resource.name[0].\(part)")
        }
        let bare = Self.bundle { $0["name"] = [.object(["family": "T", "given": "Ada"])] }
        let given = try #require(findings(bare).first)
        #expect(given.message == "given is 'Ada'; FHIR writes given as a list of strings, e.g. \"given\": [\"Ada\"]")
        #expect(findings(Self.bundle { $0["name"] = [.object(["text": "Ada Testperson"])] }).isEmpty)
    }

    @Test func epochSecondsAgreeWithFoundation() {
        for text in [
            "1970-01-01T00:00:00Z", "2026-11-30T23:59:00-11:00", "2000-02-29T12:34:56+14:00",
            "1960-01-01T00:00:00.5-05:30",
            "2100-03-01T00:00:00Z", "2024-03-01T00:00:00+00:00",
        ] {
            let iso = text.replacingOccurrences(of: ".5", with: "")
            #expect(FHIRDate.epochSeconds(text) == Self.seconds(iso), "\(text)")
        }
        // Known answers at the ends of the range (proleptic Gregorian, as FHIR uses).
        #expect(FHIRDate.epochSeconds("0001-01-01T00:00:00Z") == -62_135_596_800)
        #expect(FHIRDate.epochSeconds("9999-12-31T23:59:59-12:00") == 253_402_343_999)  // 253_402_300_799 + 12 h
        #expect(FHIRDate.epochSeconds("2026-11-30") == nil)
        #expect(FHIRDate.epochSeconds("2026-11-30T25:00:00Z") == nil)
    }

    func futureFindings(_ field: String, _ value: String, now: Int64 = ValidationProfileTests.now) -> [Finding] {
        let bundle =
            field == "effectiveDateTime"
            ? Self.labBundle { $0["effectiveDateTime"] = .string(value) }
            : Self.bundle("Immunization") { $0["occurrenceDateTime"] = .string(value) }
        return findings(bundle, now: now).filter { $0.code == .dateInFuture }
    }

    @Test func dateTimesWithATimeAreComparedAsInstants() throws {
        // 2026-11-30T23:59:00-11:00 is 2026-12-01T10:59:00Z: 22 h 59 min after now, though its date is today's.
        let ahead = futureFindings("effectiveDateTime", "2026-11-30T23:59:00-11:00")
        #expect(ahead.map(\.location.path) == ["Bundle.entry[1].resource.effectiveDateTime"])
        #expect(ahead.first?.message.contains("22 h 59 min") == true, "\(ahead)")
        #expect(futureFindings("effectiveDateTime", "2026-11-30T15:00:00Z").count == 1)
        #expect(futureFindings("effectiveDateTime", "2026-11-30T12:04:59Z").isEmpty, "within 5 minutes of clock skew")
        #expect(futureFindings("effectiveDateTime", "2026-11-30T12:05:01Z").count == 1)
        // Tomorrow's local date in Auckland (UTC+13) but already past: 2026-12-01T00:30+13:00 is 11:30Z.
        #expect(futureFindings("effectiveDateTime", "2026-12-01T00:30:00+13:00").isEmpty)
    }

    @Test func datesWithoutATimeAllowTodayInTheFurthestTimeZone() {
        // At 12:00Z it is already 2026-12-01 in UTC+14 (and UTC+13, New Zealand summer time).
        #expect(futureFindings("occurrenceDateTime", "2026-12-01").isEmpty)
        #expect(futureFindings("occurrenceDateTime", "2026-12-02").count == 1)
        // At 09:00Z it is 23:00 on 2026-11-30 in UTC+14: tomorrow is nowhere yet.
        let early = Self.seconds("2026-11-30T09:00:00Z")
        #expect(futureFindings("occurrenceDateTime", "2026-12-01", now: early).count == 1)
        #expect(futureFindings("occurrenceDateTime", "2026-11-30", now: early).isEmpty)
        #expect(futureFindings("occurrenceDateTime", "2026-12", now: early).count == 1)
        #expect(futureFindings("occurrenceDateTime", "2026-11", now: early).isEmpty)
    }

    @Test func birthDateInTheFutureIsAnError() throws {
        let f = findings(Self.bundle { $0["birthDate"] = "2027-01-01" })
        let finding = try #require(f.first { $0.code == .dateInFuture })
        #expect(finding.severity == .error)
        #expect(finding.location.path == "Bundle.entry[0].resource.birthDate")
        #expect(finding.message.hasPrefix("the birth date '2027-01-01'"))
        #expect(findings(Self.bundle { $0["birthDate"] = "2027" }).contains { $0.code == .dateInFuture })
        #expect(!findings(Self.bundle { $0["birthDate"] = "2026" }).contains { $0.code == .dateInFuture })
        // nil `now` skips the future checks.
        #expect(
            !findings(Self.bundle { $0["birthDate"] = "2027-01-01" }, now: nil).contains { $0.code == .dateInFuture })
    }
}
