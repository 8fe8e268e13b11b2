/// A FHIR R4 `date` or `dateTime` value, read once: its precision and the span of instants it can name
/// (FHIR R4 datatypes section 2.24.0.1).
///
/// A value without a time names a local year, month or day somewhere on Earth, in a zone it does not
/// say. So it spans from the start of its first day in the zone furthest ahead (UTC+14, Line Islands)
/// to the end of its last day in the zone furthest behind (UTC−12): `2021-01-15` spans
/// 2021-01-14T10:00:00Z to 2021-01-16T11:59:59Z. A dateTime with a time names one instant (its offset
/// is part of it). Every comparison of the date rules is made on these spans, so a value is judged the
/// same whatever its precision, and never refused for a time zone it may be in.
///
/// Parsing reads bytes one by one and checks each before any arithmetic; the arithmetic is on values
/// bounded by the grammar (years 1 to 9999), so no input can overflow or trap.
public struct FHIRDateTime: Sendable, Equatable {
    /// How much of a date and time the value gives.
    public enum Precision: Int, Sendable, Comparable {
        /// `YYYY`
        case year
        /// `YYYY-MM`
        case month
        /// `YYYY-MM-DD`
        case day
        /// `YYYY-MM-DDThh:mm:ss[.f…]` with a zone (`Z` or `±hh:mm`): one instant.
        case instant

        public static func < (a: Precision, b: Precision) -> Bool { a.rawValue < b.rawValue }
    }

    /// Seconds the furthest zone ahead of UTC is ahead (UTC+14).
    public static let furthestAheadSeconds: Int64 = 14 * 3_600
    /// Seconds the furthest zone behind UTC is behind (UTC−12).
    public static let furthestBehindSeconds: Int64 = 12 * 3_600

    /// The text as given.
    public let text: String
    public let precision: Precision
    /// 1 to 9999.
    public let year: Int
    /// 1 to 12; nil for a year.
    public let month: Int?
    /// 1 to 31 (a real day of the month); nil for a year or a month.
    public let day: Int?
    /// The earliest instant the value can name, in seconds since 1970-01-01T00:00:00Z: the instant of a
    /// dateTime with a time (fractions of a second dropped), else the start of its first day at UTC+14.
    public let earliest: Int64
    /// The latest instant the value can name, in seconds since 1970: the instant of a dateTime with a
    /// time, else the last second of its last day at UTC−12.
    public let latest: Int64

