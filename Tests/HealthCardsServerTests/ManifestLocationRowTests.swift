import Foundation
import Testing

import HealthCardsCore
@testable import HealthCardsServer

/// A manifest writes one location row, whatever its number of files (`ManifestLocation`); each of its locations
/// opens its own file of the version handed out; single-use locations keep one row a file.
@Suite struct ManifestLocationRowTests {
    typealias Fixture = LinkServiceTests.Fixture

    static func rows(_ f: Fixture) throws -> Int {
        try f.store.database.withConnection { c in
            Int(try c.scalar("SELECT count(*) FROM hc_tickets", [])?.integer ?? -1)
        }
    }

    /// Three files with different contents (the spec's card, and two others).
    static func files(_ f: Fixture) -> [LinkContent] {
        [
            LinkContent(contentType: JWE.smartHealthCard, bytes: f.card),
            LinkContent(contentType: JWE.smartHealthCard, bytes: Array(#"{"verifiableCredential":["b"]}"#.utf8)),
            LinkContent(contentType: JWE.smartHealthCard, bytes: Array(#"{"verifiableCredential":["c"]}"#.utf8)),
        ]
    }

    @Test func oneRowForAManifestOfThreeFilesAndEachLocationOpensItsFile() throws {
        let f = try Fixture()
        let link = try f.create(files: Self.files(f))
        let stored = try #require(try f.store.link(id: link.id, withFiles: true))
        let manifest = f.post(link.id, #"{"recipient":"r"}"#)
        #expect(manifest.status == 200)
        let locations =
            try LinkServiceTests.json(manifest)["files"]?.arrayValue?.compactMap {
                $0["location"]?.stringValue
            } ?? []
        #expect(locations.count == 3)
        #expect(try Self.rows(f) == 1)
        for (position, location) in locations.enumerated() {
            let secret = location.split(separator: "/").last.map(String.init) ?? ""
            #expect(LinkID.isValid(secret))
            let answer = f.get(f.path(location))
            #expect(answer.status == 200)
            #expect(answer.body == Array(stored.files[position].jwe.utf8), "location \(position)")
        }
        // Locations differ; a position the manifest has no file at opens nothing.
        #expect(Set(locations).count == 3)
        let prefix = String(locations[0].dropLast())
        #expect(f.get(f.path(prefix + "Z")).status == 404)
        // Another manifest: another row, other locations.
        let again = f.post(link.id, #"{"recipient":"s"}"#)
        #expect(again.status == 200)
        #expect(try Self.rows(f) == 2)
        // Each fetch recorded with its manifest's recipient.
        #expect(try f.store.audit(linkID: link.id).filter { $0.kind == "file" }.map(\.recipient) == ["r", "r", "r"])
    }

    @Test func singleUseLocationsKeepOneRowAFileAndAnswerOnce() throws {
        let f = try Fixture { $0.singleUseLocations = true }
        let link = try f.create(files: Self.files(f))
        let manifest = f.post(link.id, #"{"recipient":"r"}"#)
        let locations =
            try LinkServiceTests.json(manifest)["files"]?.arrayValue?.compactMap {
                $0["location"]?.stringValue
            } ?? []
        #expect(try Self.rows(f) == 3)
        for location in locations {
            #expect(f.get(f.path(location)).status == 200)
            #expect(f.get(f.path(location)).status == 404)
        }
    }

    /// A location GET reads a ticket the granting store has cached (only the link's row from the database) and one
    /// it has not (a second store on the same database: ticket, link and record in one statement) alike: the same
    /// file and recipient while the link is at the ticket's version, nil once it was updated or deactivated.
    @Test func cachedAndStoredTicketsAnswerAlike() throws {
        let f = try Fixture()
        let created = try f.create(VersionedLocationTests.longTerm(), files: VersionedLocationTests.contents(1))
        let other = DatabaseLinkStore(database: f.store.database)
        let locations = (try LinkServiceTests.json(f.post(created.id, #"{"recipient":"clinic"}"#))["files"]?
            .arrayValue ?? []).compactMap { $0["location"]?.stringValue }
        try #require(locations.count == 2)
        func redeem(_ store: DatabaseLinkStore, _ location: String) throws -> (String, String?)? {
            let secret = String(location.split(separator: "/").last ?? "")
            return try store.redeem(
                ticketHash: LinkID.hash(secret), manifestTicket: ManifestLocation.ticket(of: secret),
                now: f.clock.now
            ).map { ($0.file.jwe, $0.recipient) }
        }
        for location in locations {
            let cached = try #require(try redeem(f.store, location))
            let stored = try #require(try redeem(other, location))
            #expect(cached.0 == stored.0 && cached.1 == "clinic" && stored.1 == "clinic")
        }
        #expect(try redeem(f.store, locations[0])?.0 != redeem(f.store, locations[1])?.0, "each its own file")
        try f.publisher.update(link: created.link, contents: VersionedLocationTests.contents(2), now: f.clock.now)
        for store in [f.store, other, DatabaseLinkStore(database: f.store.database)] {
            #expect(try redeem(store, locations[0]) == nil, "a version-1 location after the update")
        }
        // Another recipient: a long-term link answers the same one 429 within its poll interval.
        let fresh = (try LinkServiceTests.json(f.post(created.id, #"{"recipient":"pharmacy"}"#))["files"]?
            .arrayValue ?? []).compactMap { $0["location"]?.stringValue }
        try #require(fresh.count == 2)
        #expect(try redeem(f.store, fresh[0])?.1 == "pharmacy" && redeem(other, fresh[1])?.1 == "pharmacy")
        #expect(try f.store.deactivate(linkID: created.id, now: f.clock.now))
        for store in [f.store, other] {
            #expect(try redeem(store, fresh[0]) == nil && redeem(store, fresh[1]) == nil, "after deactivation")
        }
    }
}
