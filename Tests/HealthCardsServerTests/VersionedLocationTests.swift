import Foundation
import Synchronization
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// A manifest hands out one version of a long-term link's files; a location names that version and opens no
/// other: after an update it answers 404, never a file of the new version beside the old one.
@Suite struct VersionedLocationTests {
    /// Two FHIR files whose content names the version and the file.
    static func contents(_ version: Int) -> [LinkContent] {
        (0..<2).map { n in
            LinkContent(
                contentType: LinkContent.fhirJSON, fhirVersion: LinkContent.fhirVersion,
                bytes: Array(#"{"resourceType":"Bundle","id":"v\#(version)-f\#(n)","type":"collection"}"#.utf8))
        }
    }

    static func longTerm() -> LinkPublisher.Options {
        var options = LinkPublisher.Options()
        options.longTerm = true
        return options
    }

    /// The version a decrypted file names ("v3-f1" → 3, file 1).
    static func version(_ plaintext: [UInt8]) -> (version: Int, file: Int)? {
        let text = String(decoding: plaintext, as: UTF8.self)
        guard let range = text.range(of: #""id":"v"#) else { return nil }
        let rest = text[range.upperBound...].prefix { $0 != "\"" }
        let parts = rest.split(separator: "-f")
        guard parts.count == 2, let v = Int(parts[0]), let f = Int(parts[1]) else { return nil }
        return (v, f)
    }

    @Test func aLocationOfAnEarlierVersionAnswers404() throws {
        let f = try LinkServiceTests.Fixture()
        let created = try f.create(Self.longTerm(), files: Self.contents(1))
        let key = try #require(AES256Key.decode(base64url: created.link.key))
        let first = try LinkServiceTests.json(f.post(created.id, #"{"recipient":"one"}"#))
        let old = (first["files"]?.arrayValue ?? []).compactMap { $0["location"]?.stringValue }
        #expect(old.count == 2)
        let before = f.get(f.path(old[0]))
        #expect(before.status == 200)
        try f.publisher.update(link: created.link, contents: Self.contents(2), now: f.clock.now)
        #expect(try f.store.link(id: created.id, withFiles: false)?.version == 2)
        #expect(f.get(f.path(old[0])).status == 404, "the version-1 location after the update")
        #expect(f.get(f.path(old[1])).status == 404)
        let second = try LinkServiceTests.json(f.post(created.id, #"{"recipient":"two"}"#))
        for (n, file) in (second["files"]?.arrayValue ?? []).enumerated() {
            let location = try #require(file["location"]?.stringValue)
            let jwe = String(decoding: f.get(f.path(location)).body, as: UTF8.self)
            let opened = try JWE(compact: jwe).decrypt(key: key)
            #expect(Self.version(opened.plaintext)?.version == 2 && Self.version(opened.plaintext)?.file == n)
        }
    }

    /// The store refuses a grant for a version that is no longer the link's (nothing written).
    @Test func aGrantForAnOutdatedVersionWritesNothing() throws {
        let f = try LinkServiceTests.Fixture()
        let created = try f.create(Self.longTerm(), files: Self.contents(1))
        try f.publisher.update(link: created.link, contents: Self.contents(2), now: f.clock.now)
        let ticket = LocationTicket(hash: "h", position: 0, expiresAt: f.clock.now + 60, singleUse: false, version: 1)
        let audit = AuditEntry(at: f.clock.now, linkID: created.id, kind: "manifest", recipient: "r", outcome: "served", status: 200)
        #expect(try f.store.grant(linkID: created.id, version: 1, tickets: [ticket], audit: audit, now: f.clock.now) == false)
        #expect(try f.store.audit(linkID: created.id).isEmpty)
        #expect(try f.store.grant(linkID: created.id, version: 2, tickets: [ticket], audit: audit, now: f.clock.now))
    }

    /// Over real sockets: 8 clients fetch manifests and every location of each while the link is updated 30 times,
    /// then twice more after the last update; every manifest's files decrypt to one version (or a location answers
    /// 404 once its version is replaced), never a mix, and the rounds after the last update see a whole version.
    @Test func concurrentUpdatesNeverMixVersions() throws {
        let s = try InProcessServer(http: { $0.threads = 6 })
        let created = try s.create(Self.longTerm(), files: Self.contents(1))
        let key = try #require(AES256Key.decode(base64url: created.link.key))
        let done = Locked(false)
        let results = Locked<
            (
                manifests: Int, whole: Int, mixed: [String], gone: Int, failures: [String], lastVersion: [[Int]],
                busy: Int
            )
        >((0, 0, [], 0, [], [], 0))
        let port = s.port
        let group = DispatchGroup()
        for client in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var n = 0
                // Rounds begun after the last update: with no update racing them, they must see one whole
                // version. Counting them (not rounds overall) keeps `whole > 0` true on a slow machine, where
                // an update can land inside every round made while updates run (CI under TSan saw 56 such).
                var quietRounds = 0
                while quietRounds < 2 || n < 5 {
                    let quiet = done.withLock { $0 }
                    if quiet { quietRounds += 1 }
                    n += 1
                    // Generous timeouts: the suite runs beside others, under sanitizers, on 2 shared cores.
                    let answer = RawHTTP.exchange(
                        RawHTTP.post("/shl/\(created.id)", #"{"recipient":"c\#(client)-\#(n)"}"#), port: port,
                        seconds: 30)
                    // A link updated under every one of the server's tries is answered 503 with Retry-After (its
                    // documented answer), never a mix; only while updates run.
                    if !quiet, answer?.status == 503, answer?.header("Retry-After") != nil {
                        results.withLock { $0.busy += 1 }
                        continue
                    }
                    guard let answer, answer.status == 200, let manifest = try? JSONParser.parse(answer.body) else {
                        results.withLock { $0.failures.append("manifest: \(answer.map { "status \($0.status)" } ?? "no answer")") }
                        continue
                    }
                    var versions: [Int] = []
                    var gone = false
                    for file in manifest["files"]?.arrayValue ?? [] {
                        guard let location = file["location"]?.stringValue else { continue }
                        let path = String(location.dropFirst("https://links.example.org".count))
                        guard
                            let got = RawHTTP.exchange(
                                "GET \(path) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: port,
                                seconds: 30)
                        else {
                            results.withLock { $0.failures.append("file") }
                            continue
                        }
                        if got.status == 404 {
                            gone = true
                            continue
                        }
                        guard got.status == 200,
                            let opened = try? JWE(compact: String(decoding: got.body, as: UTF8.self)).decrypt(key: key), let version = Self.version(opened.plaintext)
                        else {
                            results.withLock { $0.failures.append("status \(got.status)") }
                            continue
                        }
                        versions.append(version.version)
                    }
                    results.withLock {
                        $0.manifests += 1
                        if Set(versions).count > 1 { $0.mixed.append("\(versions)") }
                        if gone { $0.gone += 1 } else if versions.count == 2 { $0.whole += 1 }
                        if quiet { $0.lastVersion.append(versions) }
                    }
                }
            }
        }
        for version in 2...31 {
            try s.publisher.update(link: created.link, contents: Self.contents(version), now: s.clock.now)
            usleep(20_000)
        }
        done.withLock { $0 = true }
        group.wait()
        let final = results.withLock { $0 }
        #expect(final.mixed.isEmpty, "manifests with files of two versions: \(final.mixed)")
        #expect(final.failures.isEmpty, "\(final.failures.prefix(10))")
        #expect(
            final.manifests + final.busy >= 40 && final.whole > 0,
            "\(final.manifests) manifests (\(final.busy) more answered 503 during updates), \(final.whole) whole")
        // Every round after the last update: both files, both of version 31.
        #expect(final.lastVersion.count >= 16 && final.lastVersion.allSatisfy { $0 == [31, 31] }, "\(final.lastVersion)")
        #expect(try s.store.link(id: created.id, withFiles: false)?.version == 31)
    }
}
