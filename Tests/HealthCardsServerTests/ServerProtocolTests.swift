import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// Every rule of the links specification the server implements, against the real program on 127.0.0.1 with
/// each database, through the independent Python receiver, which decrypts what it gets; the cards it decrypts
/// are checked with `healthcards verify`.
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
        let now = Int64(Date().timeIntervalSince1970)
        let fast = ServerTestSupport.fastKDF
        let card = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))
        let bundle = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.bundle))
        // The expiring link first: it is checked at the end, once its exp has passed.
        let expiring = try ServerTestSupport.makeLink(
            "expiring", db: db, base: base, in: dir, ["--exp", String(now + 3)])
        let plain = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, ["--label", "Vaccinations"])
        let multi = try ServerTestSupport.makeLink(
            "multi", db: db, base: base, in: dir, [], files: [ServerTestSupport.card, ServerTestSupport.bundle])
        let passcode = try ServerTestSupport.passcodeFile("correct horse", in: dir)
        let guarded = try ServerTestSupport.makeLink(
            "guarded", db: db, base: base, in: dir, ["--passcode-file", passcode, "--max-attempts", "3"] + fast)
        let direct = try ServerTestSupport.makeLink("direct", db: db, base: base, in: dir, ["--direct"])
        let v1 = try TestSupport.write(#"{"resourceType":"Basic","id":"version-1"}"#, to: "v1.json", in: dir)
        let long = try ServerTestSupport.makeLink("long", db: db, base: base, in: dir, ["--long-term"], files: [v1])
        let closed = try ServerTestSupport.makeLink("closed", db: db, base: base, in: dir, [])
        try ServerTestSupport.link("deactivate", db: db, base: "", ["--id", closed.id])
        // The link payloads say what the options asked for.
        #expect(try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: guarded.file))).flag == "P")
        #expect(try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: direct.file))).flag == "U")
        #expect(try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: long.file))).flag == "L")
        let expiringLink = try SHLinkText.parse(VerifyFixtures.text(URL(fileURLWithPath: expiring.file)))
        #expect(
            expiringLink.exp == now + 3 && expiringLink.url == base + "/" + expiring.id && expiringLink.url.count <= 128
        )

        let server = try ServerProcess(db: db, port: port, base: base, ["--poll-interval", "2"], in: dir)

        // A plain link: the manifest through a location URL, decrypted by the receiver to the card as given.
        let resolved = try ServerTestSupport.client(["resolve", plain.file, dir.appendingPathComponent("plain").path])
        #expect(int(resolved["status"]) == 200)
        #expect(resolved["headers"]?["cache-control"] == "no-store")
        #expect(resolved["headers"]?["access-control-allow-origin"] == "*")
        #expect(resolved["headers"]?["content-type"] == "application/json")
        let entry = try #require(resolved["manifest"]?["files"]?[0])
        #expect(entry["contentType"] == "application/smart-health-card" && entry["embedded"] == nil)
        let location = try #require(entry["location"]?.stringValue)
        #expect(location.hasPrefix(base + "/file/") && LinkID.isValid(location.dropFirst(base.count + 6)))
        #expect(entry["lastUpdated"]?.stringValue?.hasSuffix("Z") == true && entry["fhirVersion"] == nil)
        #expect(resolved["files"]?[0]?["via"] == "location")
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("plain/file-1")) == card)
        try ServerTestSupport.verifyCard(dir.appendingPathComponent("plain/file-1").path)
        // The location answers application/jose with CORS and no-store, for as long as it lives.
        let fetched = try ServerTestSupport.client(["get", location])
        #expect(int(fetched["status"]) == 200 && fetched["contentType"] == "application/jose")
        #expect(
            fetched["headers"]?["cache-control"] == "no-store"
                && fetched["headers"]?["access-control-allow-origin"] == "*")

        // Another instance on the same database, whose locations answer once and live three seconds: a location it
        // gives answers once, through either instance, and a fresh one is gone after its three seconds.
        let single = try ServerProcess(
            db: db, base: base, ["--single-use-locations", "--location-lifetime", "3"], in: dir, name: "single")
        let once = try ServerTestSupport.client(["post", single.url(plain.id), #"{"recipient":"once"}"#])
        let onceLocation = try #require(once["body"]?["files"]?[0]?["location"]?.stringValue)
        #expect(int(try ServerTestSupport.client(["get", onceLocation])["status"]) == 200)
        #expect(int(try ServerTestSupport.client(["get", onceLocation])["status"]) == 404)
        let brief = try ServerTestSupport.client(["post", single.url(plain.id), #"{"recipient":"brief"}"#])
        let briefLocation = try #require(brief["body"]?["files"]?[0]?["location"]?.stringValue)
        Thread.sleep(forTimeInterval: 3.1)
        #expect(int(try ServerTestSupport.client(["get", briefLocation])["status"]) == 404)
        #expect(single.stop() == 0)
        // A browser's CORS preflight.
        let preflight = try ServerTestSupport.client(["call", "OPTIONS", server.url(plain.id)])
        #expect(int(preflight["status"]) == 204)
        #expect(preflight["headers"]?["access-control-allow-origin"] == "*")
        #expect(preflight["headers"]?["access-control-allow-methods"]?.stringValue?.contains("POST") == true)
        #expect(preflight["headers"]?["access-control-allow-headers"] == "Content-Type")

        // embeddedLengthMax: embedded when the JWE fits, a location when it does not.
        let jweLength = try #require(int(resolved["files"]?[0]?["jweLength"]))
        let fits = try ServerTestSupport.client([
            "resolve", plain.file, dir.appendingPathComponent("fits").path, "--embedded-max", String(jweLength),
        ])
        #expect(fits["files"]?[0]?["via"] == "embedded")
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("fits/file-1")) == card)
        let short = try ServerTestSupport.client([
            "resolve", plain.file, dir.appendingPathComponent("short").path, "--embedded-max", String(jweLength - 1),
        ])
        #expect(short["files"]?[0]?["via"] == "location")

        // Several files: a card and a FHIR Bundle (application/fhir+json, fhirVersion 4.0.1), in order.
        let both = try ServerTestSupport.client(["resolve", multi.file, dir.appendingPathComponent("multi").path])
        #expect(both["manifest"]?["files"]?.arrayValue?.count == 2)
        #expect(both["manifest"]?["files"]?[1]?["contentType"] == "application/fhir+json")
        #expect(both["manifest"]?["files"]?[1]?["fhirVersion"] == "4.0.1")
        #expect(both["files"]?[1]?["cty"] == "application/fhir+json")
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("multi/file-1")) == card)
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("multi/file-2")) == bundle)

        // Bad requests: 400 for a missing, non-string or empty recipient and for a body that is not an object.
        for body in [
            #"{}"#, #"{"recipient":5}"#, #"{"recipient":""}"#, #"["x"]"#, "not json",
            #"{"recipient":"a","passcode":1}"#,
        ] {
            let answer = try ServerTestSupport.client(["post", server.url(plain.id), body])
            #expect(int(answer["status"]) == 400, "\(body): \(answer)")
        }

        // 404 with one body for an unknown and a deactivated link (and below, an expired and a disabled one).
        let unknown = try ServerTestSupport.client([
            "post", server.url(String(repeating: "A", count: 43)), #"{"recipient":"someone"}"#,
        ])
        #expect(int(unknown["status"]) == 404)
        let notFoundBody = try #require(unknown["body"])
        let deactivated = try ServerTestSupport.client(["post", server.url(closed.id), #"{"recipient":"someone"}"#])
        #expect(int(deactivated["status"]) == 404 && deactivated["body"] == notFoundBody)

        // Passcodes: none given is 401 with the count and costs nothing; a wrong one costs one attempt; the right
        // one opens; at 0 the link is disabled for good and the right passcode gets the same 404.
        let noPasscode = try ServerTestSupport.client(["post", server.url(guarded.id), #"{"recipient":"Dr. Who"}"#])
        #expect(int(noPasscode["status"]) == 401 && int(noPasscode["body"]?["remainingAttempts"]) == 3)
        let wrong = #"{"recipient":"Dr. Who","passcode":"wrong"}"#
        let first = try ServerTestSupport.client(["post", server.url(guarded.id), wrong])
        #expect(int(first["status"]) == 401 && int(first["body"]?["remainingAttempts"]) == 2)
        let opened = try ServerTestSupport.client([
            "resolve", guarded.file, dir.appendingPathComponent("guarded").path, "--passcode-file", passcode,
        ])
        #expect(int(opened["status"]) == 200)
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("guarded/file-1")) == card)
        let second = try ServerTestSupport.client(["post", server.url(guarded.id), wrong])
        #expect(int(second["body"]?["remainingAttempts"]) == 1)
        let third = try ServerTestSupport.client(["post", server.url(guarded.id), wrong])
        #expect(int(third["status"]) == 401 && int(third["body"]?["remainingAttempts"]) == 0)
        let afterLimit = try ServerTestSupport.client([
            "resolve", guarded.file, dir.appendingPathComponent("guarded-after").path, "--passcode-file", passcode,
        ])
        #expect(int(afterLimit["status"]) == 404)
        let disabled = try ServerTestSupport.client([
            "post", server.url(guarded.id), #"{"recipient":"x","passcode":"correct horse"}"#,
        ])
        #expect(int(disabled["status"]) == 404 && disabled["body"] == notFoundBody)

        // A U link: GET ?recipient= answers the one JWE; no recipient is 400; a manifest request is 404.
        let viaGet = try ServerTestSupport.client(["resolve", direct.file, dir.appendingPathComponent("direct").path])
        #expect(int(viaGet["status"]) == 200 && viaGet["headers"]?["content-type"] == "application/jose")
        #expect(viaGet["headers"]?["cache-control"] == "no-store")
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("direct/file-1")) == card)
        let noRecipient = try ServerTestSupport.client(["get", server.url(direct.id)])
        #expect(int(noRecipient["status"]) == 400)
        let posted = try ServerTestSupport.client(["post", server.url(direct.id), #"{"recipient":"x"}"#])
        #expect(int(posted["status"]) == 404 && posted["body"] == notFoundBody)
        let manifestByGet = try ServerTestSupport.client(["get", server.url(plain.id) + "?recipient=x"])
        #expect(int(manifestByGet["status"]) == 404)

        // A long-term link: Retry-After on the manifest, 429 with Retry-After for the same recipient too soon, a
        // different recipient served; `link update` under the same key with a fresh IV, seen at the next poll.
        let poll1 = try ServerTestSupport.client([
            "resolve", long.file, dir.appendingPathComponent("long1").path, "--recipient", "Poller",
        ])
        #expect(int(poll1["status"]) == 200 && poll1["headers"]?["retry-after"] == "2")
        let tooSoon = try ServerTestSupport.client(["post", server.url(long.id), #"{"recipient":"Poller"}"#])
        #expect(int(tooSoon["status"]) == 429)
        #expect((1...2).contains(Int(tooSoon["retryAfter"]?.stringValue ?? "") ?? 0), "\(tooSoon)")
        let other = try ServerTestSupport.client(["post", server.url(long.id), #"{"recipient":"Someone else"}"#])
        #expect(int(other["status"]) == 200)
        let v2 = try TestSupport.write(#"{"resourceType":"Basic","id":"version-2"}"#, to: "v2.json", in: dir)
        try ServerTestSupport.link("update", db: db, base: base, ["--link", long.file, "--id", long.id, v2])
        Thread.sleep(forTimeInterval: 2.1)
        let poll2 = try ServerTestSupport.client([
            "resolve", long.file, dir.appendingPathComponent("long2").path, "--recipient", "Poller",
        ])
        #expect(int(poll2["status"]) == 200)
        #expect(
            try VerifyFixtures.bytes(dir.appendingPathComponent("long1/file-1"))
                == Array(#"{"resourceType":"Basic","id":"version-1"}"#.utf8))
        #expect(
            try VerifyFixtures.bytes(dir.appendingPathComponent("long2/file-1"))
                == Array(#"{"resourceType":"Basic","id":"version-2"}"#.utf8))
        #expect(poll1["files"]?[0]?["iv"] != poll2["files"]?[0]?["iv"], "an update takes a fresh IV")
        // Updating a link that is not long-term, or with another link's text, changes nothing.
        try ServerTestSupport.link("update", db: db, base: base, ["--link", plain.file, v2], expect: 1)
        let foreign = try TestSupport.write(
            SHLink(url: base + "/" + long.id, key: try AES256Key.random().base64url, flag: "L").text, to: "foreign.txt",
            in: dir)
        let refused = try ServerTestSupport.link("update", db: db, base: base, ["--link", foreign, v1], expect: 1)
        #expect(refused.stderr.contains("does not open"), "\(refused.stderr)")

        // The expired link: past its exp, the same 404.
        let wait = Double(now + 3) - Date().timeIntervalSince1970 + 0.2
        if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        let expired = try ServerTestSupport.client(["post", server.url(expiring.id), #"{"recipient":"late"}"#])
        #expect(int(expired["status"]) == 404 && expired["body"] == notFoundBody)

        #expect(server.stop() == 0)

        // The access record: every access with its recipient and outcome.
        let audit = try ServerTestSupport.link("audit", db: db, base: "", ["--json"]).stdout
        let entries = try audit.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        func outcomes(_ id: String) -> [String] {
            entries.filter { $0["link"]?.stringValue == id }.compactMap { $0["outcome"]?.stringValue }
        }
        // (The right passcode's manifest, then its location fetched: two "served".)
        #expect(
            outcomes(guarded.id) == [
                "no-passcode", "wrong-passcode", "served", "served", "wrong-passcode", "wrong-passcode", "disabled",
                "disabled",
            ], "\(outcomes(guarded.id))")
        #expect(entries.contains { $0["link"]?.stringValue == guarded.id && $0["recipient"] == "Dr. Who" })
        #expect(outcomes(long.id).contains("rate-limited"))
        #expect(outcomes(closed.id) == ["deactivated"] && outcomes(expiring.id) == ["expired"])
        #expect(outcomes(direct.id) == ["served", "no-recipient", "direct-link"], "\(outcomes(direct.id))")
        #expect(outcomes(plain.id).last == "manifest-link")
        #expect(entries.contains { $0["kind"] == "file" && $0["link"]?.stringValue == plain.id })
        // The log: one JSON object a line; never a full link id, a key, a passcode, a recipient or a card.
        let lines = try server.logLines()
        #expect(lines.contains { $0["event"] == "start" } && lines.contains { $0["event"] == "stop" })
        #expect(lines.filter { $0["event"] == "request" }.count >= 30)
        let text = server.logText
        let allLogs = server.logText + single.logText
        for link in [plain, multi, guarded, direct, long, closed, expiring] {
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
