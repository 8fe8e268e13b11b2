import Foundation
import Testing

import HealthCardsCore
@testable import HealthCardsServer

/// A manifest's locations are sealed (`SealedLocation`): no row is written for them, each opens its own file of
/// the version handed out, a changed byte or another key opens nothing, and every instance on one database opens
/// the others' (the key is a setting of the database). Single-use locations keep one row a file, and the stored
/// tickets of a server before schema 5 still open.
@Suite struct SealedLocationTests {
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

    static func locations(_ manifest: HTTPResponse) throws -> [String] {
        try LinkServiceTests.json(manifest)["files"]?.arrayValue?.compactMap { $0["location"]?.stringValue } ?? []
    }

    static func secret(_ location: String) -> String { String(location.split(separator: "/").last ?? "") }

    /// `text` with the character at `offset` replaced by another base64url character.
    static func changed(_ text: String, at offset: Int) -> String {
        var bytes = Array(text.utf8)
        bytes[offset] = bytes[offset] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func noRowForAManifestAndEachLocationOpensItsFileRecordedWithItsRecipient() throws {
        let f = try Fixture()
        let link = try f.create(files: Self.files(f))
        let stored = try #require(try f.store.link(id: link.id, withFiles: true))
        let manifest = f.post(link.id, #"{"recipient":"r"}"#)
        #expect(manifest.status == 200)
        let locations = try Self.locations(manifest)
        #expect(locations.count == 3)
        #expect(try Self.rows(f) == 0)
        for (position, location) in locations.enumerated() {
            #expect(Self.secret(location).utf8.count == 118, "1 + 12 + 16 + 43 + 16 bytes, base64url")
            let answer = f.get(f.path(location))
            #expect(answer.status == 200)
            #expect(answer.body == Array(stored.files[position].jwe.utf8), "location \(position)")
        }
        #expect(Set(locations).count == 3)
        // Any one character changed (IV, ciphertext or tag): nothing opens.
        let secret = Self.secret(locations[1])
        for offset in [0, 1, 15, 16, 40, 90, 115, 117] {
            let path = f.path(locations[1]).dropLast(secret.count) + Self.changed(secret, at: offset)
            #expect(f.get(String(path)).status == 404, "changed at \(offset)")
        }
        #expect(f.get(f.path(String(locations[1].dropLast(4)))).status == 404, "shortened")
        let again = f.post(link.id, #"{"recipient":"s"}"#)
        #expect(again.status == 200)
        #expect(try Self.rows(f) == 0)
        #expect(f.get(f.path(try Self.locations(again)[2])).status == 200)
        // Each GET's record holds its manifest's grant and is listed with its manifest's recipient.
        let records = try f.store.audit(linkID: link.id)
        let manifests = records.filter { $0.kind == "manifest" }
        let fetches = records.filter { $0.kind == "file" }
        #expect(fetches.map(\.recipient) == ["r", "r", "r", "s"])
        #expect(manifests.count == 2 && manifests[0].grant != manifests[1].grant)
        #expect(fetches.map(\.grant) == [manifests[0].grant, manifests[0].grant, manifests[0].grant, manifests[1].grant])
        #expect(manifests.map(\.detail) == ["3 file(s), 3 location(s)", "3 file(s), 3 location(s)"])
    }

    @Test func aLocationLivesItsLifetimeAndNoLonger() throws {
        let f = try Fixture { $0.locationLifetime = 600 }
        let link = try f.create()
        let location = try #require(try Self.locations(f.post(link.id, #"{"recipient":"r"}"#)).first)
        f.clock.advance(599)
        #expect(f.get(f.path(location)).status == 200)
        f.clock.advance(1)
        #expect(f.get(f.path(location)).status == 404)
    }

    /// The seal itself: what it holds comes back; another key, another hour byte, any other text, opens nothing
    /// (and nothing traps).
    @Test func sealOpensWithItsKeyOnly() throws {
        let key = try AES256Key.random()
        let location = SealedLocation(
            linkID: try LinkID.random(), version: 7, position: 0x1234, expiresAt: 1_800_003_600,
            grant: try SealedLocation.newGrant())
        let secret = try location.sealed(with: key, hour: 500_000)
        #expect(SealedLocation.hourByte(of: secret) == UInt8(500_000 & 0xFF))
        #expect(SealedLocation.open(secret, key: key) == location)
        #expect(SealedLocation.open(secret, key: try AES256Key.random()) == nil)
        var bytes = try #require(Base64URL.decode(secret))
        bytes[0] &+= 1
        #expect(SealedLocation.open(Base64URL.encode(bytes), key: key) == nil, "the hour byte is authenticated")
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0...200, using: &generator)
            let text = String(
                decoding: (0..<length).map { _ in alphabet.randomElement(using: &generator)! }, as: UTF8.self)
            #expect(SealedLocation.open(text, key: key) == nil)
        }
        #expect(SealedLocation.open(String(repeating: "é", count: 58), key: key) == nil)
    }

    /// Two services on one database (two instances): the first to need the key stores it, the other reads it, and
    /// each opens the other's locations; an update or a deactivation closes them for both at once.
    @Test func instancesShareTheKeyAndTheLinkStillDecides() throws {
        let f = try Fixture()
        let created = try f.create(VersionedLocationTests.longTerm(), files: VersionedLocationTests.contents(1))
        let other = Router(
            routes: LinkService(
                configuration: LinkService.Configuration(baseURL: try BaseURL(LinkServiceTests.base)),
                store: DatabaseLinkStore(database: f.store.database), clock: f.clock, log: MemoryLog()
            ).routes)
        func get(_ router: Router, _ location: String) -> Int {
            router.respond(HTTPRequest(method: "GET", path: f.path(location))).response.status
        }
        let first = try Self.locations(f.post(created.id, #"{"recipient":"clinic"}"#))
        let second = try Self.locations(
            other.respond(
                HTTPRequest(method: "POST", path: "/shl/\(created.id)", body: Array(#"{"recipient":"pharmacy"}"#.utf8))
            ).response)
        try #require(first.count == 2 && second.count == 2)
        let hour = LocationKeys.hour(f.clock.now)
        #expect(try f.store.setting(LocationKeys.name(hour)).flatMap(AES256Key.decode(base64url:)) != nil)
        #expect([get(other, first[0]), get(f.router, second[1]), get(f.router, first[1])] as [Int] == [200, 200, 200])
        try f.publisher.update(link: created.link, contents: VersionedLocationTests.contents(2), now: f.clock.now)
        #expect([get(f.router, first[0]), get(other, second[1])] as [Int] == [404, 404], "version-1 locations after the update")
        f.clock.advance(61)
        let fresh = try Self.locations(f.post(created.id, #"{"recipient":"clinic"}"#))
        #expect(get(other, fresh[0]) == 200)
        #expect(try f.store.deactivate(linkID: created.id, now: f.clock.now))
        #expect([get(f.router, fresh[0]), get(other, fresh[1])] as [Int] == [404, 404], "after deactivation")
    }

    /// A location opens with the key of the hour it was sealed in during that hour and the next, never later; the
    /// next hour's first seal deletes the keys before the last hour, so a copy of the database (a backup) stops
    /// making working locations within about two hours. A seal that claims to live longer than an hour (made by a
    /// key holder, not this server) does not open.
    @Test func keysTurnOverHourlyAndACopiedKeyStopsWorking() throws {
        let f = try Fixture()
        let link = try f.create()
        let stored = try #require(try f.store.link(id: link.id, withFiles: true))
        let start = LinkServiceTests.start
        f.clock.advance(LocationKeys.hourSeconds - start % LocationKeys.hourSeconds + 1800)  // half into an hour
        let firstHour = LocationKeys.hour(f.clock.now)
        let location = try #require(try Self.locations(f.post(link.id, #"{"recipient":"r"}"#)).first)
        let copied = try #require(try f.store.setting(LocationKeys.name(firstHour)).flatMap(AES256Key.decode(base64url:)))
        func minted(expiresIn seconds: Int64, hour: Int64) throws -> String {
            let secret = try SealedLocation(
                linkID: link.id, version: stored.version, position: 0, expiresAt: f.clock.now + seconds,
                grant: try SealedLocation.newGrant()
            ).sealed(with: copied, hour: hour)
            return "/shl/file/" + secret
        }
        #expect(f.get(try minted(expiresIn: 60, hour: firstHour)).status == 200, "a seal made with the hour's key")
        #expect(f.get(try minted(expiresIn: 3601, hour: firstHour)).status == 404, "a lifetime over an hour")
        f.clock.advance(LocationKeys.hourSeconds)  // the next hour: the location is still within its hour of life
        #expect(f.get(f.path(location)).status == 404, "expired: it lived 3600 s")
        f.clock.advance(-60)
        #expect(f.get(f.path(location)).status == 200, "sealed last hour, still alive")
        #expect(f.post(link.id, #"{"recipient":"s"}"#).status == 200)  // this hour's key made
        #expect(f.get(try minted(expiresIn: 60, hour: firstHour)).status == 200, "last hour's key still opens")
        f.clock.advance(LocationKeys.hourSeconds + 60)  // two hours after the copy
        #expect(f.post(link.id, #"{"recipient":"t"}"#).status == 200)  // this hour's key made, old ones deleted
        #expect(try f.store.setting(LocationKeys.name(firstHour)) == nil, "the copied hour's key is gone")
        #expect(f.get(try minted(expiresIn: 60, hour: firstHour)).status == 404, "a copied key two hours on")
        #expect(f.get(try minted(expiresIn: 60, hour: LocationKeys.hour(f.clock.now))).status == 404, "not this hour's")
    }

    /// A location naming this hour before any instance sealed one (a forged or garbled one) does not make another
    /// instance refuse the real locations sealed just after.
    @Test func aForgedLocationOfThisHourDoesNotShutOutTheNextRealOne() throws {
        let f = try Fixture()
        let link = try f.create()
        let other = Router(
            routes: LinkService(
                configuration: LinkService.Configuration(baseURL: try BaseURL(LinkServiceTests.base)),
                store: DatabaseLinkStore(database: f.store.database), clock: f.clock, log: MemoryLog()
            ).routes)
        let hour = LocationKeys.hour(f.clock.now)
        #expect(try f.store.setting(LocationKeys.name(hour)) == nil)
        let forged = Base64URL.encode([UInt8(truncatingIfNeeded: hour)] + [UInt8](repeating: 7, count: 86))
        #expect(other.respond(HTTPRequest(method: "GET", path: "/shl/file/" + forged)).response.status == 404)
        let location = try #require(try Self.locations(f.post(link.id, #"{"recipient":"r"}"#)).first)
        #expect(other.respond(HTTPRequest(method: "GET", path: f.path(location))).response.status == 200)
    }

    /// Locations only this server's manifests make open: none on a server of single-use locations (a sealed one
    /// would open more than once; its `/healthz` makes no key either), none of a `U` link (it has no manifest).
    @Test func sealedLocationsOpenOnlyWhereManifestsSealThem() throws {
        func minted(_ f: Fixture, _ link: LinkPublisher.Created) throws -> String {
            let (key, hour) = try LocationKeys().sealingKey(at: f.clock.now, f.store)
            let secret = try SealedLocation(
                linkID: link.id, version: 1, position: 0, expiresAt: f.clock.now + 60,
                grant: try SealedLocation.newGrant()
            ).sealed(with: key, hour: hour)
            return "/shl/file/" + secret
        }
        let once = try Fixture { $0.singleUseLocations = true }
        #expect(once.get("/healthz").status == 200)
        #expect(try once.store.setting(LocationKeys.name(LocationKeys.hour(once.clock.now))) == nil)
        #expect(once.get(try minted(once, try once.create())).status == 404)
        let f = try Fixture()
        var options = LinkPublisher.Options()
        options.direct = true
        let direct = try f.create(options)
        #expect(f.get(try minted(f, direct)).status == 404)
        #expect(f.get(try minted(f, try f.create())).status == 200, "the same minting for a manifest link")
    }

    /// A long-term link's manifest that fails on the location key (a 500) is not counted as the recipient's poll:
    /// asked again at once, it is served (not 429 for a poll interval).
    @Test func aFailedManifestIsNotCountedAsAPoll() throws {
        let f = try Fixture()
        let created = try f.create(VersionedLocationTests.longTerm(), files: VersionedLocationTests.contents(1))
        let name = LocationKeys.name(LocationKeys.hour(f.clock.now))
        _ = try f.store.settingOnce(name, "garbage")
        #expect(f.post(created.id, #"{"recipient":"EHR"}"#).status == 500)
        try f.store.deleteSettings(prefix: LocationKeys.namePrefix, except: [])
        #expect(f.post(created.id, #"{"recipient":"EHR"}"#).status == 200)
    }

    /// A sealed location of a link that no longer opens it is an access to that link: recorded with its outcome
    /// (the link's state, the location's own expiry, a newer version) and the manifest's grant, so listed with the
    /// manifest's recipient. The answer is the same 404 as for anything else; its log line carries the recorded
    /// outcome and the link's tag (it said `unknown`, with no tag), and a location that opens nothing says
    /// `unknown`.
    @Test func aClosedLinksLocationIsRecorded() throws {
        let f = try Fixture { $0.locationLifetime = 600 }
        let created = try f.create(VersionedLocationTests.longTerm(), files: VersionedLocationTests.contents(1))
        let manifest = f.post(created.id, #"{"recipient":"clinic"}"#)
        let tag = try #require(manifest.linkTag)
        let first = try Self.locations(manifest)
        f.clock.advance(600)
        var answers = [f.get(f.path(first[0]))]
        let second = try Self.locations(f.post(created.id, #"{"recipient":"pharmacy"}"#))
        try f.publisher.update(link: created.link, contents: VersionedLocationTests.contents(2), now: f.clock.now)
        answers.append(f.get(f.path(second[1])))
        f.clock.advance(61)
        let third = try Self.locations(f.post(created.id, #"{"recipient":"lab"}"#))
        #expect(try f.store.deactivate(linkID: created.id, now: f.clock.now))
        answers.append(f.get(f.path(third[0])))
        #expect(answers.map(\.status) == [404, 404, 404])
        #expect(answers.map(\.body) == Array(repeating: answers[0].body, count: 3), "one answer for all")
        #expect(answers.map(\.outcome) == ["location-expired", "superseded", "deactivated"])
        #expect(answers.map(\.linkTag) == [tag, tag, tag])
        let forged = f.get(String(f.path(third[0]).dropLast(4)) + "AAAA")
        #expect(forged.status == 404 && forged.outcome == "unknown" && forged.linkTag == nil)
        #expect(forged.body == answers[0].body)
        let fetches = try f.store.audit(linkID: created.id).filter { $0.kind == "file" }
        #expect(fetches.map(\.outcome) == ["location-expired", "superseded", "deactivated"])
        #expect(fetches.map(\.recipient) == ["clinic", "pharmacy", "lab"])
        #expect(fetches.allSatisfy { $0.status == 404 && $0.grant != nil })
    }

    /// A location key the database holds that is not one this program writes: `/healthz` fails (a load balancer
    /// takes the instance out) and manifests are 500, never a location sealed with something else.
    @Test func aDamagedKeyFailsTheHealthCheck() throws {
        let f = try Fixture()
        let link = try f.create()
        #expect(f.get("/healthz").status == 200)
        try f.store.database.withConnection { c in
            _ = try c.query(
                "UPDATE hc_settings SET value = 'garbage' WHERE name = ?",
                [.text(LocationKeys.name(LocationKeys.hour(f.clock.now)))])
        }
        let other = Router(
            routes: LinkService(
                configuration: LinkService.Configuration(baseURL: try BaseURL(LinkServiceTests.base)),
                store: f.store, clock: f.clock, log: MemoryLog()
            ).routes)
        let health = other.respond(HTTPRequest(method: "GET", path: "/healthz")).response
        #expect(health.status == 503)
        #expect(String(decoding: health.body, as: UTF8.self).contains("location key"))
        let manifest = other.respond(
            HTTPRequest(method: "POST", path: "/shl/\(link.id)", body: Array(#"{"recipient":"r"}"#.utf8))
        ).response
        #expect(manifest.status == 500)
    }

    @Test func singleUseLocationsKeepOneRowAFileAndAnswerOnce() throws {
        let f = try Fixture { $0.singleUseLocations = true }
        let link = try f.create(files: Self.files(f))
        let locations = try Self.locations(f.post(link.id, #"{"recipient":"r"}"#))
        #expect(try Self.rows(f) == 3)
        for location in locations {
            #expect(LinkID.isValid(Self.secret(location)))
            #expect(f.get(f.path(location)).status == 200)
            #expect(f.get(f.path(location)).status == 404)
        }
        #expect(try f.store.audit(linkID: link.id).filter { $0.kind == "file" }.map(\.recipient) == ["r", "r", "r"])
    }

    /// A manifest's one stored row (`ManifestLocation`, what servers before schema 5 wrote; still in a database
    /// upgraded within the hour) opens its files, through a store that cached the ticket when it granted it and
    /// one that reads it: the same file and recipient while the link is at the ticket's version, 404 after.
    @Test func storedTicketsOfEarlierServersStillOpen() throws {
        let f = try Fixture()
        let created = try f.create(VersionedLocationTests.longTerm(), files: VersionedLocationTests.contents(1))
        let other = DatabaseLinkStore(database: f.store.database)
        let shared = try ManifestLocation()
        let ticket = LocationTicket(
            hash: shared.hash, position: ManifestLocation.anyPosition, expiresAt: f.clock.now + 3600, singleUse: false,
            version: 1)
        let audit = AuditEntry(
            at: f.clock.now, linkID: created.id, kind: "manifest", recipient: "clinic", outcome: "served", status: 200)
        #expect(try f.store.grant(linkID: created.id, version: 1, tickets: [ticket], audit: audit, now: f.clock.now))
        #expect(try Self.rows(f) == 1)
        let secrets = [shared.secret(0), shared.secret(1)]
        func redeem(_ store: DatabaseLinkStore, _ secret: String) throws -> (String, String?)? {
            try store.redeem(
                ticketHash: LinkID.hash(secret), manifestTicket: ManifestLocation.ticket(of: secret),
                now: f.clock.now
            ).map { ($0.file.jwe, $0.recipient) }
        }
        for secret in secrets {
            let cached = try #require(try redeem(f.store, secret))
            let stored = try #require(try redeem(other, secret))
            #expect(cached.0 == stored.0 && cached.1 == "clinic" && stored.1 == "clinic")
            #expect(f.get("/shl/file/\(secret)").status == 200)
        }
        #expect(try redeem(f.store, secrets[0])?.0 != redeem(f.store, secrets[1])?.0, "each its own file")
        #expect(f.get("/shl/file/\(shared.secret(2))").status == 404, "no file at that position")
        try f.publisher.update(link: created.link, contents: VersionedLocationTests.contents(2), now: f.clock.now)
        for store in [f.store, other, DatabaseLinkStore(database: f.store.database)] {
            #expect(try redeem(store, secrets[0]) == nil, "a version-1 location after the update")
        }
        #expect(f.get("/shl/file/\(secrets[1])").status == 404)
    }
}
