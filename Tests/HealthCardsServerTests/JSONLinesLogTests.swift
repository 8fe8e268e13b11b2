import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `JSONLinesLog` with a buffer (`healthcards serve`): request lines are written together within the buffer's
/// milliseconds, every other line at once after the ones gathered before it, and `close` writes the rest.
@Suite struct JSONLinesLogTests {
    static let fixedClock: @Sendable () -> (seconds: Int64, milliseconds: Int) = { (1_800_000_000, 5) }

    /// The file's lines, parsed.
    static func lines(_ path: String) throws -> [JSONValue] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try text.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
    }

    /// An integer member's value.
    static func int(_ value: JSONValue?) -> Int? { value?.numberLexeme.flatMap { Int($0) } }

    static func open(_ path: String) -> Int32 { Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600) }

    @Test func requestLinesWaitTheirBufferOtherLinesDoNot() throws {
        let dir = try TestSupport.tempDir("json-lines-log")
        let path = dir.appendingPathComponent("serve.log").path
        let fd = Self.open(path)
        try #require(fd >= 0)
        defer { close(fd) }
        let log = JSONLinesLog(fd: fd, clock: Self.fixedClock, bufferMilliseconds: 400)
        log.info("request", ["n": .integer(1)])
        log.info("request", ["n": .integer(2)])
        #expect(try Self.lines(path).isEmpty, "request lines are held")
        // A warning is written at once, after the request lines gathered before it.
        log.warning("database", ["n": .integer(3)])
        #expect(try Self.lines(path).map { Self.int($0["n"]) } == [1, 2, 3])
        // A request line alone is written by the flusher within its buffer's time.
        log.info("request", ["n": .integer(4)])
        let started = Clock.monotonicSeconds()
        while try Self.lines(path).count < 4 && Clock.monotonicSeconds() - started < 5 { usleep(10_000) }
        let waited = Clock.monotonicSeconds() - started
        #expect(try Self.lines(path).count == 4)
        #expect(waited >= 0.3 && waited < 3, "written \(waited) s later (buffer 0.4 s)")
        // A 5xx request line is an error: at once.
        log.error("request", ["n": .integer(5)])
        #expect(try Self.lines(path).count == 5)
        log.info("request", ["n": .integer(6)])
        log.close()
        let all = try Self.lines(path)
        #expect(all.map { Self.int($0["n"]) } == [1, 2, 3, 4, 5, 6])
        #expect(all.allSatisfy { $0["time"] == "2027-01-15T08:00:00.005Z" })
        #expect(all[0]["event"] == "request" && all[0]["level"] == "info" && all[2]["level"] == "warning")
        // After close, request lines are written at once.
        log.info("request", ["n": .integer(7)])
        #expect(try Self.lines(path).count == 7)
    }

    /// Many threads' request lines: every line whole and present, none interleaved (past the buffer's bytes too).
    @Test func linesFromManyThreadsStayWhole() throws {
        let dir = try TestSupport.tempDir("json-lines-log")
        let path = dir.appendingPathComponent("serve.log").path
        let fd = Self.open(path)
        try #require(fd >= 0)
        defer { close(fd) }
        let log = JSONLinesLog(fd: fd, clock: Self.fixedClock, bufferMilliseconds: 20)
        let padding = String(repeating: "x", count: 300)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for n in 0..<500 {
                log.info("request", ["thread": .integer(Int64(thread)), "n": .integer(Int64(n)), "pad": .string(padding)])
                if n % 100 == 0 { log.warning("other", ["thread": .integer(Int64(thread))]) }
            }
        }
        log.close()
        let all = try Self.lines(path)
        let requests = all.filter { $0["event"] == "request" }
        #expect(requests.count == 4000 && all.count == 4040)
        for thread in 0..<8 {
            let mine = requests.filter { Self.int($0["thread"]) == thread }.compactMap { Self.int($0["n"]) }
            #expect(mine == Array(0..<500), "thread \(thread)'s lines in order")
        }
    }
}
