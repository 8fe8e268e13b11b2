/// FHIR R4 `date` and `dateTime` value checks (FHIR R4 datatypes section 2.24.0.1), with real
/// calendar validation: 2021-02-30 is refused, and so is year 0000, which FHIR's year grammar
/// `([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)` excludes. The parsing itself is
/// `FHIRDateTime`'s; these are the yes/no questions the rules ask.
public enum FHIRDate {
    /// True for `YYYY`, `YYYY-MM` or `YYYY-MM-DD` naming a real (proleptic Gregorian) date in the years
    /// 0001 to 9999.
    /// - Parameter allowPartial: accept `YYYY` and `YYYY-MM` (FHIR allows them; template input does not).
    public static func isValidDate(_ text: String, allowPartial: Bool = true) -> Bool {
        FHIRDateTime(text, allowPartial: allowPartial, allowTime: false) != nil
    }

    /// True for a FHIR `dateTime`: a valid `date` (partial allowed), or `YYYY-MM-DDThh:mm:ss[.fff]` with
    /// a time zone (`Z` or `±hh:mm`, at most ±14:00) and valid hours, minutes and seconds.
    public static func isValidDateTime(_ text: String, allowPartial: Bool = true) -> Bool {
        FHIRDateTime(text, allowPartial: allowPartial) != nil
    }

    /// The days in a month of the proleptic Gregorian calendar.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The `YYYY-MM-DD` (or shorter) date part of a `date` or `dateTime`.
    public static func datePart(_ text: String) -> String {
        String(text.prefix(while: { $0 != "T" }))
    }

    /// The instant a FHIR `dateTime` with a time names, in seconds since 1970-01-01T00:00:00Z: the
    /// local date and time minus its offset (`Z` or `±hh:mm`). Fractions of a second are dropped.
    /// - Returns: nil for a date without a time (it names a whole day, not an instant) or an invalid value.
    public static func epochSeconds(_ text: String) -> Int64? {
        guard let value = FHIRDateTime(text), value.precision == .instant else { return nil }
        return value.earliest
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (negative before 1970).
    /// - Parameters: year 1 to 10000 (others are clamped to that range), month 1 to 12 (anything else
    ///   counts as January), day 1 to 31 (others are clamped).
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        let before = Int64(min(max(year, 1), 10_000)) - 1
        let daysBeforeYear = 365 * before + before / 4 - before / 100 + before / 400
        let monthStarts: [Int64] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
        let index = (1...12).contains(month) ? month - 1 : 0
        let leap: Int64 = month > 2 && daysIn(month: 2, year: year) == 29 ? 1 : 0
        // 719_162 days separate 0001-01-01 from 1970-01-01.
        return daysBeforeYear + monthStarts[index] + leap + Int64(min(max(day, 1), 31)) - 1 - 719_162
    }
}
