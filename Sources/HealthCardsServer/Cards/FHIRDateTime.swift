import HealthCardsCore

/// A FHIR `dateTime` (R4 "Primitive Types": `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, or `YYYY-MM-DDThh:mm:ss[.s+](Z|±hh:mm)`)
/// as the interval of seconds it stands for: `2021` is the whole year 2021, `2021-03-04` the whole day.
///
/// Dates without a time carry no zone; they are taken in UTC (a day starts at 00:00Z).
public struct FHIRDateTime: Sendable, Equatable {
    /// First second, since 1970.
    public var start: Int64
    /// The second after the last (exclusive end).
    public var end: Int64

    /// - Returns: nil for text that is not a FHIR dateTime (a month 13, a time without a zone, a year before 1).
    public init?(_ text: String) {
        let b = Array(text.utf8)
        guard b.count <= 40 else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var n = 0
            for c in b[from..<(from + count)] {
                guard c >= 0x30 && c <= 0x39 else { return nil }
                n = n * 10 + Int(c - 0x30)
            }
            return n
        }
        guard let year = number(0, 4), year >= 1 else { return nil }
        if b.count == 4 {
            start = Self.days(year, 1, 1) * 86400
            end = Self.days(year + 1, 1, 1) * 86400
            return
        }
        guard b.count >= 7, b[4] == 0x2D, let month = number(5, 2), (1...12).contains(month) else { return nil }
        if b.count == 7 {
            start = Self.days(year, month, 1) * 86400
            end = (month == 12 ? Self.days(year + 1, 1, 1) : Self.days(year, month + 1, 1)) * 86400
            return
        }
        guard b.count >= 10, b[7] == 0x2D, let day = number(8, 2), day >= 1, day <= Self.monthLength(year, month)
        else { return nil }
        let midnight = Self.days(year, month, day) * 86400
        if b.count == 10 {
            start = midnight
            end = midnight + 86400
            return
        }
        guard b.count >= 20, b[10] == 0x54, let hour = number(11, 2), hour < 24, b[13] == 0x3A,
            let minute = number(14, 2), minute < 60, b[16] == 0x3A, let second = number(17, 2), second < 61
        else { return nil }
        var i = 19
        if b[i] == 0x2E {
            i += 1
            let digits = i
            while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 { i += 1 }
            guard i > digits else { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == 0x5A {
            guard i + 1 == b.count else { return nil }
        } else {
            guard b[i] == 0x2B || b[i] == 0x2D, i + 6 == b.count, let h = number(i + 1, 2), h <= 14, b[i + 3] == 0x3A,
                let m = number(i + 4, 2), m < 60
            else { return nil }
            offset = (h * 3600 + m * 60) * (b[i] == 0x2D ? -1 : 1)
        }
        start = midnight + Int64(hour * 3600 + minute * 60 + min(second, 59) - offset)
        end = start + 1
    }

    static func monthLength(_ year: Int, _ month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func days(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return Int64(era * 146097 + doe - 719468)
    }
}
