/// Clinical and birth dates against the clock: nothing in the future, no dose or test before birth.
///
/// "The future" depends on what the value says. A dateTime with a time names an instant: it is converted
/// with its offset to seconds since 1970 and compared with `now`, allowing `clockSkewSeconds` for clocks
/// that run a little apart. A date without a time (or a partial date) names a local day somewhere: it is
/// in the future only when it is after today's date in the furthest time zone, UTC+14, so a clinic in
/// New Zealand or Kiribati issuing on its local date is not refused.
enum DateRules {
    /// Clock skew allowed for dateTimes with a time, in seconds (5 minutes).
    static let clockSkewSeconds: Int64 = 300
    /// The furthest time zone ahead of UTC (UTC+14, Line Islands), in seconds.
    static let furthestZoneSeconds: Int64 = 14 * 3_600

    /// Checks `occurrenceDateTime` and `effectiveDateTime` of each entry and the Patient's birth date.
    /// - Parameters:
    ///   - birthDate: the Patient's `birthDate` value and FHIR path, when present.
    ///   - now: seconds since 1970; nil skips the future checks.
    static func check(
        _ entries: [JSONValue], birthDate: (value: String, path: String)?, now: Int64?,
        findings f: inout BundleValidator.Findings
    ) {
        let birth = birthDate.flatMap { FHIRDate.isValidDate($0.value) ? $0 : nil }
        if let birth, let now, let problem = future(birth.value, now: now) {
            f.error(.dateInFuture, birth.path, "the birth date \(problem)")
        }
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)].resource"
            guard let resource = entry["resource"] else { continue }
            for member in ["occurrenceDateTime", "effectiveDateTime"] {
                guard let value = resource[member]?.stringValue, FHIRDate.isValidDateTime(value) else { continue }
                if let now, let problem = future(value, now: now) {
                    f.error(.dateInFuture, "\(path).\(member)", problem)
                }
                let day = FHIRDate.datePart(value)
                if let birth, day.count == 10, birth.value.count == 10, day < birth.value {
                    f.error(
                        .dateBeforeBirth, "\(path).\(member)",
                        "'\(value)' is before the patient's birth date \(birth.value)")
                }
            }
        }
    }

    /// Why a valid FHIR date or dateTime is in the future at `now`, or nil when it is not.
    static func future(_ value: String, now: Int64) -> String? {
        if let instant = FHIRDate.epochSeconds(value) {
            guard instant > now + clockSkewSeconds else { return nil }
            return "'\(value)' is \(span(instant - now)) after now (\(Clock.describe(now))); "
                + "a time more than \(clockSkewSeconds / 60) minutes ahead is in the future. Check the date, time and offset"
        }
        let latest = Clock.todayUTC(now + furthestZoneSeconds)
        guard value > String(latest.prefix(value.count)) else { return nil }
        return "'\(value)' is in the future: it is after today's date in every time zone "
            + "(\(latest) in UTC+14 at \(Clock.describe(now))). Check the date"
    }

    /// `34 h 0 min` or `3 min` for a duration in seconds.
    static func span(_ seconds: Int64) -> String {
        let minutes = (seconds + 59) / 60
        return minutes >= 60 ? "\(minutes / 60) h \(minutes % 60) min" : "\(minutes) min"
    }

    /// A card cannot be issued before what it records: the events' days must not come after `nbf`'s
    /// day in the furthest time zone (UTC+14), so a card issued on a clinic's local date is fine.
    /// - Parameters:
    ///   - nbf: the card's `nbf`, seconds since 1970.
    ///   - severity: an error when issuing; a warning in `verify`, since verifiers do not check it.
    static func eventsAfterNotBefore(_ bundle: JSONValue, nbf seconds: Double, severity: Finding.Severity) -> [Finding] {
        // An nbf a card cannot carry (negative, beyond the year 5138) is reported by the claims check.
        guard let nbf = NumericDate(seconds)?.whole else { return [] }
        let latestDay = Clock.todayUTC(nbf + furthestZoneSeconds)
        var findings: [Finding] = []
        for (i, entry) in (bundle["entry"]?.arrayValue ?? []).enumerated() {
            for member in ["occurrenceDateTime", "effectiveDateTime"] {
                guard let value = entry["resource"]?[member]?.stringValue, FHIRDate.isValidDateTime(value) else { continue }
                let day = FHIRDate.datePart(value)
                guard day.count == 10, day > latestDay else { continue }
                findings.append(Finding(.nbfBeforeEvent, "nbf \(Clock.describe(nbf)) is before this event (\(value)); "
                    + "a card cannot be issued before what it records. Issue it with a later nbf",
                    at: .init(path: "Bundle.entry[\(i)].resource.\(member)"), severity: severity))
            }
        }
        return findings
    }
}
