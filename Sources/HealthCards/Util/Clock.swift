#if canImport(Glibc)
    import Glibc
#endif

/// Wall-clock time in the units the spec uses.
public enum Clock {
    /// Seconds since the Unix epoch, as an integer (`nbf`, `exp`; digest section 2).
    public static func nowSeconds() -> Int64 { Int64(time(nil)) }

    /// Today's date in UTC as `YYYY-MM-DD`.
    public static func todayUTC(_ seconds: Int64 = nowSeconds()) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
    }

    /// `YYYY-MM-DD hh:mm:ss UTC` for a time in seconds.
    public static func describe(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func pad(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(todayUTC(seconds)) \(pad(parts.tm_hour)):\(pad(parts.tm_min)):\(pad(parts.tm_sec)) UTC"
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
