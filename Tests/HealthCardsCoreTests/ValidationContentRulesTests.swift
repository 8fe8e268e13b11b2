import Foundation
import Testing

@testable import HealthCardsCore
import HealthCardsTestSupport

/// The IG's content rules exactly, in the one rule set `issue` (before signing) and `verify` share:
/// `meta` (the identity-assurance label), one `occurrenceDateTime`, LOINC answer codes, names without
/// control characters, duplicate doses, entry order, and the vaccination, lab and generic profiles.
/// The reported cases (`Tests/Fixtures/cases/`) are run as found; the others are the same kinds of fault.
@Suite struct ValidationContentRulesTests {
    /// A LOINC answer code given as SNOMED CT (the lab template's SNOMED CT column) is refused, and the message
    /// says which system it belongs to; another bad SNOMED CT code gets no such hint.
    @Test func aLOINCAnswerCodeGivenAsSNOMEDCTIsNamed() throws {
        let answer = try #require(Terminology.problem(system: Terminology.snomedCT, code: "LA11883-8"))
        #expect(answer.hasPrefix("'LA11883-8' is not a SNOMED CT concept: "), "\(answer)")
        #expect(answer.contains("shaped like a LOINC answer code, whose system is http://loinc.org"), "\(answer)")
        let other = try #require(Terminology.problem(system: Terminology.snomedCT, code: "12345"))
        #expect(!other.contains("LOINC"), "\(other)")
    }

    static let now = TestBundles.seconds("2026-11-30T12:00:00Z")

    /// Codes of the findings `issue` would report (minimized and checked) for a Bundle.
    static func issueFindings(_ bundle: JSONValue) throws -> [Finding] {
        try CheckedBundle.minimizing(bundle, now: now).findings
    }

    /// Findings `verify` reports on a Bundle as found in a card.
    static func verifyFindings(_ bundle: JSONValue) -> [Finding] {
        CheckedBundle(asFound: bundle, now: now).findings
    }

    static func caseBundle(_ folder: String, _ file: String) throws -> JSONValue { try TestBundles.caseBundle(folder, file) }

    static func immunization(_ change: (inout JSONObject) -> Void) -> JSONValue {
        TestBundles.bundle("Immunization", doses: 1, change)
    }

    // MARK: meta

    @Test func metaSecurityWithAnUnknownMemberIsRefusedBeforeSigningAndInVerify() throws {
        let bundle = try Self.caseBundle("meta-security-bad", "bundle-meta-security-badkey.json")
        let issued = try Self.issueFindings(bundle)
        #expect(Set(issued.filter(\.isError).map(\.code)) == [.metaSecurity], "\(issued)")
        #expect(issued.first?.location.path == "Bundle.entry[1].resource.meta.security[0]")
        #expect(issued.first?.message.contains("badKey") == true)
        #expect(Set(Self.verifyFindings(bundle).filter(\.isError).map(\.code)) == [.metaSecurity])
    }

