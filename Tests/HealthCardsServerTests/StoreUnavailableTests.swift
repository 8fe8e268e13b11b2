import Foundation
import HealthCardsCore
import Testing

import HealthCardsServer

/// The store's errors reach a client as `HealthCardError` with a `STORE_…` code (issue 31, point 3); the server
/// still tells "the database cannot be reached now" from other failures by that code and answers 503 with
/// Retry-After, as it did when the store threw its own error type.
@Suite struct StoreUnavailableTests {
    @Test func closedDatabaseIsStoreUnavailableAnd503() throws {
        let f = try LinkServiceTests.Fixture()
        let link = try f.create()
        #expect(f.post(link.id, #"{"recipient":"EHR"}"#).status == 200)
        f.store.database.close()
        // The store's API throws the library's error, with the code that keeps the reason.
        do {
            _ = try f.store.link(id: link.id, withFiles: false)
            Issue.record("a closed database answered")
        } catch let error as HealthCardError {
            #expect(error.code == .storeUnavailable && error.kind == .io, "\(error)")
        }
        let answer = f.post(link.id, #"{"recipient":"EHR"}"#)
        #expect(answer.status == 503)
        #expect(answer.header("Retry-After") == "5")
    }

    /// A database that is away fails every request: its `database` warning is logged at most once a second (of
    /// the service's clock), the next one saying how many were left out (each request's own line stays).
    @Test func databaseWarningsAreAtMostOneASecond() throws {
        let s = try InProcessServer()
        let link = try s.create()
        s.database.close()
        func post() -> Int? {
            RawHTTP.exchange(RawHTTP.post("/shl/\(link.id)", #"{"recipient":"EHR"}"#), port: s.port)?.status
        }
        func warnings() -> [JSONValue] { s.log.entries.filter { $0["event"]?.stringValue == "database" } }
        for _ in 0..<5 { #expect(post() == 503) }
        #expect(warnings().count == 1)
        #expect(warnings().first?["suppressed"] == nil)
        s.clock.advance(1)
        #expect(post() == 503)
        #expect(warnings().count == 2)
        #expect(warnings().last?["suppressed"]?.numberLexeme == "4")
        #expect(s.log.entries.filter { $0["event"]?.stringValue == "request" }.count == 6)
    }
}
