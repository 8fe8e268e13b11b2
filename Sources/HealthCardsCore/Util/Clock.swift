#if canImport(Glibc)
    import Glibc
#endif

/// Wall-clock time in the units the spec uses.
public enum Clock {
    /// Seconds since the Unix epoch, as an integer (`nbf`, `exp`; digest section 2).
    public static func nowSeconds() -> Int64 { Int64(time(nil)) }

    /// Today's date in UTC as `YYYY-MM-DD` (the year with more digits, or a sign, outside 0000 to 9999).
    public static func todayUTC(_ seconds: Int64) -> String {
        let parts = utc(seconds)
        return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))"
    }

    /// `YYYY-MM-DD hh:mm:ss UTC` for a time in seconds.
    public static func describe(_ seconds: Int64) -> String {
        let parts = utc(seconds)
        return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2)) "
            + "\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2)) UTC"
    }

    /// ISO 8601 / RFC 3339 in UTC for a time in seconds, `YYYY-MM-DDThh:mm:ssZ` (a SMART Health Link manifest's
    /// `lastUpdated`, FHIR `instant`), with `.mmm` milliseconds when `milliseconds` is given (0...999).
    public static func iso8601(_ seconds: Int64, milliseconds: Int? = nil) -> String {
        let parts = utc(seconds)
        // Bytes written in place (the server stamps every log line with it; interpolating padded strings cost
        // about 8,000 instructions a call).
        var out: [UInt8] = []
        out.reserveCapacity(32)
        appendPadded(parts.year, 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(parts.month, 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(parts.day, 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendPadded(parts.hour, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(parts.minute, 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(parts.second, 2, to: &out)
        if let milliseconds {
            out.append(UInt8(ascii: "."))
            appendPadded(max(0, min(999, milliseconds)), 3, to: &out)
        }
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// `value`'s decimal digits, zero-padded to `width` digits, after a `-` when it is negative.
    private static func appendPadded(_ value: Int, _ width: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var count = 1
        var power: UInt = 1
        while magnitude / power >= 10 {
            power *= 10
            count += 1
        }
        for _ in 0..<max(0, width - count) { out.append(UInt8(ascii: "0")) }
        while power > 0 {
            out.append(UInt8(ascii: "0") + UInt8((magnitude / power) % 10))
            power /= 10
        }
    }

    /// The UTC calendar fields of a time. Any `Int64` is accepted: a time `gmtime_r` cannot represent
    /// (a year beyond 2^31) is clamped to the nearest one it can, so nothing here can overflow.
    static func utc(_ seconds: Int64) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        // ±2^55 seconds is about ±1.1 billion years: inside gmtime_r's int year on every platform.
        let limit: Int64 = 1 << 55
        var t = time_t(max(-limit, min(limit, seconds)))
        var parts = tm()
        guard gmtime_r(&t, &parts) != nil else { return (1970, 1, 1, 0, 0, 0) }
        return (Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min),
                Int(parts.tm_sec))
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value.magnitude)
        return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension Clock {
    /// A monotonic clock reading in seconds, for measuring elapsed time.
    public static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

/// Where a program gets the wall-clock time the library judges against (`nbf`, `exp`, dates in the future,
/// revocation timestamps), in seconds since 1970. The library never reads the system clock by itself where a
/// caller can pass one: a long-running server passes `SystemWallClock`, a test a `FixedWallClock`.
public protocol WallClock: Sendable {
    /// Seconds since the Unix epoch, whole.
    func nowSeconds() -> Int64
}

/// The system's clock (`time(2)`).
public struct SystemWallClock: WallClock {
    public init() {}
    public func nowSeconds() -> Int64 { Clock.nowSeconds() }
}

/// A clock that always says the same time: for tests, fixtures and reproducible runs.
public struct FixedWallClock: WallClock {
    /// The time it says, seconds since 1970.
    public let seconds: Int64
    public init(_ seconds: Int64) { self.seconds = seconds }
    public func nowSeconds() -> Int64 { seconds }
}
