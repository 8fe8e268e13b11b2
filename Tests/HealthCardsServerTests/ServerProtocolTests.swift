import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// One happy path per database through the real program on 127.0.0.1 and the independent Python receiver, which
/// decrypts what it gets (the cards it decrypts are checked with `healthcards verify`): a manifest with two files,
/// a passcode link (its check deferred to the passcode pool and answered over the socket), a `U` link, and a
/// single-use location shared by two instances of one database; then the access record and the log file.
/// Every other rule of the protocol is asked in process, on an injected clock: `ServerInProcessProtocolTests`.
@Suite struct ServerProtocolTests {
    @Test(.enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing))
    func everyRuleWithSQLite() throws { try Self.everyRule(.sqlite) }

    @Test(
        .enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing),
        .enabled(if: PostgresCluster.available, PostgresCluster.missing))
    func everyRuleWithPostgreSQL() throws { try Self.everyRule(.postgresql) }

    static func everyRule(_ kind: DatabaseKind) throws {
        let dir = try TestSupport.tempDir("server-\(kind)")
        let db = try ServerTestSupport.database(kind, in: dir)
        let port = try ServerTestSupport.freePort()
        let base = "http://127.0.0.1:\(port)/shl"
        let fast = ServerTestSupport.fastKDF
        let card = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))
        let bundle = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.bundle))
        let multi = try ServerTestSupport.makeLink(
            "multi", db: db, base: base, in: dir, ["--label", "Vaccinations"],
            files: [ServerTestSupport.card, ServerTestSupport.bundle])
        let passcode = try ServerTestSupport.passcodeFile("correct horse", in: dir)
        let guarded = try ServerTestSupport.makeLink(
            "guarded", db: db, base: base, in: dir, ["--passcode-file", passcode, "--max-attempts", "3"] + fast)
        let direct = try ServerTestSupport.makeLink("direct", db: db, base: base, in: dir, ["--direct"])
        let v1 = try TestSupport.write(#"{"resourceType":"Basic","id":"version-1"}"#, to: "v1.json", in: dir)
        let long = try ServerTestSupport.makeLink("long", db: db, base: base, in: dir, ["--long-term"], files: [v1])
        // The link payloads say what the options asked for.
        #expect(try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: guarded.file))).flag == "P")
        #expect(try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: direct.file))).flag == "U")
        #expect(try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: long.file))).flag == "L")
        let multiLink = try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: multi.file)))
        #expect(multiLink.url == base + "/" + multi.id && multiLink.url.count <= 128)

        let server = try ServerProcess(db: db, port: port, base: base, in: dir)

        // Two files through locations, decrypted by the receiver to the card and the Bundle as given, in order.
        let resolved = try ServerTestSupport.client(["resolve", multi.file, dir.appendingPathComponent("multi").path])
        #expect(int(resolved["status"]) == 200)
        #expect(resolved["headers"]?["cache-control"] == "no-store")
        #expect(resolved["headers"]?["access-control-allow-origin"] == "*")
        #expect(resolved["headers"]?["content-type"] == "application/json")
        let entry = try #require(resolved["manifest"]?["files"]?[0])
        #expect(entry["contentType"] == "application/smart-health-card" && entry["embedded"] == nil)
        let location = try #require(entry["location"]?.stringValue)
        #expect(location.hasPrefix(base + "/file/") && location.dropFirst(base.count + 6).utf8.count == 118)
        #expect(resolved["manifest"]?["files"]?[1]?["fhirVersion"] == "4.0.1")
        #expect(resolved["files"]?[1]?["cty"] == "application/fhir+json")
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("multi/file-1")) == card)
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("multi/file-2")) == bundle)
        try ServerTestSupport.verifyCard(dir.appendingPathComponent("multi/file-1").path)
        // The location answers application/jose with CORS and no-store over the socket.
        let fetched = try ServerTestSupport.client(["get", location])
        #expect(int(fetched["status"]) == 200 && fetched["contentType"] == "application/jose")
        #expect(
            fetched["headers"]?["cache-control"] == "no-store"
                && fetched["headers"]?["access-control-allow-origin"] == "*")

        // Another instance on the same database, whose locations answer once: a location it gives answers once,
        // through either instance.
        let single = try ServerProcess(db: db, base: base, ["--single-use-locations"], in: dir, name: "single")
        let once = try ServerTestSupport.client(["post", single.url(multi.id), #"{"recipient":"once"}"#])
        let onceLocation = try #require(once["body"]?["files"]?[0]?["location"]?.stringValue)
        #expect(int(try ServerTestSupport.client(["get", onceLocation])["status"]) == 200)
        let other = "http://127.0.0.1:\(single.port)/shl/file/" + onceLocation.split(separator: "/").last!
        #expect(int(try ServerTestSupport.client(["get", other])["status"]) == 404)
        #expect(single.stop() == 0)

        // A passcode link: a wrong passcode costs one attempt, the right one opens (both checked on the pool's
        // threads and answered over the socket).
        let wrong = try ServerTestSupport.client([
            "post", server.url(guarded.id), #"{"recipient":"Dr. Who","passcode":"wrong"}"#,
        ])
        #expect(int(wrong["status"]) == 401 && int(wrong["body"]?["remainingAttempts"]) == 2)
        let opened = try ServerTestSupport.client([
            "resolve", guarded.file, dir.appendingPathComponent("guarded").path, "--passcode-file", passcode,
            "--recipient", "Dr. Who",
        ])
        #expect(int(opened["status"]) == 200)
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("guarded/file-1")) == card)

        // A U link: GET ?recipient= answers the one JWE.
        let viaGet = try ServerTestSupport.client(["resolve", direct.file, dir.appendingPathComponent("direct").path])
        #expect(int(viaGet["status"]) == 200 && viaGet["headers"]?["content-type"] == "application/jose")
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("direct/file-1")) == card)

        // A long-term link: Retry-After on the manifest; `link update` under the same key (seen by the next poll:
        // in process, `ServerInProcessProtocolTests`); updating a link that is not long-term, or with another
        // link's text, changes nothing.
        let poll = try ServerTestSupport.client([
            "resolve", long.file, dir.appendingPathComponent("long1").path, "--recipient", "Poller",
        ])
        #expect(int(poll["status"]) == 200 && poll["headers"]?["retry-after"] == "60")
        #expect(
            try VerifyFixtures.bytes(dir.appendingPathComponent("long1/file-1"))
                == Array(#"{"resourceType":"Basic","id":"version-1"}"#.utf8))
        let v2 = try TestSupport.write(#"{"resourceType":"Basic","id":"version-2"}"#, to: "v2.json", in: dir)
        try ServerTestSupport.link("update", db: db, base: base, ["--link", long.file, "--id", long.id, v2])
        try ServerTestSupport.link("update", db: db, base: base, ["--link", multi.file, v2], expect: 1)
        let foreign = try TestSupport.write(
            SHLink(url: base + "/" + long.id, key: try AES256Key.random().base64url, flag: "L").text, to: "foreign.txt",
            in: dir)
        let refused = try ServerTestSupport.link("update", db: db, base: base, ["--link", foreign, v1], expect: 1)
        #expect(refused.stderr.contains("does not open"), "\(refused.stderr)")

        #expect(server.stop() == 0)

        // The access record: every access with its recipient and outcome.
        let audit = try ServerTestSupport.link("audit", db: db, base: "", ["--json"]).stdout
        let entries = try audit.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        func outcomes(_ id: String) -> [String] {
            entries.filter { $0["link"]?.stringValue == id }.compactMap { $0["outcome"]?.stringValue }
        }
        // (The right passcode's manifest, then its location fetched: two "served".)
        #expect(outcomes(guarded.id) == ["wrong-passcode", "served", "served"], "\(outcomes(guarded.id))")
        #expect(entries.contains { $0["link"]?.stringValue == guarded.id && $0["recipient"] == "Dr. Who" })
        #expect(outcomes(direct.id) == ["served"], "\(outcomes(direct.id))")
        #expect(entries.contains { $0["kind"] == "file" && $0["link"]?.stringValue == multi.id })
        // The log: one JSON object a line; never a full link id, a key, a passcode, a recipient or a card.
        let lines = try server.logLines()
        #expect(lines.contains { $0["event"] == "start" } && lines.contains { $0["event"] == "stop" })
        #expect(lines.filter { $0["event"] == "request" }.count >= 8)
        let text = server.logText
        let allLogs = server.logText + single.logText
        for link in [multi, guarded, direct, long] {
            #expect(!allLogs.contains(link.id), "the log holds a full link id")
            let key = try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: link.file))).key
            #expect(!allLogs.contains(key), "the log holds a key")
        }
        for secret in [
            "correct horse", "Dr. Who", "Poller", "verifiableCredential",
            location.split(separator: "/").last.map(String.init) ?? "?",
        ] {
            #expect(!text.contains(secret), "the log holds \(secret)")
        }
    }
}
