import Testing

import HealthCardsCore

/// `JSONNumber(thousandths:)` (a request's duration in the server's log) writes what the padded interpolation it
/// replaced wrote, and always a number RFC 8259 accepts.
@Suite struct JSONNumberThousandthsTests {
    @Test func knownValues() {
        let cases: [(Int64, String)] = [
            (0, "0.000"), (5, "0.005"), (50, "0.050"), (999, "0.999"), (1000, "1.000"), (12_345, "12.345"),
            (1_000_001, "1000.001"), (-5, "-0.005"), (-12_345, "-12.345"), (Int64.max, "9223372036854775.807"),
            (Int64.min, "-9223372036854775.808"),
        ]
        for (value, text) in cases { #expect(JSONNumber(thousandths: value).lexeme == text, "\(value)") }
    }

    @Test func agreesWithThePaddedFormulaAndIsValid() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let value = Int64.random(in: 0...10_000_000_000, using: &generator)
            let fraction = value % 1000
            let padded = "\(value / 1000).\(String(repeating: "0", count: 3 - String(fraction).count))\(fraction)"
            let number = JSONNumber(thousandths: value)
            #expect(number.lexeme == padded)
            #expect(JSONNumber(number.lexeme) != nil)
        }
    }
}
