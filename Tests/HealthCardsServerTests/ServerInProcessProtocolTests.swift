import Foundation
import HealthCardsCore
import HealthCardsServer
import Testing

/// The links protocol as the SMART Health Links specification states it (shl-digest: "Manifest request",
/// "`.files.location` links", "Polling manifest for changes", "Direct File Request (U flag)"), asked of the routes
/// `healthcards serve` serves (`ServerApplication`) in the test's process, on SQLite, with a clock moved by hand.
/// Every file a test receives is decrypted with the link's key and compared with what was stored.
@Suite struct ServerInProcessProtocolTests {
    typealias Served = ServedApplication

    /// A manifest POST answers every file in order: contentType, a location under the base URL (a fresh 43-character
    /// secret), lastUpdated as an instant, fhirVersion for FHIR JSON; each location answers `application/jose`, and
    /// the JWE opens with the link key to the bytes given.
    @Test func manifestListsEveryFileAndEachLocationDecryptsToWhatWasStored() throws {
        let s = try Served()
        let bundle = try Served.example("example-00-a-fhirBundle.json")
        let created = try s.create(files: [
            LinkContent(contentType: JWE.smartHealthCard, bytes: s.card),
            LinkContent(contentType: LinkContent.fhirJSON, fhirVersion: LinkContent.fhirVersion, bytes: bundle),
        ])
        #expect(created.link.url == Served.base + "/" + created.id && created.link.flag == nil)
        let answer = s.post(created.id, #"{"recipient":"Dr. Ada Lovelace"}"#)
        #expect(answer.status == 200 && answer.header("Content-Type") == "application/json")
        #expect(answer.header("Retry-After") == nil, "not a long-term link")
        let files = try #require(Served.json(answer)["files"]?.arrayValue)
        #expect(files.count == 2)
        #expect(files.map { $0["contentType"]?.stringValue } == [JWE.smartHealthCard, LinkContent.fhirJSON])
        #expect(files[0]["fhirVersion"] == nil && files[1]["fhirVersion"] == "4.0.1")
        let lastUpdated = Clock.iso8601(Served.start)
        for (file, expected) in zip(files, [s.card, bundle]) {
            #expect(file["embedded"] == nil && file["lastUpdated"]?.stringValue == lastUpdated)
            let location = try #require(file["location"]?.stringValue)
            #expect(location.hasPrefix(Served.base + "/file/") && location.count == Served.base.count + 6 + 118)
            let fetched = s.get(s.path(location))
            #expect(fetched.status == 200 && fetched.header("Content-Type") == "application/jose")
            #expect(fetched.header("Cache-Control") == "no-store" && fetched.header("Access-Control-Allow-Origin") == "*")
            let opened = try Served.open(Served.text(fetched), created.link)
            #expect(opened.plaintext == expected)
            #expect(opened.contentType == file["contentType"]?.stringValue)
        }
        #expect(Set(files.compactMap { $0["location"]?.stringValue }).count == 2, "a location per file")
        #expect(try s.outcomes(created.id) == ["served", "served", "served"])
        #expect(try s.store.audit(linkID: created.id).first?.recipient == "Dr. Ada Lovelace")
    }

    /// `embeddedLengthMax`: the JWE is embedded when its length fits, else a location is given; the embedded JWE
    /// opens to the card.
    @Test func embeddedLengthMaxEmbedsOnlyWhatFits() throws {
        let s = try Served()
        let created = try s.create()
        let stored = try #require(try s.store.link(id: created.id, withFiles: true)?.files.first?.jwe)
        let fits = try Served.json(s.post(created.id, #"{"recipient":"r","embeddedLengthMax":\#(stored.count)}"#))
        let embedded = try #require(fits["files"]?[0]?["embedded"]?.stringValue)
        #expect(fits["files"]?[0]?["location"] == nil && embedded == stored)
        #expect(try Served.open(embedded, created.link).plaintext == s.card)
        let short = try Served.json(s.post(created.id, #"{"recipient":"r","embeddedLengthMax":\#(stored.count - 1)}"#))
        #expect(short["files"]?[0]?["embedded"] == nil && short["files"]?[0]?["location"]?.stringValue != nil)
    }

    /// 400 for a body that is not an object, a recipient missing, not a string or empty, and a passcode or
    /// embeddedLengthMax of the wrong type; nothing of it is recorded as served.
    @Test func malformedManifestRequestsAre400() throws {
        let s = try Served()
        let created = try s.create()
        for body in [
            "{}", #"{"recipient":5}"#, #"{"recipient":""}"#, #"["x"]"#, "not json", #"{"recipient":"a","passcode":1}"#,
            #"{"recipient":"a","embeddedLengthMax":"9"}"#, #"{"recipient":"a","embeddedLengthMax":-1}"#, "",
        ] {
            let answer = s.post(created.id, body)
            #expect(answer.status == 400, "\(body)")
            #expect((try? Served.json(answer))?["error"]?.stringValue?.isEmpty == false, "\(body): says what is wrong")
        }
        #expect(try !s.outcomes(created.id).contains("served"))
        // The message says what the parser found: a repeated member is named as one (it used to read "not a JSON
        // object", which the body is), and a long member name is cut short, not echoed whole.
        let repeated = try Served.json(s.post(created.id, #"{"recipient":"a","recipient":"b"}"#))["error"]?.stringValue
        #expect(repeated?.contains(#"duplicate member name "recipient""#) == true, "\(repeated ?? "")")
        let long = String(repeating: "k", count: 5000)
        let longAnswer = try Served.json(s.post(created.id, #"{"\#(long)":1,"\#(long)":2}"#))["error"]?.stringValue
        #expect(longAnswer.map { $0.contains("duplicate member name") && $0.count < 300 } == true, "\(longAnswer?.count ?? 0)")
        for control in [#"a\u0000b"#, #"a\u001b[31mb"#, #"a\nb"#, #"a\u0085b"#] {
            let answer = s.post(created.id, #"{"recipient":"\#(control)"}"#)
            let error = try Served.json(answer)["error"]?.stringValue
            #expect(answer.status == 400 && error?.contains("holds the control character U+00") == true, "\(control): \(error ?? "")")
        }
        let array = try Served.json(s.post(created.id, #"["x"]"#))["error"]?.stringValue
        #expect(array?.contains("JSON but not an object") == true, "\(array ?? "")")
    }

    /// A `P` link: no passcode is 401 with the attempts left and costs none; each wrong one costs one; the right one
    /// opens the files; at 0 the link is disabled for good and the right passcode gets the one 404 body.
    @Test func passcodesAreCountedAndTheLinkClosesAtZero() throws {
        let s = try Served()
        let created = try s.create(Served.passcode("correct horse", attempts: 3))
        #expect(created.link.flag == "P")
        func ask(_ passcode: String?) -> HTTPResponse {
            s.post(created.id, passcode.map { #"{"recipient":"Dr. Who","passcode":"\#($0)"}"# } ?? #"{"recipient":"Dr. Who"}"#)
        }
        func remaining(_ answer: HTTPResponse) -> Int? { (try? Served.json(answer))?["remainingAttempts"]?.numberLexeme.flatMap { Int($0) } }
        let none = ask(nil)
        #expect(none.status == 401 && remaining(none) == 3)
        let first = ask("wrong")
        #expect(first.status == 401 && remaining(first) == 2)
        let opened = ask("correct horse")
        #expect(opened.status == 200)
        let location = try #require(try Served.json(opened)["files"]?[0]?["location"]?.stringValue)
        #expect(try Served.open(Served.text(s.get(s.path(location))), created.link).plaintext == s.card)
        #expect(remaining(ask("wrong")) == 1, "the right passcode gave no attempt back and took none")
        let last = ask("wrong")
        #expect(last.status == 401 && remaining(last) == 0)
        let closed = ask("correct horse")
        #expect(try closed.status == 404 && (Served.json(closed)) == LinkService.notFoundBody)
        #expect(try s.store.link(id: created.id, withFiles: false)?.remainingAttempts == 0)
        #expect(
            try s.outcomes(created.id) == [
                "no-passcode", "wrong-passcode", "served", "served", "wrong-passcode", "wrong-passcode", "disabled",
            ])
    }

    /// Unknown, deactivated and expired links (exp passed on the injected clock, to the second) get the same 404 body;
    /// a deactivated link's live locations end with it.
    @Test func unknownDeactivatedAndExpiredLinksGetOne404() throws {
        let s = try Served()
        var expiring = LinkPublisher.Options()
        expiring.exp = Served.start + 30
        let soon = try s.create(expiring)
        let closed = try s.create()
        let location = try #require(
            try Served.json(s.post(closed.id, #"{"recipient":"r"}"#))["files"]?[0]?["location"]?.stringValue)
        #expect(try s.store.deactivate(linkID: closed.id, now: s.clock.now))
        #expect(s.get(s.path(location)).status == 404)
        s.clock.advance(29)
        #expect(s.post(soon.id, #"{"recipient":"r"}"#).status == 200, "a second before exp")
        s.clock.advance(1)
        let answers = [
            s.post(String(repeating: "Q", count: 43), #"{"recipient":"r"}"#), s.post(closed.id, #"{"recipient":"r"}"#),
            s.post(soon.id, #"{"recipient":"r"}"#),
        ]
        #expect(answers.map(\.status) == [404, 404, 404])
        for answer in answers { #expect(try Served.json(answer) == LinkService.notFoundBody) }
        let soonOutcomes = try s.outcomes(soon.id), closedOutcomes = try s.outcomes(closed.id)
        #expect(soonOutcomes == ["served", "expired"])
        // The manifest, its location's GET after the deactivation (a sealed location names its link: recorded), the
        // manifest asked again.
        #expect(closedOutcomes == ["served", "deactivated", "deactivated"])
        #expect(try s.store.audit(linkID: closed.id).map(\.kind) == ["manifest", "file", "manifest"])
    }

    /// A `U` link: `GET ?recipient=` answers its one JWE (which opens to the card); no recipient is 400; a manifest
    /// POST is 404; a manifest link asked by GET is 404.
    @Test func directLinksAnswerTheirFileToARecipient() throws {
        let s = try Served()
        var options = LinkPublisher.Options()
        options.direct = true
        let direct = try s.create(options)
        #expect(direct.link.flag == "U")
        let answer = s.get("/shl/\(direct.id)", query: ["recipient": "A clinic"])
        #expect(answer.status == 200 && answer.header("Content-Type") == "application/jose")
        #expect(answer.header("Cache-Control") == "no-store")
        let opened = try Served.open(Served.text(answer), direct.link)
        #expect(opened.plaintext == s.card && opened.contentType == JWE.smartHealthCard)
        #expect(s.get("/shl/\(direct.id)").status == 400)
        // A recipient with a control character is refused, and an empty one says so.
        let escape = s.get("/shl/\(direct.id)", query: ["recipient": "a\u{1B}[31m"])
        #expect(escape.status == 400 && (try? Served.json(escape))?["error"]?.stringValue?.contains("U+001B") == true)
        let empty = s.get("/shl/\(direct.id)", query: ["recipient": ""])
        #expect(empty.status == 400 && (try? Served.json(empty))?["error"]?.stringValue?.contains("is empty") == true)
        #expect(s.post(direct.id, #"{"recipient":"x"}"#).status == 404)
        let plain = try s.create()
        #expect(s.get("/shl/\(plain.id)", query: ["recipient": "x"]).status == 404)
        #expect(try s.outcomes(direct.id) == ["served", "no-recipient", "bad-request", "no-recipient", "direct-link"])
        #expect(try s.outcomes(plain.id) == ["manifest-link"])
    }

    /// An `L` link: the manifest carries `Retry-After`; the same recipient asking sooner is 429 with the seconds
    /// left; another recipient is served; an update (same key, fresh IV) is what the next poll opens; a location of
    /// the earlier version answers 404 once the new one is stored.
    @Test func longTermLinksPollUpdatesAndVersionedLocations() throws {
        let s = try Served { $0.pollInterval = 60 }
        var options = LinkPublisher.Options()
        options.longTerm = true
        let v1 = Array(#"{"resourceType":"Basic","id":"version-1"}"#.utf8)
        let v2 = Array(#"{"resourceType":"Basic","id":"version-2"}"#.utf8)
        let created = try s.create(options, files: [LinkContent(contentType: LinkContent.fhirJSON, bytes: v1)])
        #expect(created.link.flag == "L")
        let first = s.post(created.id, #"{"recipient":"Poller"}"#)
        #expect(first.status == 200 && first.header("Retry-After") == "60")
        let oldLocation = try #require(try Served.json(first)["files"]?[0]?["location"]?.stringValue)
        let before = try Served.open(Served.text(s.get(s.path(oldLocation))), created.link)
        #expect(before.plaintext == v1)
        s.clock.advance(10)
        let soon = s.post(created.id, #"{"recipient":"Poller"}"#)
        #expect(soon.status == 429 && soon.header("Retry-After") == "50")
        #expect(s.post(created.id, #"{"recipient":"Someone else"}"#).status == 200)

        _ = try s.publisher.update(
            link: created.link, contents: [LinkContent(contentType: LinkContent.fhirJSON, bytes: v2)], now: s.clock.now)
        #expect(s.get(s.path(oldLocation)).status == 404, "a location of version 1 after the update")
        s.clock.advance(50)
        let next = try Served.json(s.post(created.id, #"{"recipient":"Poller"}"#))
        #expect(next["files"]?[0]?["lastUpdated"]?.stringValue == Clock.iso8601(Served.start + 10))
        let location = try #require(next["files"]?[0]?["location"]?.stringValue)
        let after = try Served.open(Served.text(s.get(s.path(location))), created.link)
        #expect(after.plaintext == v2 && after.iv != before.iv, "the same key, a fresh IV")
        #expect(try s.outcomes(created.id).contains("rate-limited"))
    }

    /// A location lives its configured lifetime to the second (moved on the injected clock); a single-use one
    /// answers once.
    @Test func locationsExpireOnTheInjectedClockAndSingleUseOnesAnswerOnce() throws {
        let s = try Served { $0.locationLifetime = 3 }
        let created = try s.create()
        let location = try #require(
            try Served.json(s.post(created.id, #"{"recipient":"r"}"#))["files"]?[0]?["location"]?.stringValue)
        s.clock.advance(2)
        #expect(s.get(s.path(location)).status == 200)
        #expect(s.get(s.path(location)).status == 200, "reusable while it lives")
        s.clock.advance(1)
        let gone = s.get(s.path(location))
        #expect(gone.status == 404 && Served.text(gone).contains("expired"))

        let once = try Served { $0.singleUseLocations = true }
        let other = try once.create()
        let single = try #require(
            try Served.json(once.post(other.id, #"{"recipient":"r"}"#))["files"]?[0]?["location"]?.stringValue)
        let fetched = once.get(once.path(single))
        #expect(try fetched.status == 200 && (Served.open(Served.text(fetched), other.link).plaintext) == once.card)
        #expect(once.get(once.path(single)).status == 404)
    }

    /// 404 for a path no route serves (whatever it tries: a parent folder, the database's name), 405 with `Allow`
    /// for a method the path does not take, a CORS preflight for OPTIONS; every answer carries the common headers.
    @Test func unmatchedRoutesMethodsAndPreflights() throws {
        let s = try Served()
        let created = try s.create()
        for path in [
            "/nothing/here", "/shl", "/shl/", "/shl/../../etc/passwd", "/links.db", "/shl/file/" + created.id + "/..",
            "/shl/" + String(repeating: "A", count: 42), "/shl/file/short", "relative",
        ] {
            let answer = s.get(path)
            #expect(answer.status == 404, "\(path)")
            #expect(!Served.text(answer).contains("root:"))
        }
        let put = s.respond("PUT", "/shl/\(created.id)", body: "x")
        #expect(put.status == 405 && put.header("Allow") == "POST, GET, HEAD, OPTIONS")
        #expect(s.respond("DELETE", "/healthz").header("Allow") == "GET, HEAD, OPTIONS")
        let preflight = s.respond("OPTIONS", "/shl/\(created.id)")
        #expect(preflight.status == 204 && preflight.header("Access-Control-Allow-Methods") == "POST, GET, OPTIONS")
        #expect(preflight.header("Access-Control-Allow-Headers") == "Content-Type")
        #expect(preflight.header("Access-Control-Max-Age") == "600")
        for answer in [s.get("/nothing"), put, preflight, s.get("/healthz")] {
            #expect(answer.header("Cache-Control") == "no-store")
            #expect(answer.header("Access-Control-Allow-Origin") == "*")
            #expect(answer.header("Access-Control-Expose-Headers") == "Retry-After")
            #expect(answer.header("X-Content-Type-Options") == "nosniff")
            #expect(answer.header("Referrer-Policy") == "no-referrer")
        }
        #expect(try s.outcomes(created.id).isEmpty, "no handler ran")
        let health = s.get("/healthz")
        #expect(try health.status == 200 && (Served.json(health))["status"] == "ok")
    }

    /// HEAD is answered by the GET's handler wherever GET is served (the front sends its headers, no body): the same
    /// status and headers as GET.
    @Test func headIsAnsweredWhereGetIs() throws {
        let s = try Served()
        let created = try s.create()
        let location = try #require(
            try Served.json(s.post(created.id, #"{"recipient":"r"}"#))["files"]?[0]?["location"]?.stringValue)
        let get = s.get(s.path(location))
        let head = s.respond("HEAD", s.path(location))
        #expect(head.status == 200 && head.header("Content-Type") == "application/jose")
        #expect(head.header("Content-Type") == get.header("Content-Type") && head.header("Cache-Control") == "no-store")
        #expect(s.respond("HEAD", "/healthz").status == 200)
        #expect(s.respond("HEAD", "/nothing").status == 404)
        #expect(s.respond("HEAD", "/shl/\(created.id)").status == 404, "HEAD of a manifest link is its GET: not U")
    }

    /// A recipient is at most 256 bytes of UTF-8 (bytes, not characters), on a manifest and on a `U` link; longer is
    /// 400 before anything is recorded.
    @Test func recipientIsAtMost256Bytes() throws {
        let s = try Served()
        let created = try s.create()
        for (recipient, status) in [
            (String(repeating: "a", count: 256), 200), (String(repeating: "a", count: 257), 400),
            (String(repeating: "病", count: 85), 200), (String(repeating: "病", count: 86), 400),
        ] {
            let answer = s.post(created.id, #"{"recipient":"\#(recipient)"}"#)
            #expect(answer.status == status, "\(recipient.utf8.count) bytes")
            if status == 400 { #expect(Served.text(answer).contains("at most 256")) }
        }
        #expect(try s.outcomes(created.id) == ["served", "served"])
        var options = LinkPublisher.Options()
        options.direct = true
        let direct = try s.create(options)
        #expect(s.get("/shl/\(direct.id)", query: ["recipient": String(repeating: "b", count: 257)]).status == 400)
        #expect(try s.outcomes(direct.id).isEmpty)
    }

    /// The request budget per client address: past it, 429 with `Retry-After` (the seconds until one request is
    /// back), nothing recorded; another address is not held back; once the clock has moved on, served again.
    @Test func requestBudgetIs429PerAddress() throws {
        let s = try Served { $0.requestBudgetPerMinute = 3 }
        let created = try s.create()
        for _ in 0..<3 { #expect(s.post(created.id, #"{"recipient":"r"}"#).status == 200) }
        let over = s.post(created.id, #"{"recipient":"r"}"#)
        #expect(over.status == 429 && over.header("Retry-After") == "20")
        #expect(s.get("/shl/file/" + String(repeating: "B", count: 43)).status == 429, "locations count too")
        #expect(s.post(created.id, #"{"recipient":"r"}"#, peer: "198.51.100.7").status == 200)
        #expect(s.get("/healthz").status == 200, "the health check is not a link request")
        s.clock.advance(19)
        #expect(s.post(created.id, #"{"recipient":"r"}"#).status == 429)
        s.clock.advance(1)
        #expect(s.post(created.id, #"{"recipient":"r"}"#).status == 200)
        #expect(try s.outcomes(created.id) == ["served", "served", "served", "served", "served"])
    }

    /// A body over the route's limit is 413 from the router itself (for callers without a front), before any handler.
    @Test func bodiesOverTheLimitAre413() throws {
        let s = try Served()
        let created = try s.create()
        let head = #"{"recipient":"x","pad":""#
        let padded = head + String(repeating: "y", count: 16 * 1024 - head.utf8.count - 2) + #""}"#
        #expect(padded.utf8.count == 16 * 1024)
        #expect(s.post(created.id, padded).status == 200, "exactly at the limit; unknown members are ignored")
        let over = s.post(created.id, padded + " ")
        #expect(over.status == 413 && over.header("Cache-Control") == "no-store")
        #expect(String(decoding: over.body, as: UTF8.self).contains("over 16384 bytes"))
        #expect(try s.outcomes(created.id) == ["served"])
        // A route that takes no body says so (it said "over 0 bytes").
        let get = s.respond("GET", "/healthz", body: "{")
        #expect(get.status == 413 && String(decoding: get.body, as: UTF8.self).contains("takes no body"))
    }
}
