/// FHIR R4 `date` and `dateTime` value checks (FHIR R4 datatypes section 2.24.0.1), with real
/// calendar validation: 2021-02-30 is refused, and so is year 0000, which FHIR's year grammar
/// `([0-9]([0-9]([0-9][1-9]|[1-9]0)|[1-9]00)|[1-9]000)` excludes.
public enum FHIRDate {
    /// True for `YYYY`, `YYYY-MM` or `YYYY-MM-DD` naming a real (proleptic Gregorian) date in the years
    /// 0001 to 9999.
    /// - Parameter allowPartial: accept `YYYY` and `YYYY-MM` (FHIR allows them; template input does not).
    public static func isValidDate(_ text: String, allowPartial: Bool = true) -> Bool {
        let b = Array(text.utf8)
        func digits(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        guard b.count >= 4, let year = digits(0..<4), year > 0 else { return false }
        switch b.count {
        case 4: return allowPartial
        case 7:
            guard allowPartial, b[4] == 0x2D, let m = digits(5..<7) else { return false }
            return (1...12).contains(m)
        case 10:
            guard b[4] == 0x2D, b[7] == 0x2D, let m = digits(5..<7), let d = digits(8..<10), (1...12).contains(m)
            else { return false }
            return d >= 1 && d <= daysIn(month: m, year: year)
        default: return false
        }
    }

    /// True for a FHIR `dateTime`: a valid `date` (partial allowed), or `YYYY-MM-DDThh:mm:ss[.fff]` with
    /// a time zone (`Z` or `±hh:mm`) and valid hours, minutes and seconds.
    public static func isValidDateTime(_ text: String, allowPartial: Bool = true) -> Bool {
        guard let t = text.firstIndex(of: "T") else { return isValidDate(text, allowPartial: allowPartial) }
        let date = String(text[..<t])
        guard date.utf8.count == 10, isValidDate(date) else { return false }
        var time = Substring(text[text.index(after: t)...])
        if time.hasSuffix("Z") {
            time = time.dropLast()
        } else {
            // `±hh:mm` with ASCII digits only, from -14:00 to +14:00 (FHIR R4 dateTime regex):
            // `Int("-1")` would accept a sign where a digit belongs (`+-1:00`).
            let z = Array(time.utf8.suffix(6))
            guard z.count == 6, time.utf8.count > 6, z[0] == 0x2B || z[0] == 0x2D, z[3] == 0x3A,
                let zh = twoDigits(z[1], z[2]), let zm = twoDigits(z[4], z[5]), zm < 60, zh < 14 || (zh == 14 && zm == 0)
            else { return false }
            time = Substring(time.utf8.dropLast(6))
        }
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 2, parts[1].count == 2, let h = Int(parts[0]), let m = Int(parts[1]),
            h < 24, m < 60
        else { return false }
        let sec = parts[2].split(separator: ".", omittingEmptySubsequences: false)
        guard sec[0].count == 2, let s = Int(sec[0]), s < 60, sec.count <= 2 else { return false }
        if sec.count == 2 { guard !sec[1].isEmpty, sec[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false } }
        return [parts[0], parts[1], sec[0]].allSatisfy { $0.allSatisfy(\.isNumber) }
    }

    /// The value of two ASCII digits, or nil.
    private static func twoDigits(_ a: UInt8, _ b: UInt8) -> Int? {
        guard (0x30...0x39).contains(a), (0x30...0x39).contains(b) else { return nil }
        return Int(a - 0x30) * 10 + Int(b - 0x30)
    }

    /// The days in a month of the proleptic Gregorian calendar.
    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The `YYYY-MM-DD` (or shorter) date part of a `date` or `dateTime`, for ordering comparisons.
    public static func datePart(_ text: String) -> String {
        String(text.prefix(while: { $0 != "T" }))
    }

    /// The instant a FHIR `dateTime` with a time names, in seconds since 1970-01-01T00:00:00Z: the
    /// local date and time minus its offset (`Z` or `±hh:mm`). Fractions of a second are dropped.
    /// - Returns: nil for a date without a time (it names a whole day, not an instant) or an invalid value.
    public static func epochSeconds(_ text: String) -> Int64? {
        // A valid dateTime with a time is ASCII: `YYYY-MM-DD` (10 bytes), `T`, then `hh:mm:ss`.
        guard text.utf8.count > 10, isValidDateTime(text), text.contains("T") else { return nil }
        let b = Array(text.utf8)
        // `isValidDateTime` has checked that every byte read here is an ASCII digit.
        func number(_ from: Int, _ count: Int) -> Int64 {
            b[from..<from + count].reduce(0) { $0 * 10 + Int64($1 - 0x30) }
        }
        let days = daysSinceEpoch(year: Int(number(0, 4)), month: Int(number(5, 2)), day: Int(number(8, 2)))
        let time = 11
        var seconds = days * 86_400 + number(time, 2) * 3_600 + number(time + 3, 2) * 60 + number(time + 6, 2)
        if b.last != UInt8(ascii: "Z") {
            let zone = b.count - 6
            let offset = number(zone + 1, 2) * 3_600 + number(zone + 4, 2) * 60
            seconds += b[zone] == UInt8(ascii: "+") ? -offset : offset
        }
        return seconds
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (negative before 1970).
    /// - Parameters: year 1 to 9999, month 1 to 12, day 1 to 31.
    public static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int64 {
        // Callers pass checked dates; out-of-range arguments are clamped so no sum below can overflow.
        let year = max(0, min(100_000, year))
        let day = max(0, min(31, day))
        let before = year - 1
        let daysBeforeYear = 365 * before + before / 4 - before / 100 + before / 400
        let monthStarts = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
        let leap = month > 2 && daysIn(month: 2, year: year) == 29 ? 1 : 0
        let month = max(1, min(12, month))  // callers pass 1 to 12; anything else must not index out of range
        // 719_162 days separate 0001-01-01 from 1970-01-01.
        return Int64(daysBeforeYear + monthStarts[month - 1] + leap + day - 1 - 719_162)
    }
}
