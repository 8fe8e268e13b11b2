import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// Every date rule (in the future, before birth, after `nbf`) with every FHIR precision (`YYYY`,
/// `YYYY-MM`, `YYYY-MM-DD`, dateTime with a zone) on both sides, at the boundary: one value just on each
/// side of it. The boundaries are known answers computed by hand from the rule ("a date spans from its
/// first day at UTC+14 to its last day at UTC−12") and converted to seconds by Foundation's ISO 8601
/// parser, independent of `FHIRDateTime`.
@Suite struct DateRulesPrecisionTests {
    static func seconds(_ iso: String) -> Int64 { TestBundles.seconds(iso) }

    // MARK: the spans

    @Test(arguments: [
        // value, earliest (first day at UTC+14), latest (last day at UTC−12)
        ("2021", "2020-12-31T10:00:00Z", "2022-01-01T11:59:59Z"),
        ("2021-02", "2021-01-31T10:00:00Z", "2021-03-01T11:59:59Z"),
        ("2024-02", "2024-01-31T10:00:00Z", "2024-03-01T11:59:59Z"),  // leap February ends on the 29th
        ("2021-12", "2021-11-30T10:00:00Z", "2022-01-01T11:59:59Z"),
        ("2021-06-15", "2021-06-14T10:00:00Z", "2021-06-16T11:59:59Z"),
        ("2021-06-15T10:00:00+02:00", "2021-06-15T08:00:00Z", "2021-06-15T08:00:00Z"),
        ("2021-06-15T10:00:00.123-05:30", "2021-06-15T15:30:00Z", "2021-06-15T15:30:00Z"),
        ("2021-06-15T23:59:60Z", "2021-06-16T00:00:00Z", "2021-06-16T00:00:00Z"),  // a leap second
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),
    ])
    func spansOfEachPrecision(value: String, earliest: String, latest: String) throws {
        let date = try #require(FHIRDateTime(value))
        #expect(date.earliest == Self.seconds(earliest), "\(value)")
        #expect(date.latest == Self.seconds(latest), "\(value)")
    }

    @Test func spansAtTheEndsOfTheCalendar() throws {
        // 0001-01-01T00:00:00Z is -62_135_596_800; 10000-01-01T00:00:00Z is 253_402_300_800.
        let first: Int64 = -62_135_596_800
        let end: Int64 = 253_402_300_800
        #expect(FHIRDateTime("0001")?.earliest == first - 14 * 3_600)
        #expect(FHIRDateTime("9999")?.latest == end - 1 + 12 * 3_600)
        #expect(FHIRDateTime("9999-12-31T23:59:59-12:00")?.earliest == end - 1 + 12 * 3_600)
    }

    @Test(arguments: [
        "+-1:00", "-+1:00", "+1:00", "+14:01", "+15:00", "-14:30", "+05:60", "+0500", "+05:0", "Z+01:00", "z", "",
        "+05:00Z",
    ])
    func malformedZonesAreRefusedWithoutATrap(zone: String) {
        let text = "2021-01-01T00:00:00" + zone
        #expect(FHIRDateTime(text) == nil, "\(text)")
        #expect(!FHIRDate.isValidDateTime(text))
        #expect(FHIRDate.epochSeconds(text) == nil)
    }

    @Test func theGrammarsEdges() {
        for good in [
            "2021-01-01T00:00:00+14:00", "2021-01-01T00:00:00-14:00", "2021-01-01T00:00:00+13:59",
            "2021-01-01T00:00:00.1Z", "0001",
        ] {
            #expect(FHIRDateTime(good) != nil, "\(good)")
        }
        for bad in [
            "2021-01-01T24:00:00Z", "2021-01-01T00:60:00Z", "2021-01-01T00:00:61Z", "2021-01-01T00:00:00.Z",
            "2021-01-01T00:00:00", "2021-01-01T00:00Z", "2021-1-01", "2021-00", "2021-13", "0000", "2021-02-29",
            "20210101", "２０２１", "2021-01-01T", "-2021",
        ] {
            #expect(FHIRDateTime(bad) == nil, "\(bad)")
        }
        #expect(FHIRDateTime("2021-01-01T00:00:00Z", allowTime: false) == nil)
        #expect(FHIRDateTime("2021", allowPartial: false) == nil)
    }

    // MARK: the rules through the validator

    /// A vaccination Bundle with one dose at `dose` for a patient born `birth`.
    static func vaccination(birth: String = "1950-01-01", dose: String) -> JSONValue {
        var b = VerifyForge.bundle(doses: 1).objectValue!
        VerifyForge.changing(&b, "Patient") { $0["birthDate"] = .string(birth) }
        VerifyForge.changing(&b, "Immunization") { $0["occurrenceDateTime"] = .string(dose) }
        return .object(b)
    }

    /// A lab Bundle whose one result has `effective` (a dateTime, or a Period `start/end`).
    static func lab(birth: String = "1950-01-01", effective: JSONValue, member: String = "effectiveDateTime")
        -> JSONValue
    {
        TestBundles.labBundle { o in
            o["effectiveDateTime"] = nil
            o[member] = effective
        }.replacingBirthDate(birth)
    }

    static func codes(_ bundle: JSONValue, now: Int64) -> [RuleCode] {
        BundleValidator.validate(bundle, now: now).all.map(\.code)
    }

    /// In the future: the earliest instant the value names is after now (a dateTime with a time: by more
    /// than 5 minutes). For each precision, the last `now` at which it is in the future and the first at
    /// which it no longer is.
    @Test(arguments: [
        ("2027", "2026-12-31T09:59:59Z", "2026-12-31T10:00:00Z"),
        ("2026-12", "2026-11-30T09:59:59Z", "2026-11-30T10:00:00Z"),
        ("2026-12-01", "2026-11-30T09:59:59Z", "2026-11-30T10:00:00Z"),
        ("2026-12-01T00:30:00+13:00", "2026-11-30T11:24:59Z", "2026-11-30T11:25:00Z"),
        ("2026-11-30T12:05:00Z", "2026-11-30T11:59:59Z", "2026-11-30T12:00:00Z"),
    ])
    func inTheFutureForEachPrecision(value: String, stillFuture: String, noLonger: String) {
        let before = Self.seconds(stillFuture)
        let after = Self.seconds(noLonger)
        // a dose, a lab result's effectiveDateTime, and both ends of its effectivePeriod
        #expect(Self.codes(Self.vaccination(dose: value), now: before).contains(.dateInFuture), "dose \(value)")
        #expect(!Self.codes(Self.vaccination(dose: value), now: after).contains(.dateInFuture), "dose \(value)")
        #expect(Self.codes(Self.lab(effective: .string(value)), now: before).contains(.dateInFuture), "lab \(value)")
        #expect(!Self.codes(Self.lab(effective: .string(value)), now: after).contains(.dateInFuture), "lab \(value)")
        for end in ["start", "end"] {
            let period = Self.lab(effective: .object([end: .string(value)]), member: "effectivePeriod")
            #expect(Self.codes(period, now: before).contains(.dateInFuture), "period \(end) \(value)")
            #expect(!Self.codes(period, now: after).contains(.dateInFuture), "period \(end) \(value)")
        }
    }

    @Test(arguments: [
        ("2027", "2026-12-31T09:59:59Z"), ("2026-12", "2026-11-30T09:59:59Z"), ("2026-12-01", "2026-11-30T09:59:59Z"),
    ])
    func birthDateInTheFutureForEachPrecision(birth: String, stillFuture: String) {
        let now = Self.seconds(stillFuture)
        let f = BundleValidator.validate(Self.vaccination(birth: birth, dose: "2020-01-01"), now: now).all
        #expect(
            f.contains { $0.code == .dateInFuture && $0.location.path == "Bundle.entry[0].resource.birthDate" },
            "\(birth)")
        let later = BundleValidator.validate(Self.vaccination(birth: birth, dose: "2020-01-01"), now: now + 1).all
        #expect(!later.contains { $0.code == .dateInFuture }, "\(birth)")
    }

    /// Before birth: birth dates and the dates clinics write are local calendar dates, so the last day the
    /// event can name is compared with the first day the birth date allows, in one calendar (a dateTime's
    /// date is its date part, in its own offset). For each birth precision, the latest event of each
    /// precision that is before birth and the first one that no longer is.
    @Test(arguments: [
        // birth "1960": first day 1960-01-01
        ("1960", "1959", "1960"),
        ("1960", "1959-12", "1960-01"),
        ("1960", "1959-12-31", "1960-01-01"),
        ("1960", "1959-12-31T23:59:59+14:00", "1960-01-01T00:00:00-12:00"),
        // birth "1960-05": first day 1960-05-01
        ("1960-05", "1959", "1960"),
        ("1960-05", "1960-04", "1960-05"),
        ("1960-05", "1960-04-30", "1960-05-01"),
        ("1960-05", "1960-04-30T23:59:59Z", "1960-05-01T00:00:00+14:00"),
        // birth "1960-05-17": that day
        ("1960-05-17", "1959", "1960"),
        ("1960-05-17", "1960-04", "1960-05"),
        ("1960-05-17", "1960-05-16", "1960-05-17"),
        ("1960-05-17", "1960-05-16T23:59:59-12:00", "1960-05-17T00:00:00+14:00"),
    ])
    func beforeBirthForEachPrecision(birth: String, before: String, notBefore: String) {
        let now = Self.seconds("2026-11-30T12:00:00Z")
        #expect(
            Self.codes(Self.vaccination(birth: birth, dose: before), now: now).contains(.dateBeforeBirth),
            "\(before) vs \(birth)")
        #expect(
            !Self.codes(Self.vaccination(birth: birth, dose: notBefore), now: now).contains(.dateBeforeBirth),
            "\(notBefore) vs \(birth)")
        #expect(
            Self.codes(Self.lab(birth: birth, effective: .string(before)), now: now).contains(.dateBeforeBirth),
            "lab \(before) vs \(birth)")
        #expect(
            !Self.codes(Self.lab(birth: birth, effective: .string(notBefore)), now: now).contains(.dateBeforeBirth),
            "lab \(notBefore) vs \(birth)")
    }

    /// After nbf: judged as "in the future" is, with nbf for now; every dose and lab result date.
    @Test(arguments: [
        ("2027", "2026-12-31T09:59:59Z", "2026-12-31T10:00:00Z"),
        ("2026-12", "2026-11-30T09:59:59Z", "2026-11-30T10:00:00Z"),
        ("2026-12-01", "2026-11-30T09:59:59Z", "2026-11-30T10:00:00Z"),
        ("2026-11-30T12:05:00Z", "2026-11-30T11:59:59Z", "2026-11-30T12:00:00Z"),
    ])
    func eventsAfterNotBeforeForEachPrecision(value: String, nbfBefore: String, nbfAfter: String) throws {
        var b = VerifyForge.bundle(doses: 3).objectValue!
        var entries = b["entry"]!.arrayValue!
        var last = entries[3].objectValue!
        var resource = last["resource"]!.objectValue!
        resource["occurrenceDateTime"] = .string(value)
        last["resource"] = .object(resource)
        entries[3] = .object(last)
        b["entry"] = .array(entries)
        let checked = CheckedBundle(asFound: .object(b), now: nil)
        let early = checked.eventsAfter(notBefore: Self.seconds(nbfBefore), severity: .error)
        #expect(early.map(\.location.path) == ["Bundle.entry[3].resource.occurrenceDateTime"], "\(value)")
        #expect(early.first?.severity == .error)
        #expect(checked.eventsAfter(notBefore: Self.seconds(nbfAfter), severity: .warning).isEmpty, "\(value)")
        let lab = CheckedBundle(
            asFound: Self.lab(
                effective: .object(["start": "2020-01-01", "end": .string(value)]), member: "effectivePeriod"), now: nil
        )
        #expect(
            lab.eventsAfter(notBefore: Self.seconds(nbfBefore), severity: .warning).map(\.location.path)
                == ["Bundle.entry[1].resource.effectivePeriod.end"], "\(value)")
    }

    @Test func aHostileNowNeitherTrapsNorPasses() {
        for now in [Int64.max, Int64.min, 0] {
            _ = BundleValidator.validate(Self.vaccination(dose: "2021-01-01T00:00:00Z"), now: now)
            _ = CheckedBundle(asFound: Self.vaccination(dose: "2021"), now: now).eventsAfter(
                notBefore: now, severity: .warning)
        }
        #expect(Self.codes(Self.vaccination(dose: "2021-01-01T00:00:00Z"), now: .min).contains(.dateInFuture))
        #expect(!Self.codes(Self.vaccination(dose: "2021-01-01T00:00:00Z"), now: .max).contains(.dateInFuture))
        #expect(
            DateRules.wholeSeconds(-1e300) == nil && DateRules.wholeSeconds(.nan) == nil
                && DateRules.wholeSeconds(1.5) == 1)
    }
}

extension JSONValue {
    /// The Bundle with its Patient's birthDate set.
    func replacingBirthDate(_ birth: String) -> JSONValue {
        var b = objectValue!
        VerifyForge.changing(&b, "Patient") { $0["birthDate"] = .string(birth) }
        return .object(b)
    }
}
