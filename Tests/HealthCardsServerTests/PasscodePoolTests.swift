import Foundation
import Synchronization
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// Passcode hashing runs on a bounded pool of its own: a burst of wrong passcodes for one link leaves the
/// request threads free for other links, a full queue answers 429 (nothing counted), and the count of wrong
/// attempts stays exact.
@Suite struct PasscodePoolTests {
    /// A passcode whose hash takes a noticeable time (PBKDF2, 60,000 iterations: tens of milliseconds).
    static func slowPasscode(_ text: String, attempts: Int, iterations: Int = 60_000) -> LinkPublisher.Options {
        var options = InProcessServer.passcode(text, attempts: attempts)
        options.passcodeFunction = .pbkdf2SHA256(iterations: iterations)
        return options
    }

    /// Sends `count` wrong passcodes at once, each on its own connection, runs `during` meanwhile; returns the
    /// answers.
    static func burst(_ count: Int, id: String, port: UInt16, during: () throws -> Void = {}) rethrows
        -> [RawHTTP.Answer?]
    {
        let answers = Locked<[RawHTTP.Answer?]>([])
        let group = DispatchGroup()
        for n in 0..<count {
            group.enter()
            Thread.detachNewThread {
                let answer = RawHTTP.exchange(
                    RawHTTP.post("/shl/\(id)", #"{"recipient":"guesser \#(n)","passcode":"wrong \#(n)"}"#), port: port,
                    seconds: 60)
                answers.withLock { $0.append(answer) }
                group.leave()
            }
        }
        try during()
        group.wait()
        return answers.withLock { $0 }
    }

    /// 200 wrong passcodes at once over real sockets, on a pool of 2 threads with room for all of them: while they
    /// are queued (the pool's depth is above 0 before and after), a manifest request for another link is answered
    /// 200 — the request threads compute no hash. Exactly 200 attempts are counted, each remaining count answered
    /// once.
    @Test func aBurstOfWrongPasscodesDoesNotHoldUpOtherLinks() throws {
        let s = try InProcessServer(
            http: {
                $0.threads = 4
                $0.maxConnections = 1024
                $0.maxConnectionsPerClient = 512
            }, passcodeChecks: 2, passcodeQueue: 256)
        let guarded = try s.create(Self.slowPasscode("right", attempts: 1000))
        let other = try s.create()
        let all = Self.burst(200, id: guarded.id, port: s.port) {
            // Wait (bounded) until the pool has work queued.
            let deadline = Date().addingTimeInterval(20)
            while s.service.passcodeQueueDepth < 20 && Date() < deadline { usleep(5_000) }
            let depthBefore = s.service.passcodeQueueDepth
            let started = Date()
            let answer = RawHTTP.exchange(
                RawHTTP.post("/shl/\(other.id)", #"{"recipient":"someone else"}"#), port: s.port)
            let elapsed = Date().timeIntervalSince(started)
            let depthAfter = s.service.passcodeQueueDepth
            #expect(answer?.status == 200)
            #expect(
                depthBefore >= 20 && depthAfter > 0,
                "the other request was answered while \(depthAfter) hashes were queued (\(depthBefore) before)")
            // The queue depth above proves the answer did not wait for the hashes; this bound only catches a stall
            // (3.6–5.3 s before the pool), with room for ThreadSanitizer on a loaded machine.
            #expect(elapsed < 2.0, "answered in \(elapsed) s behind the burst")
        }
        #expect(all.count == 200 && all.allSatisfy { $0?.status == 401 }, "\(all.map { $0?.status ?? 0 })")
        let remaining = all.compactMap { $0.flatMap { try? JSONParser.parse($0.body)["remainingAttempts"] }.flatMap(int) }
        #expect(remaining.sorted() == Array(800..<1000))
        #expect(try s.store.link(id: guarded.id, withFiles: false)?.remainingAttempts == 800)
        // The right passcode still opens it (checked on the pool too).
        let right = RawHTTP.exchange(
            RawHTTP.post("/shl/\(guarded.id)", #"{"recipient":"owner","passcode":"right"}"#), port: s.port)
        #expect(right?.status == 200)
    }

    /// A pool of 1 thread with room for 2 waiting: of 30 wrong passcodes at once, those that find the queue full
    /// are answered 429 with Retry-After and count nothing; every 401 counted one attempt, exactly.
    @Test func aFullQueueAnswers429AndCountsNothing() throws {
        let s = try InProcessServer(
            http: { $0.maxConnectionsPerClient = 256 }, passcodeChecks: 1, passcodeQueue: 2)
        let guarded = try s.create(Self.slowPasscode("right", attempts: 100, iterations: 200_000))
        let all = try Self.burst(30, id: guarded.id, port: s.port).compactMap { $0 }
        let refused = all.filter { $0.status == 429 }
        let counted = all.filter { $0.status == 401 }
        #expect(all.count == 30 && refused.count + counted.count == 30, "\(all.map(\.status))")
        #expect(!refused.isEmpty && refused.allSatisfy { $0.header("Retry-After") == "1" })
        #expect(try s.store.link(id: guarded.id, withFiles: false)?.remainingAttempts == 100 - counted.count)
    }
}