    /// Parses a FHIR `dateTime` (or, with `allowTime` false, a FHIR `date`).
    ///
    /// Accepted: `YYYY`, `YYYY-MM`, `YYYY-MM-DD` (a real calendar date of the proleptic Gregorian
    /// calendar, years 0001 to 9999: FHIR's year grammar excludes 0000), and with `allowTime`
    /// `YYYY-MM-DDThh:mm:ss[.f…]` followed by `Z` or `±hh:mm` (hours 00–23, minutes 00–59, seconds 00–60,
    /// offsets up to ±13:59 and exactly ±14:00, as FHIR's grammar says).
    /// - Parameters:
    ///   - allowPartial: accept `YYYY` and `YYYY-MM` (FHIR does; template input does not).
    ///   - allowTime: accept a time with a zone (`dateTime`); false reads a FHIR `date`.
    /// - Returns: nil for anything else.
    public init?(_ text: String, allowPartial: Bool = true, allowTime: Bool = true) {
        let b = Array(text.utf8)
        func byte(_ i: Int) -> UInt8? { i >= 0 && i < b.count ? b[i] : nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var value = 0
            for i in from..<(from + count) {
                guard let c = byte(i), c >= 0x30, c <= 0x39 else { return nil }
                value = value * 10 + Int(c - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), year >= 1 else { return nil }
        self.text = text
        self.year = year
        if b.count == 4 {
            guard allowPartial else { return nil }
            (precision, month, day) = (.year, nil, nil)
            earliest = Self.start(year, 1, 1) - Self.furthestAheadSeconds
            latest = Self.start(year + 1, 1, 1) - 1 + Self.furthestBehindSeconds
            return
        }
        guard byte(4) == 0x2D, let month = number(5, 2), (1...12).contains(month) else { return nil }
        self.month = month
        if b.count == 7 {
            guard allowPartial else { return nil }
            (precision, day) = (.month, nil)
            let next = month == 12 ? (year + 1, 1) : (year, month + 1)
            earliest = Self.start(year, month, 1) - Self.furthestAheadSeconds
            latest = Self.start(next.0, next.1, 1) - 1 + Self.furthestBehindSeconds
            return
        }
        guard byte(7) == 0x2D, let day = number(8, 2), day >= 1, day <= FHIRDate.daysIn(month: month, year: year)
        else { return nil }
        self.day = day
        let midnight = Self.start(year, month, day)
        if b.count == 10 {
            precision = .day
            earliest = midnight - Self.furthestAheadSeconds
            latest = midnight + 86_400 - 1 + Self.furthestBehindSeconds
            return
        }
        // `T` hh `:` mm `:` ss [`.` digits] zone
        guard allowTime, byte(10) == 0x54, let hour = number(11, 2), hour < 24, byte(13) == 0x3A,
            let minute = number(14, 2), minute < 60, byte(16) == 0x3A, let second = number(17, 2), second <= 60
        else { return nil }
        var i = 19
        if byte(i) == 0x2E {
            i += 1
            let first = i
            while let c = byte(i), c >= 0x30, c <= 0x39 { i += 1 }
            guard i > first else { return nil }
        }
        var offset = 0
        switch byte(i) {
        case 0x5A:  // Z
            i += 1
        case 0x2B, 0x2D:  // + or -
            guard let zoneHours = number(i + 1, 2), byte(i + 3) == 0x3A, let zoneMinutes = number(i + 4, 2),
                (zoneHours < 14 && zoneMinutes < 60) || (zoneHours == 14 && zoneMinutes == 0)
            else { return nil }
            offset = (zoneHours * 60 + zoneMinutes) * 60 * (byte(i) == 0x2B ? 1 : -1)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        precision = .instant
        let instant = midnight + Int64(hour * 3_600 + minute * 60 + second - offset)
        earliest = instant
        latest = instant
    }

    /// Seconds since 1970 at 00:00:00Z of a date; year 1 to 10000, month 1 to 12, day 1 to 31.
    static func start(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
        FHIRDate.daysSinceEpoch(year: year, month: month, day: day) * 86_400
    }

    /// True when every instant the value can name is after `instant`: its earliest instant is later, by
    /// more than `skew` seconds for a dateTime with a time (clocks run a little apart). `2026-12-01` is
    /// after 2026-11-30T09:00:00Z (it has not begun anywhere yet) but not after 2026-11-30T12:00:00Z
    /// (it is already 2026-12-01 in UTC+14).
    /// - Parameters: instant, skew: seconds since 1970, and seconds.
    public func isAfter(_ instant: Int64, skew: Int64) -> Bool {
        // `earliest` is bounded by the grammar (years 1 to 9999), so only it takes arithmetic.
        precision == .instant ? earliest - max(0, min(skew, 86_400)) > instant : earliest > instant
    }

    /// True when every instant the value can name is before every instant `other` can name:
    /// `latest < other.earliest`. A dose is before a birth only when it ends before the earliest instant
    /// the birth date allows.
    public func isBefore(_ other: FHIRDateTime) -> Bool { latest < other.earliest }

    /// True when `self` ends before `other` begins, both read in one time zone (the two ends of a
    /// Period): calendar days for two values without a time, instants when both have one, and the widest
    /// reading (`isBefore`) when only one has a time.
    public func isBefore(sameZoneAs other: FHIRDateTime) -> Bool {
        guard precision != .instant, other.precision != .instant else { return isBefore(other) }
        // The last day's end and the first day's start, both at UTC: the same zone on both sides.
        return latest - Self.furthestBehindSeconds < other.earliest + Self.furthestAheadSeconds
    }

    /// The local calendar date(s) the value names, without a time: the value itself when it has no time,
    /// else its date part as written (a dateTime's `YYYY-MM-DD` is the date in its own offset).
    public var calendarDate: FHIRDateTime {
        guard precision == .instant else { return self }
        return FHIRDateTime(String(decoding: Array(text.utf8.prefix(10)), as: UTF8.self), allowTime: false) ?? self
    }

    /// Orders values for a card: by earliest instant. Callers keep input order for values that compare
    /// equal (a sort that is stable).
    public func sortsBefore(_ other: FHIRDateTime) -> Bool { earliest < other.earliest }
}
