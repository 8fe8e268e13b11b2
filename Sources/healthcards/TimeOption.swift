import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// Options that take a time as integer seconds since 1970 (`--nbf`, `--exp`, `--before`).
enum TimeOption {
    /// The largest time accepted: 9999-12-31 23:59:59 UTC.
    static let lastSecond: Int64 = 253_402_300_799

    /// Parses `text` as integer seconds since 1970 and says precisely what is wrong otherwise: a
    /// negative number, a fraction or exponent (`1.5e9`), a number that is milliseconds, text.
    /// - Parameters:
    ///   - name: the option without `--`, for messages.
    ///   - example: a good value to show.
    /// - Throws: `HealthCardError(.configuration)`.
    static func parse(_ name: String, _ text: String, example: Int64) throws -> Int64 {
        let how = "give whole seconds since 1970 (UTC), e.g. \(example) (\(Clock.describe(example)))"
        if let value = Int64(text) {
            if value < 0 { throw HealthCardError(.configuration, "--\(name) \(text) is negative, before 1970; \(how)") }
            if value > lastSecond {
                let asMilliseconds = value / 1000
                let hint =
                    asMilliseconds <= lastSecond
                    ? ": it looks like milliseconds (as seconds it is \(asMilliseconds), \(Clock.describe(asMilliseconds))), a classic bug"
                    : ""
                throw HealthCardError(.configuration, "--\(name) \(text) is after the year 9999\(hint); \(how)")
            }
            return value
        }
        if let number = Double(text), number.isFinite {
            let whole = number.rounded()
            let suggestion = (0...Double(lastSecond)).contains(whole) ? " (\(Int64(whole)) without the fraction)" : ""
            throw HealthCardError(
                .configuration,
                "--\(name) \(text) is not a whole number: NumericDate values in SMART Health Cards are integer "
                    + "seconds\(suggestion); \(how)")
        }
        throw HealthCardError(.configuration, "--\(name) \(Quote.text(text)) is not a number; \(how)")
    }
}