    @Test(arguments: [
        (JSONValue.string("IAL1.2"), RuleCode.minMeta, ""),
        (
            .object([
                "security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL1.2"])], "versionId": "3",
            ]), .minMeta, ""
        ),
        (
            .object(["security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL3"])]]),
            .metaSecurity, ".security[0].code"
        ),
        (
            .object(["security": [.object(["system": "https://smarthealth.cards/ial", "code": "ial1.2"])]]),
            .metaSecurity, ".security[0].code"
        ),
        (
            .object([
                "security": [
                    .object(["system": "http://terminology.hl7.org/CodeSystem/v3-Confidentiality", "code": "R"])
                ]
            ]), .metaSecurity,
            ".security[0].system"
        ),
        (.object(["security": [.object(["code": "IAL2"])]]), .metaSecurity, ".security[0].system"),
        (
            .object([
                "security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL2", "version": "1"])]
            ]), .metaSecurity, ".security[0]"
        ),
        (.object(["security": ["IAL2"]]), .metaSecurity, ".security[0]"),
        (
            .object(["security": .object(["system": "https://smarthealth.cards/ial", "code": "IAL2"])]), .metaSecurity,
            ".security"
        ),
        (.object(["tag": [.object(["code": "x"])]]), .minMeta, ""),
    ])
    func everyOtherMetaIsAnErrorInVerify(meta: JSONValue, code: RuleCode, at suffix: String) {
        let f = Self.verifyFindings(Self.immunization { $0["meta"] = meta }).filter(\.isError)
        #expect(
            f.contains { $0.code == code && $0.location.path == "Bundle.entry[1].resource.meta" + suffix },
            "\(meta): \(f)")
    }

    @Test func issueDropsMetaElementsOnlyWhenTheyAreFHIRMeta() throws {
        // FHIR Meta elements are minimized away; the IAL label stays.
        let kept = try CheckedBundle.minimizing(
            Self.immunization { r in
                r["meta"] = .object([
                    "versionId": "3", "lastUpdated": "2021-01-01T00:00:00Z",
                    "security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL1.4"])],
                ])
            }, now: Self.now)
        #expect(kept.isAcceptable, "\(kept.findings)")
        #expect(
            kept.bundle["entry"]?[1]?["resource"]?["meta"]
                == .object(["security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL1.4"])]]))
        // Not a FHIR Meta: kept for the validator to refuse, never silently dropped.
        for meta: JSONValue in [.string("IAL1.2"), .object(["badKey": "IAL1"]), .integer(1)] {
            let checked = try CheckedBundle.minimizing(Self.immunization { $0["meta"] = meta }, now: Self.now)
            #expect(checked.errors.map(\.code) == [.minMeta], "\(meta): \(checked.findings)")
        }
        // A `security` written wrong (an object, a string, a number) is the label gone wrong: kept and refused, not
        // minimized away with the other Meta elements (a variant hunt had `issue` sign such Bundles without it).
        for security: JSONValue in [
            .object(["system": "https://smarthealth.cards/ial", "code": "IAL2"]), .string("IAL2"), .integer(2),
        ] {
            let checked = try CheckedBundle.minimizing(
                Self.immunization { $0["meta"] = .object(["versionId": "3", "security": security]) }, now: Self.now)
            #expect(checked.errors.map(\.code) == [.metaSecurity], "\(security): \(checked.findings)")
            #expect(checked.bundle["entry"]?[1]?["resource"]?["meta"] == .object(["security": security]))
        }
        for code in MinimizationRules.ialCodes {
            let good = Self.verifyFindings(
                Self.immunization {
                    $0["meta"] = .object([
                        "security": [.object(["system": "https://smarthealth.cards/ial", "code": .string(code)])]
                    ])
                })
            #expect(good.isEmpty, "\(code): \(good)")
        }
    }

    @Test func bundleMetaFollowsTheSameRule() {
        var b = VerifyForge.bundle(doses: 1).objectValue!
        b["meta"] = .object(["lastUpdated": "2021-01-01T00:00:00Z"])
        #expect(Self.verifyFindings(.object(b)).map(\.code) == [.minMeta])
    }

    // MARK: occurrence

    @Test func occurrenceStringAloneIsRefusedBeforeSigningAndInVerify() throws {
        let bundle = try Self.caseBundle("occurrence-string-only", "occurrence-string-only.json")
        let issued = try Self.issueFindings(bundle).filter(\.isError)
        #expect(issued.map(\.code) == [.immunizationOccurrence])
        #expect(issued.first?.location.path == "Bundle.entry[1].resource.occurrenceString")
        #expect(issued.first?.message.contains("'Jan 2021'") == true)
        #expect(Self.verifyFindings(bundle).filter(\.isError).map(\.code) == [.immunizationOccurrence])
    }

    @Test func exactlyOneOccurrenceDateTime() {
        let both = Self.verifyFindings(Self.immunization { $0["occurrenceString"] = "Jan 2021" }).filter(\.isError)
        #expect(both.map(\.location.path) == ["Bundle.entry[1].resource.occurrenceString"])
        #expect(both.first?.message.contains("beside occurrenceDateTime") == true)
        let none = Self.verifyFindings(Self.immunization { $0["occurrenceDateTime"] = nil }).filter(\.isError)
        #expect(none.map(\.code) == [.immunizationOccurrence])
        #expect(none.first?.message.contains("required") == true)
        let number = Self.verifyFindings(Self.immunization { $0["occurrenceDateTime"] = .integer(2021) }).filter(
            \.isError)
        #expect(number.map(\.code) == [.immunizationOccurrence])
        let period = Self.verifyFindings(
            Self.immunization { $0["occurrencePeriod"] = .object(["start": "2021-01-01"]) }
        ).filter(\.isError)
        #expect(period.map(\.location.path) == ["Bundle.entry[1].resource.occurrencePeriod"])
    }

    /// The date rules run on every dose: a string-dated first dose no longer hides the second's problems.
    @Test func dateRulesRunOnEveryDose() {
        var b = VerifyForge.bundle(doses: 3).objectValue!
        var entries = b["entry"]!.arrayValue!
        for (i, date) in [(2, "1959-06-01"), (3, "2999-01-01")] {
            var entry = entries[i].objectValue!
            var r = entry["resource"]!.objectValue!
            r["occurrenceDateTime"] = .string(date)
            entry["resource"] = .object(r)
            entries[i] = .object(entry)
        }
        b["entry"] = .array(entries)
        let f = Self.verifyFindings(.object(b))
        #expect(
            f.contains {
                $0.code == .dateBeforeBirth && $0.location.path == "Bundle.entry[2].resource.occurrenceDateTime"
            })
        #expect(
            f.contains { $0.code == .dateInFuture && $0.location.path == "Bundle.entry[3].resource.occurrenceDateTime" }
        )
    }

    // MARK: lab results

    @Test func loincAnswerCodeOfTheIGsListIsAccepted() throws {
        let bundle = try Self.caseBundle("lab-loinc-answer-code", "lab-value-LA11883-8.json")
        #expect(try Self.issueFindings(bundle).isEmpty)
        #expect(Self.verifyFindings(bundle).isEmpty)
        for answer in LabResultLOINCAnswer.entries {
            let f = Self.verifyFindings(
                TestBundles.labBundle { o in
                    o["valueCodeableConcept"] = .object([
                        "coding": [.object(["system": .string(Terminology.loinc), "code": .string(answer.code)])]
                    ])
                })
            #expect(f.isEmpty, "\(answer.code): \(f)")
        }
    }

    @Test(arguments: [
        ("LA99999-9", "valueCodeableConcept", "is not one of the LOINC answer codes"),
        ("LA11883-7", "valueCodeableConcept", "is not one of the LOINC answer codes"),
        ("LA11883-8", "code", "is a LOINC answer code: it names a result, not a test"),
        ("94500-5", "valueCodeableConcept", "check digit"),
    ])
    func unknownOrMisplacedLOINCCodesAreRefused(code: String, element: String, says: String) {
        let f = Self.verifyFindings(
            TestBundles.labBundle { o in
                o[element] = .object([
                    "coding": [.object(["system": .string(Terminology.loinc), "code": .string(code)])]
                ])
            }
        ).filter(\.isError)
        let finding = f.first { $0.code == .codeLOINCInvalid }
        #expect(finding?.location.path == "Bundle.entry[1].resource.\(element).coding[0].code", "\(f)")
        #expect(finding?.message.contains(says) == true, "\(f)")
    }

    /// A qualitative result is a SNOMED CT finding or a listed LOINC answer code: a LOINC test code, a coding with no
    /// system, or another system in `valueCodeableConcept` is refused (a variant hunt had each signed and verified
    /// "OK"); a component's code and value get the checks of the Observation's own (they were not checked at all).
    @Test(arguments: [
        ([("system", Terminology.loinc), ("code", "94500-6")], "valueCodeableConcept", RuleCode.observationValue, ".code", "is a LOINC test code"),
        ([("code", "garbage")], "valueCodeableConcept", .observationValue, ".system", "has no system"),
        ([("code", "LA11883-8")], "valueCodeableConcept", .observationValue, ".system", "has no system"),
        ([("system", "http://example.org/results"), ("code", "neg")], "valueCodeableConcept", .observationValue, ".system", "is coded in"),
    ])
    func resultsAreTheIGsValueSet(coding: [(String, String)], element: String, code: RuleCode, at suffix: String, says: String) {
        let value = JSONValue.object(JSONObject(coding.map { ($0.0, JSONValue.string($0.1)) }))
        let f = Self.verifyFindings(TestBundles.labBundle { $0[element] = .object(["coding": [value]]) }).filter(\.isError)
        let finding = f.first { $0.code == code }
        #expect(finding?.location.path == "Bundle.entry[1].resource.\(element).coding[0]\(suffix)", "\(f)")
        #expect(finding?.message.contains(says) == true, "\(f)")
    }

    /// A result given as text alone (`valueCodeableConcept` without a coding) is refused: text could claim anything
    /// (a trial had `{"text":"Not detected"}` issued and verified OK).
    @Test func aResultOfTextAloneIsRefused() {
        let f = Self.verifyFindings(TestBundles.labBundle { $0["valueCodeableConcept"] = .object(["text": "Not detected"]) })
        #expect(
            f.contains { $0.code == .observationValue && $0.location.path == "Bundle.entry[1].resource.valueCodeableConcept" },
            "\(f)")
    }

    @Test func componentsAreCheckedAsTheObservationIs() {
        func component(code: String, value: JSONValue) -> JSONValue {
            .object([
                "code": .object(["coding": [.object(["system": .string(Terminology.loinc), "code": .string(code)])]]),
                "valueCodeableConcept": .object(["coding": [value]]),
            ])
        }
        let supervised = JSONValue.object(["system": .string(Terminology.snomedCT), "code": "1208522006"])
        let good = Self.verifyFindings(TestBundles.labBundle { $0["component"] = [component(code: "94558-4", value: supervised)] })
        #expect(good.filter(\.isError).isEmpty, "\(good)")
        let bad = Self.verifyFindings(
            TestBundles.labBundle {
                $0["component"] = [
                    component(code: "12345-6", value: .object(["system": .string(Terminology.loinc), "code": "LA99999-9"])),
                    component(code: "LA11883-8", value: supervised),
                ]
            }
        ).filter(\.isError).map { "\($0.code.rawValue) \($0.location.path ?? "")" }
        let p = "Bundle.entry[1].resource.component"
        #expect(
            bad == [
                "CODE_LOINC_INVALID \(p)[0].code.coding[0].code",
                "CODE_LOINC_INVALID \(p)[0].valueCodeableConcept.coding[0].code",
                "CODE_LOINC_INVALID \(p)[1].code.coding[0].code",
            ], "\(bad)")
    }

    @Test func effectiveIsOneDateTimeOrPeriod() {
        func errors(_ change: @escaping (inout JSONObject) -> Void) -> [String] {
            Self.verifyFindings(TestBundles.labBundle(change)).filter(\.isError).map {
                "\($0.code.rawValue) \($0.location.path ?? "")"
            }
        }
        let p = "Bundle.entry[1].resource"
        #expect(
            errors { $0["effectivePeriod"] = .object(["start": "2021-02-17"]) } == [
                "OBSERVATION_EFFECTIVE \(p).effective[x]"
            ])
        #expect(
            errors {
                $0["effectiveDateTime"] = nil
                $0["effectivePeriod"] = .object(["start": "2021-02-17", "end": "2021-02-18"])
            }.isEmpty)
        #expect(
            errors {
                $0["effectiveDateTime"] = nil
                $0["effectivePeriod"] = .object(["start": "2021-02-18", "end": "2021-02-17"])
            }
                == ["OBSERVATION_EFFECTIVE \(p).effectivePeriod.end"])
        #expect(
            errors {
                $0["effectiveDateTime"] = nil
                $0["effectivePeriod"] = .object(["start": "2021-02-30"])
            }
                == ["OBSERVATION_EFFECTIVE \(p).effectivePeriod.start"])
        #expect(
            errors {
                $0["effectiveDateTime"] = nil
                $0["effectiveInstant"] = "2021-02-17T09:30:00Z"
            } == ["OBSERVATION_EFFECTIVE \(p).effectiveInstant"])
        #expect(
            errors { $0["effectiveDateTime"] = "2021-02-17T09:30:00+-1:00" } == [
                "OBSERVATION_EFFECTIVE \(p).effectiveDateTime"
            ])
    }

    // MARK: names

    @Test(arguments: [
        ("family", JSONValue.string("Test\nperson")), ("given", .array(["Ada", "M\tK"])), ("prefix", .array(["D\rr."])),
        ("suffix", .array(["Jr.\u{85}"])), ("text", .string("Ada\u{2028}Testperson")), ("given", .array(["A\u{7F}da"])),
    ])
    func aControlCharacterInAnyNamePartIsRefused(part: String, value: JSONValue) throws {
        let bundle = TestBundles.bundle { p in
            var name: JSONObject = part == "text" ? [:] : ["family": "Testperson", "given": ["Ada"]]
            name[part] = value
            p["name"] = [.object(name)]
        }
        let issued = try Self.issueFindings(bundle).filter(\.isError)
        #expect(issued.map(\.code) == [.patientNameCharacter], "\(part): \(issued)")
        #expect(issued.first?.location.path?.hasPrefix("Bundle.entry[0].resource.name[0].\(part)") == true)
        #expect(
            issued.first.map { !$0.message.unicodeScalars.contains { NameRules.firstControl(in: String($0)) != nil } }
                == true,
            "the message escapes the character")
        #expect(Self.verifyFindings(bundle).filter(\.isError).map(\.code) == [.patientNameCharacter])
    }

    @Test func aCharacterNoFHIRStringMayHoldIsReportedOnce() {
        let f = Self.verifyFindings(
            TestBundles.bundle { $0["name"] = [.object(["family": "Test\u{1}", "given": ["Ada"]])] })
        #expect(f.map(\.code) == [.stringControlCharacter])
    }

    // MARK: duplicate doses

    @Test func twoIdenticalDosesAreAnErrorWhenIssuingAndAWarningInVerify() throws {
        var b = VerifyForge.bundle(doses: 2).objectValue!
        var entries = b["entry"]!.arrayValue!
        entries[2] = .object(["fullUrl": "resource:2", "resource": entries[1]["resource"]!])
        b["entry"] = .array(entries)
        let issued = try Self.issueFindings(.object(b))
        #expect(
            issued.map { "\($0.severity.rawValue) \($0.code.rawValue) \($0.location.path ?? "")" } == [
                "error IMMUNIZATION_DUPLICATE Bundle.entry[2].resource"
            ])
        #expect(issued.first?.message.contains("repeats Bundle.entry[1]") == true)
        #expect(Self.verifyFindings(.object(b)).map(\.severity) == [.warning])
        // Another lot on the same day is still the same dose; another day or another vaccine is not.
        VerifyForge.changing(&b, "Immunization") { $0["lotNumber"] = "OTHER1" }
        #expect(try Self.issueFindings(.object(b)).map(\.code) == [.immunizationDuplicate])
        var dateTime = b
        VerifyForge.changing(&dateTime, "Immunization") { $0["occurrenceDateTime"] = "2021-01-15T08:00:00-05:00" }
        // Besides the duplicate, the dose whose date has a time gets the IG's warning (YYYY-MM-DD only: IGContentTests).
        let timed = try Self.issueFindings(.object(dateTime))
        #expect(timed.filter { $0.code != .immunizationOccurrenceDate }.map(\.code) == [.immunizationDuplicate])
        #expect(timed.filter { $0.code == .immunizationOccurrenceDate }.map(\.location.path) == ["Bundle.entry[2].resource.occurrenceDateTime"])
        var otherVaccine = b
        VerifyForge.changing(&otherVaccine, "Immunization") {
            $0["vaccineCode"] = .object(["coding": [.object(["system": .string(Terminology.cvx), "code": "208"])]])
        }
        #expect(try Self.issueFindings(.object(otherVaccine)).isEmpty)
        var partial = b
        VerifyForge.changing(&partial, "Immunization") { $0["occurrenceDateTime"] = "2021-01" }
        var both = partial
        entries = both["entry"]!.arrayValue!
        entries[2] = .object(["fullUrl": "resource:2", "resource": entries[1]["resource"]!])
        both["entry"] = .array(entries)
        let month = try Self.issueFindings(.object(both))
        #expect(month.allSatisfy { $0.code == .immunizationOccurrenceDate && $0.severity == .warning }, "two doses in one month may be two doses")
    }

    // MARK: order

    @Test func dosesAreOrderedByDateThenInputOrderAndReferencesFollow() throws {
        func dose(_ date: String, _ lot: String, cvx: String = "207") -> JSONValue {
            .object([
                "fullUrl": .string("urn:uuid:\(lot)"),
                "resource": .object([
                    "resourceType": "Immunization", "status": "completed", "id": .string(lot),
                    "vaccineCode": .object([
                        "coding": [.object(["system": .string(Terminology.cvx), "code": .string(cvx)])]
                    ]),
                    "patient": .object(["reference": "Patient/p1"]), "occurrenceDateTime": .string(date),
                    "lotNumber": .string(lot),
                ]),
            ])
        }
        let patient: JSONValue = .object([
            "fullUrl": "urn:uuid:p",
            "resource": .object([
                "resourceType": "Patient", "id": "p1", "name": [.object(["family": "Testperson", "given": ["Ada"]])],
                "birthDate": "1960-01-01",
            ]),
        ])
        let input: JSONValue = .object([
            "resourceType": "Bundle", "type": "collection",
            "entry": [
                dose("2021-03-01", "L3"), patient, dose("2021-01-15T23:00:00-05:00", "L1"), dose("2021", "L0"),
                dose("2021-03-01", "L4", cvx: "208"), dose("2021-02-01", "L2"),
            ],
        ])
        let checked = try CheckedBundle.minimizing(input, now: Self.now)
        let entries = try #require(checked.bundle["entry"]?.arrayValue)
        #expect(
            entries.map { $0["resource"]?["lotNumber"]?.stringValue ?? "patient" } == [
                "L0", "patient", "L1", "L2", "L3", "L4",
            ])
        #expect(entries.enumerated().allSatisfy { $0.element["fullUrl"]?.stringValue == "resource:\($0.offset)" })
        #expect(
            entries.compactMap { $0["resource"]?["patient"]?["reference"]?.stringValue }
                == Array(repeating: "resource:1", count: 5))
        #expect(checked.origins == [3, 1, 2, 5, 0, 4])
        #expect(checked.isAcceptable, "\(checked.findings)")
        // verify warns about a card that lists them out of order (issue never writes one).
        let asFound = Self.verifyFindings(
            try BundleMinimizer.minimize(
                .object([
                    "resourceType": "Bundle", "type": "collection",
                    "entry": [
                        patient, dose("2021-03-01", "L3"), dose("2021-01-15", "L1"),
                    ],
                ])))
        #expect(asFound.isEmpty, "minimizing sorts")
        var unsorted = VerifyForge.bundle(doses: 2).objectValue!
        VerifyForge.changing(&unsorted, "Immunization") { $0["occurrenceDateTime"] = "2021-12-01" }
        let warned = Self.verifyFindings(.object(unsorted))
        #expect(
            warned.map { "\($0.severity.rawValue) \($0.code.rawValue) \($0.location.path ?? "")" }
                == ["warning BUNDLE_ENTRY_ORDER Bundle.entry[2].resource.occurrenceDateTime"])
    }

    // MARK: profiles

    @Test func eachProfileJudgesItsOwnContent() throws {
        #expect(CheckedBundle(asFound: VerifyForge.bundle(), now: Self.now).profile == .vaccination)
        #expect(CheckedBundle(asFound: TestBundles.labBundle(), now: Self.now).profile == .lab)
        // A vaccination Bundle keeps the IG's collection type.
        var document = VerifyForge.bundle().objectValue!
        document["type"] = "document"
        #expect(Self.verifyFindings(.object(document)).map(\.code) == [.bundleType])
    }

    /// An IPS-style patient summary (`TestBundles.patientSummary`).
    static func patientSummary() -> JSONValue { TestBundles.patientSummary() }

    @Test func aPatientSummaryDocumentGetsTheGenericRulesOnly() throws {
        let checked = try CheckedBundle.minimizing(Self.patientSummary(), now: Self.now)
        #expect(checked.profile == .generic)
        #expect(
            checked.findings.map { "\($0.severity.rawValue) \($0.code.rawValue)" } == ["warning BUNDLE_MIXED_CONTENT"],
            "\(checked.findings)")
        // The generic rules still apply: minimization, resource:N, Bundle.type, characters, meta.
        var bad = Self.patientSummary().objectValue!
        bad["type"] = "summary"
        var entries = bad["entry"]!.arrayValue!
        var condition = entries[3].objectValue!
        var resource = condition["resource"]!.objectValue!
        resource["id"] = "c1"
        resource["subject"] = .object(["reference": "Patient/1"])
        resource["note"] = [.object(["text": "line\u{0}"])]
        resource["meta"] = .object(["security": [.object(["system": "https://smarthealth.cards/ial", "code": "IAL9"])]])
        condition["resource"] = .object(resource)
        entries[3] = .object(condition)
        bad["entry"] = .array(entries)
        let codes = Set(Self.verifyFindings(.object(bad)).filter(\.isError).map(\.code))
        #expect(
            codes == [.bundleType, .minResourceID, .referenceUnresolved, .stringControlCharacter, .metaSecurity],
            "\(codes)")
    }

    @Test func anInsuranceCardIsGenericWithoutAWarning() {
        let card: JSONValue = .object([
            "resourceType": "Bundle", "type": "collection",
            "entry": [
                .object([
                    "fullUrl": "resource:0",
                    "resource": .object([
                        "resourceType": "Patient", "name": [.object(["family": "Testperson", "given": ["Ada"]])],
                        "birthDate": "1960-01-01",
                    ]),
                ]),
                .object([
                    "fullUrl": "resource:1",
                    "resource": .object([
                        "resourceType": "Coverage", "status": "active",
                        "beneficiary": .object(["reference": "resource:0"]),
                        "payor": [.object(["display": "Example Health Plan"])],
                    ]),
                ]),
            ],
        ])
        let checked = CheckedBundle(asFound: card, now: Self.now)
        #expect(checked.profile == .generic)
        #expect(checked.findings.isEmpty, "\(checked.findings)")
    }
}
