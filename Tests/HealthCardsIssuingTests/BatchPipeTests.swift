import Foundation
import Synchronization
import Testing

@testable import HealthCardsCore
@testable import HealthCardsIssuing
@testable import HealthCardsSite
import HealthCardsTestSupport

/// The batch's thread plumbing on its own: the pipe between the reading thread and the workers, the worker
/// thread, and the one-time hand-over of a worker's state.
@Suite struct BatchPipeTests {
    /// Results come back in job order whatever order the workers finish in.
    @Test func resultsComeBackInJobOrder() throws {
        let pipe = BatchPipe<Int, String>()
        for job in 0..<40 { pipe.submit(job) }
        pipe.close()
        let threads = try (0..<4).map { worker in
            try WorkerThread {
                while let (number, job) = pipe.take() {
                    // Later jobs of low numbers sleep longer, so workers finish out of order.
                    usleep(UInt32((job % 5) * 500))
                    pipe.finish(number, "job \(job) by \(worker)")
                }
            }
        }
        var seen: [Int] = []
        for number in 0..<40 {
            let result = try #require(pipe.result(number, wait: 30))
            seen.append(Int(result.split(separator: " ")[1]) ?? -1)
        }
        for thread in threads { thread.join() }
        #expect(seen == Array(0..<40))
        #expect(pipe.submitted == 40)
    }

    /// Jobs no worker started are dropped; the numbers already taken still complete.
    @Test func discardDropsOnlyWaitingJobs() {
        let pipe = BatchPipe<Int, Int>()
        for job in 0..<10 { pipe.submit(job) }
        let first = pipe.take()
        let second = pipe.take()
        #expect(first?.0 == 0 && second?.0 == 1)
        #expect(pipe.discardWaiting() == 8)
        #expect(pipe.submitted == 2)
        pipe.close()
        #expect(pipe.take() == nil, "nothing left after a discard and close")
        pipe.finish(1, 11)
        pipe.finish(0, 10)
        #expect(pipe.result(0, wait: 1) == 10 && pipe.result(1, wait: 1) == 11)
    }

    /// A result not there yet is waited for at most the time given; one that comes while waiting is returned.
    @Test func resultWaitsForALateWorker() throws {
        let pipe = BatchPipe<Int, Int>()
        pipe.submit(7)
        #expect(pipe.result(0, wait: 0.01) == nil, "no worker yet: nothing after the wait")
        let worker = try WorkerThread {
            guard let (number, job) = pipe.take() else { return }
            usleep(20_000)
            pipe.finish(number, job * 6)
        }
        #expect(pipe.result(0, wait: 30) == 42)
        worker.join()
        #expect(pipe.result(0, wait: 0) == nil, "a result is taken once")
    }

    /// A thread the system cannot start is an error, and its body never runs.
    @Test func aThreadThatCannotStartIsAnError() {
        let ran = Atomic<Bool>(false)
        // 64 TiB of stack: no system gives it.
        #expect(throws: HealthCardError.self) {
            let thread = try WorkerThread(stackBytes: 1 << 46) { ran.store(true, ordering: .relaxed) }
            thread.join()
        }
        #expect(ran.load(ordering: .relaxed) == false)
    }

    /// A hand-off gives its value once, to whichever thread takes it first.
    @Test func aHandoffIsTakenOnce() throws {
        final class Worker { var count = 0 }
        let handoff = Handoff(Worker())
        let taken = Atomic<Int>(0)
        let threads = try (0..<8).map { _ in
            try WorkerThread {
                if let worker = handoff.take() {
                    worker.count += 1
                    taken.add(1, ordering: .relaxed)
                }
            }
        }
        for thread in threads { thread.join() }
        #expect(taken.load(ordering: .relaxed) == 1)
        #expect(handoff.take() == nil)
    }
}
