import Foundation
import HealthCardsCore
import Testing

/// `Clock.iso8601`, which every server log line and manifest `lastUpdated` is stamped with, now formatted into bytes:
/// known answers at the edges, and Foundation's own formatter over times spread across years 1970 to 9999.
@Suite struct ClockISO8601Tests {
    @Test func knownAnswers() {
        #expect(Clock.iso8601(0) == "1970-01-01T00:00:00Z")
        #expect(Clock.iso8601(0, milliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Clock.iso8601(1_700_000_000, milliseconds: 5) == "2023-11-14T22:13:20.005Z")
        #expect(Clock.iso8601(-1) == "1969-12-31T23:59:59Z")
        #expect(Clock.iso8601(253_402_300_799, milliseconds: 999) == "9999-12-31T23:59:59.999Z")
        #expect(Clock.iso8601(253_402_300_800) == "10000-01-01T00:00:00Z")
        // Year -1 (GNU date: -001-01-01T00:00:00), four digits after the sign.
        #expect(Clock.iso8601(-62_198_755_200) == "-0001-01-01T00:00:00Z")
        // Milliseconds outside 0...999 are clamped.
        #expect(Clock.iso8601(0, milliseconds: 1500) == "1970-01-01T00:00:00.999Z")
        #expect(Clock.iso8601(0, milliseconds: -5) == "1970-01-01T00:00:00.000Z")
        // Any Int64: clamped to what gmtime_r can represent, never a trap.
        #expect(!Clock.iso8601(.max).isEmpty && !Clock.iso8601(.min).isEmpty)
    }

    @Test func agreesWithFoundationAcrossTheCalendar() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: 0...253_402_300_799, using: &generator)
            let milliseconds = Int.random(in: 0...999, using: &generator)
            let date = Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000 + 0.0001)
            #expect(Clock.iso8601(seconds, milliseconds: milliseconds) == formatter.string(from: date), "\(seconds)")
        }
    }
}
