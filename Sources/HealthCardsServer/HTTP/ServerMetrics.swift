import HealthCardsCore
import Synchronization

/// What `/metrics` shows, in the Prometheus text exposition format (version 0.0.4): requests by route name and
/// status, a latency histogram, the passcode queue and database errors. Route names only (never a path, which
/// may hold a link id), so the set of series is small and fixed.
public final class ServerMetrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds.
    public static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct State {
        var requests: [String: Int] = [:]  // "route status" -> count
        var bucketCounts = [Int](repeating: 0, count: ServerMetrics.buckets.count)
        var count = 0
        var sum = 0.0
    }

    private let state = Mutex(State())
    private let databaseErrorCount = Atomic<Int>(0)
    private let passcodesRejected = Atomic<Int>(0)
    /// Reads the passcode queue's depth (waiting and running) when the page is made.
    private let queueDepth = Locked<(@Sendable () -> Int)?>(nil)

    public init() {}

    public func request(route: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests["\(route) \(status)", default: 0] += 1
            if let index = Self.buckets.firstIndex(where: { seconds <= $0 }) { state.bucketCounts[index] += 1 }
            state.count += 1
            state.sum += seconds
        }
    }

    public func databaseError() { databaseErrorCount.add(1, ordering: .relaxed) }
    public func passcodeQueueFull() { passcodesRejected.add(1, ordering: .relaxed) }
    public func passcodeQueue(_ depth: @escaping @Sendable () -> Int) { queueDepth.withLock { $0 = depth } }

    /// The page.
    public func text() -> String {
        let snapshot = state.withLock { $0 }
        var out = "# HELP healthcards_requests_total Requests answered, by route name and status.\n"
        out += "# TYPE healthcards_requests_total counter\n"
        for key in snapshot.requests.keys.sorted() {
            let parts = key.split(separator: " ")
            out += "healthcards_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"} \(snapshot.requests[key]!)\n"
        }
        out += "# HELP healthcards_request_duration_seconds Time from a request's headers to its answer.\n"
        out += "# TYPE healthcards_request_duration_seconds histogram\n"
        var cumulative = 0
        for (bound, count) in zip(Self.buckets, snapshot.bucketCounts) {
            cumulative += count
            out += "healthcards_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "healthcards_request_duration_seconds_bucket{le=\"+Inf\"} \(snapshot.count)\n"
        out += "healthcards_request_duration_seconds_sum \(snapshot.sum)\n"
        out += "healthcards_request_duration_seconds_count \(snapshot.count)\n"
        out += "# HELP healthcards_passcode_queue Passcode checks waiting or running on their pool.\n"
        out += "# TYPE healthcards_passcode_queue gauge\n"
        out += "healthcards_passcode_queue \(queueDepth.withLock { $0 }?() ?? 0)\n"
        out += "# HELP healthcards_passcode_queue_full_total Passcode requests answered 429 because the queue was full.\n"
        out += "# TYPE healthcards_passcode_queue_full_total counter\n"
        out += "healthcards_passcode_queue_full_total \(passcodesRejected.load(ordering: .relaxed))\n"
        out += "# HELP healthcards_database_errors_total Requests the database failed (answered 503 or 500).\n"
        out += "# TYPE healthcards_database_errors_total counter\n"
        out += "healthcards_database_errors_total \(databaseErrorCount.load(ordering: .relaxed))\n"
        return out
    }

    /// The one route of the metrics listener: `GET /metrics`.
    public var routes: [Route] {
        [
            Route(name: "metrics", method: "GET", pattern: [.literal("metrics")], bodyLimit: 0) { [self] _ in
                HTTPResponse(
                    status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                    body: Array(text().utf8), outcome: "served")
            }
        ]
    }
}
