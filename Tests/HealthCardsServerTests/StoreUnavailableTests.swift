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
}
