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
}
