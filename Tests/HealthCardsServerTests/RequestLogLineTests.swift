import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer

/// A request's log line written straight into bytes (`JSONLinesLog.requestLine`) is, byte for byte, the line the
/// general path writes for the same fields (`JSONLinesLog.line` of `RequestLogLine.fields`), whatever the strings
/// hold (quotes, backslashes, control characters, characters of several bytes) and whichever fields are absent.
@Suite struct RequestLogLineTests {
    static func randomText(_ generator: inout some RandomNumberGenerator) -> String {
        let pieces = ["a", "GET", "\"", "\\", "\n", "\u{1}", "\u{1F}", "é", "\u{1F600}", "/", " ", "\u{2028}", "<"]
        return (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
            .joined()
    }

    @Test func theDirectLineIsTheGeneralLine() throws {
        var generator = SystemRandomNumberGenerator()
        for n in 0..<2_000 {
            let request = RequestLogLine(
                level: [.info, .warning, .error].randomElement(using: &generator)!,
                method: Self.randomText(&generator), route: Self.randomText(&generator),
                status: [200, 404, 503, 0, Int.random(in: -5...999, using: &generator)].randomElement(
                    using: &generator)!,
                outcome: Bool.random(using: &generator) ? Self.randomText(&generator) : nil,
                link: Bool.random(using: &generator) ? Self.randomText(&generator) : nil,
                milliseconds: try #require(JSONNumber(["0.001", "12.345", "0", "1000.5"][n % 4])),
                bytes: Int.random(in: 0...1_000_000, using: &generator), peer: Self.randomText(&generator))
            let now = (seconds: Int64.random(in: 0...4_000_000_000, using: &generator), milliseconds: n % 1000)
            let direct = JSONLinesLog.requestLine(now, request)
            let general = JSONLinesLog.line(now, request.level, "request", request.fields)
            #expect(
                direct == general,
                "\(String(decoding: direct, as: UTF8.self)) vs \(String(decoding: general, as: UTF8.self))")
            // And it is one JSON object a line.
            #expect(direct.last == 0x0A)
            let parsed = try JSONParser.parse(Array(direct.dropLast()))
            #expect(parsed["peer"]?.stringValue == request.peer)
        }
    }

    /// A log that does not write lines itself (here `MemoryLog`) gets a request as the same event and fields.
    @Test func otherLogsGetTheRequestAsAnEvent() {
        let log = MemoryLog()
        let request = RequestLogLine(
            level: .info, method: "GET", route: "file", status: 200, outcome: "served", link: "abc",
            milliseconds: JSONNumber(Int64(3)),
            bytes: 10, peer: "127.0.0.1")
        log.logRequest(request)
        let entry = log.entries.first
        #expect(entry?["event"]?.stringValue == "request")
        #expect(entry?["route"]?.stringValue == "file")
        #expect(entry?["status"] == .integer(200))
        #expect(entry?["peer"]?.stringValue == "127.0.0.1")
    }
}
