import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// Options that take a time as integer seconds since 1970 (`--nbf`, `--exp`, `--before`).
enum TimeOption {
    /// The largest time accepted: 9999-12-31 23:59:59 UTC.
    static let lastSecond: Int64 = 253_402_300_799

    /// Parses `text` as integer seconds since 1970, written in decimal digits (`1700000000`; leading zeros are
    /// decimal too), and says precisely what is wrong otherwise: a negative number, a fraction (`1.5`), an
    /// exponent (`1.5e9`), a number that is milliseconds, hexadecimal (`0x10`, which Swift's number parsers
    /// would read as 16), a sign, spaces or separators, text.
    /// - Parameters:
    ///   - name: the option without `--`, for messages.
    ///   - example: a good value to show.
    /// - Throws: `HealthCardError(.configuration)`.
    static func parse(_ name: String, _ text: String, example: Int64) throws -> Int64 {
        let how = "give whole seconds since 1970 (UTC) in decimal digits, e.g. \(example) (\(Clock.describe(example)))"
        func isDigits(_ s: Substring) -> Bool { !s.isEmpty && s.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
        let negative = text.hasPrefix("-")
        let magnitude = negative ? text.dropFirst() : text[...]
        if isDigits(magnitude) {
            if negative, magnitude.contains(where: { $0 != "0" }) {
                throw HealthCardError(.configuration, "--\(name) \(text) is negative, before 1970; \(how)")
            }
            guard let value = Int64(magnitude), value <= lastSecond else {
                let asMilliseconds = Int64(magnitude).map { $0 / 1000 }
                let hint =
                    asMilliseconds.map { $0 <= lastSecond } == true
                    ? ": it looks like milliseconds (as seconds it is \(asMilliseconds!), \(Clock.describe(asMilliseconds!))), a classic bug"
                    : ""
                throw HealthCardError(.configuration, "--\(name) \(text) is after the year 9999\(hint); \(how)")
            }
            return value
        }
        // A decimal number with a fraction or an exponent: -?digits[.digits][(e|E)[+-]digits].
        func isDecimalNumber(_ s: Substring) -> Bool {
            let exponentAt = s.firstIndex { $0 == "e" || $0 == "E" }
            if let exponentAt {
                var exponent = s[s.index(after: exponentAt)...]
                if exponent.first == "+" || exponent.first == "-" { exponent = exponent.dropFirst() }
                guard isDigits(exponent) else { return false }
            }
            return s[..<(exponentAt ?? s.endIndex)].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
                .allSatisfy(isDigits)
        }
        if isDecimalNumber(magnitude), let number = Double(text), number.isFinite {
            let whole = number.rounded(.down)
            let inRange = (0...Double(lastSecond)).contains(whole)
            if whole == number {
                throw HealthCardError(
                    .configuration,
                    "--\(name) \(text) is written with an exponent: NumericDate values in SMART Health Cards are integer "
                        + "seconds written in digits\(inRange ? " (here \(Int64(whole)))" : ""); \(how)")
            }
            throw HealthCardError(
                .configuration,
                "--\(name) \(text) is not a whole number: NumericDate values in SMART Health Cards are integer "
                    + "seconds\(inRange ? " (\(Int64(whole)) without the fraction)" : ""); \(how)")
        }
        let unsigned = text.hasPrefix("-") || text.hasPrefix("+") ? text.dropFirst() : text[...]
        if unsigned.hasPrefix("0x") || unsigned.hasPrefix("0X") {
            throw HealthCardError(
                .configuration,
                "--\(name) \(Quote.text(text)) is hexadecimal; NumericDate values in SMART Health Cards are decimal "
                    + "integer seconds; \(how)")
        }
        if Double(text) != nil || Double(text.trimmingCharacters(in: " \t")) != nil || Int64(text.filter { $0 != "_" }) != nil {
            throw HealthCardError(
                .configuration,
                "--\(name) \(Quote.text(text)) is not written in decimal digits alone (no sign, spaces, separators or "
                    + "other number forms); \(how)")
        }
        throw HealthCardError(.configuration, "--\(name) \(Quote.text(text)) is not a number; \(how)")
    }
}
