import Foundation
import HealthCardsTestSupport
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer

/// A PostgreSQL restart while the server is idle: the first request finds its pooled connections dead, and the
/// ones after it are served on a new connection (an idle server answered 503 to its next 11 requests, one for
/// each old connection it tried: 16 here before the fix). And every line of its log stays one JSON object (a trial
/// under load saw libpq print "FATAL: terminating connection ..." among them; this idle case does not provoke it).
@Suite struct PostgresReconnectTests {
    @Test(
        .enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing),
        .enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func anIdleServerIsBackAtTheNextRequestAfterARestart() throws {
        let dir = try TestSupport.tempDir("pg-reconnect")
        let cluster = try PostgresCluster(name: "reconnect")
        let db = try cluster.createDatabase()
        let server = try ServerProcess(db: db, in: dir)
        let link = try ServerTestSupport.makeLink("plain", db: db, base: server.base, in: dir, [])
        let body = #"{"recipient":"across a restart"}"#
        // Many requests at once: the pool holds many connections to the server that is about to go.
        let burst = try ServerTestSupport.client(["burst", server.url(link.id), "20", "40", body])
        let statuses = try #require(burst["results"]?.arrayValue).compactMap { int($0["status"]) }
        #expect(statuses.count == 40 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        try cluster.stop()
        try cluster.start()
        var answers: [Int] = []
        for _ in 0..<20 {
            let status = int(try ServerTestSupport.client(["post", server.url(link.id), body])["status"]) ?? 0
            answers.append(status)
            if status == 200 { break }
        }
        #expect(answers.last == 200, "\(answers)")
        #expect(answers.filter { $0 == 503 }.count <= 1, "answers after the restart: \(answers)")
        #expect(server.stop() == 0)
        // Every line of the log is one JSON object.
        let text = try String(contentsOf: server.log, encoding: .utf8)
        for line in text.split(separator: "\n") {
            #expect((try? JSONParser.parse(Array(line.utf8))) != nil, "not a JSON line: \(line)")
        }
        try cluster.stop()
    }
}
