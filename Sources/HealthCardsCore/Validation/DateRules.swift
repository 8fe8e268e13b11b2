/// Clinical and birth dates against the clock and against each other: nothing in the future, no dose
/// or test before birth, no event after the card's `nbf`. Every rule runs on every date of every dose
/// (`Immunization.occurrenceDateTime`) and lab result (`Observation.effectiveDateTime`,
/// `effectivePeriod.start` and `.end`), in every precision FHIR allows, through `FHIRDateTime`'s spans:
///
/// - **in the future**: the earliest instant the value can name is after now. A date names a local day
///   somewhere, so `2026-12-01` is not in the future once it is 2026-12-01 in UTC+14 (a clinic in Kiribati
///   issuing on its local date is not refused); a dateTime with a time is an instant, allowed
///   `clockSkewSeconds` for clocks that run a little apart.
/// - **before birth**: a birth date is a local calendar date, and so is the date of a dose or test as the
///   clinic wrote it (a dateTime's date part is its date in its own offset). The event is before birth when
///   the last day it can name is before the first day the birth date allows, in one calendar:
///   `1960-03` is not before a birth in `1960`, `1959-12` is; `2020-01-09` is before a birth on
///   `2020-01-10`, `2020-01-10T01:00:00+14:00` is not.
/// - **after `nbf`**: as "in the future", with `nbf` for now.
enum DateRules {
    /// Clock skew allowed for dateTimes with a time, in seconds (5 minutes).
    static let clockSkewSeconds: Int64 = 300

    /// The dates of a dose or lab result: the member path below the resource and its text.
    static func clinicalDates(_ resource: JSONValue) -> [(member: String, text: String)] {
        var dates: [(String, String)] = []
        switch resource["resourceType"]?.stringValue {
        case "Immunization":
            if let value = resource["occurrenceDateTime"]?.stringValue { dates.append(("occurrenceDateTime", value)) }
        case "Observation":
            if let value = resource["effectiveDateTime"]?.stringValue { dates.append(("effectiveDateTime", value)) }
            for end in ["start", "end"] {
                if let value = resource["effectivePeriod"]?[end]?.stringValue {
                    dates.append(("effectivePeriod.\(end)", value))
                }
            }
        default: break
        }
        return dates
    }

    /// Checks the Patient's birth date and every clinical date of the entries.
    /// - Parameters:
    ///   - birthDate: the Patient's `birthDate` value and FHIR path, when present.
    ///   - now: seconds since 1970; nil skips the future checks.
    static func check(
        _ entries: [JSONValue], birthDate: (value: String, path: String)?, now: Int64?,
        findings f: inout BundleValidator.Findings
    ) {
        let birth = birthDate.flatMap { FHIRDateTime($0.value, allowTime: false) }
        if let birth, let birthDate, let now, let problem = future(birth, now: now) {
            f.error(.dateInFuture, birthDate.path, "the birth date \(problem)")
        }
        for (i, entry) in entries.enumerated() {
            guard let resource = entry["resource"] else { continue }
            for (member, text) in clinicalDates(resource) {
                guard let value = FHIRDateTime(text) else { continue }  // reported by the resource rules
                let path = "Bundle.entry[\(i)].resource.\(member)"
                if let now, let problem = future(value, now: now) {
                    f.error(.dateInFuture, path, problem)
                }
                if let birth, value.calendarDate.isBefore(sameZoneAs: birth) {
                    f.error(
                        .dateBeforeBirth, path,
                        "\(Quote.text(text)) is before the patient's birth date \(birth.text): its last day is "
                            + "before the first day the birth date allows. Check both dates")
                }
            }
        }
    }

    /// Why a FHIR date or dateTime is in the future at `now` (seconds since 1970), or nil when it is not.
    static func future(_ value: FHIRDateTime, now: Int64) -> String? {
        guard value.isAfter(now, skew: clockSkewSeconds) else { return nil }
        let text = ControlCharacters.escaped(value.text)
        if value.precision == .instant {
            return "\(Quote.text(text)) is \(span(from: now, to: value.earliest)) after now (\(Clock.describe(now))); "
                + "a time more than \(clockSkewSeconds / 60) minutes ahead is in the future. Check the date, time and offset"
        }
        return "\(Quote.text(text)) is in the future: it has not begun in any time zone "
            + "(today is \(Clock.todayUTC(saturating(now, plus: FHIRDateTime.furthestAheadSeconds))) in UTC+14 at \(Clock.describe(now))). Check the date"
    }

    /// `34 h 0 min` or `3 min` for the time from `start` to a later `end` (seconds since 1970).
    static func span(from start: Int64, to end: Int64) -> String {
        let (seconds, overflow) = end.subtractingReportingOverflow(start)
        guard !overflow, seconds >= 0 else { return "a very long time" }
        let minutes = seconds / 60 + (seconds % 60 == 0 ? 0 : 1)
        return minutes >= 60 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
    }

    /// `a + b`, held at the ends of `Int64` instead of overflowing.
    static func saturating(_ a: Int64, plus b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    /// A card cannot be issued before what it records: no clinical date may be after `nbf` (judged as
    /// "in the future" is judged against now, so a card issued on a clinic's local date is fine).
    /// - Parameters:
    ///   - nbf: the card's `nbf`, whole seconds since 1970.
    ///   - severity: an error when issuing; a warning in `verify`, since verifiers do not check it.
    static func eventsAfterNotBefore(_ bundle: JSONValue, nbf: Int64, severity: Finding.Severity) -> [Finding] {
        var findings: [Finding] = []
        for (i, entry) in (bundle["entry"]?.arrayValue ?? []).enumerated() {
            guard let resource = entry["resource"] else { continue }
            for (member, text) in clinicalDates(resource) {
                guard let value = FHIRDateTime(text), value.isAfter(nbf, skew: clockSkewSeconds) else { continue }
                findings.append(
                    Finding(
                        .nbfBeforeEvent,
                        "nbf \(Clock.describe(nbf)) is before this event (\(ControlCharacters.escaped(text))); "
                            + "a card cannot be issued before what it records. Issue it with a later nbf",
                        at: .init(path: "Bundle.entry[\(i)].resource.\(member)"), severity: severity))
            }
        }
        return findings
    }

    /// Whole seconds from a JSON NumericDate (`nbf`, `exp`), or nil when it is not a finite number
    /// within ±10^15 seconds (about 30 million years), so no conversion can trap.
    static func wholeSeconds(_ value: Double) -> Int64? {
        guard value.isFinite, value > -1e15, value < 1e15 else { return nil }
        return Int64(value.rounded(.down))
    }
}
