import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures
import HealthCardsTestSupport

/// `healthcards shl audit`: access-log lines (nginx combined, Apache common/combined) parsed to known answers,
/// hostile lines, and a real nginx on 127.0.0.1 whose own log, written while an independent Python receiver
/// fetched each link with `?recipient=`, is read back.
@Suite struct SHLAuditTests {
    /// Apache's documentation example of the common format, and nginx combined lines with its `\xHH` escapes.
    @Test func parsesCommonAndCombinedLines() throws {
        let apache = try #require(
            AccessLogLine.parse(Array(#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#.utf8)))
        // 2000-10-10 20:55:36 UTC.
        #expect(apache.time == 971_211_336 && apache.method == "GET" && apache.path == "/apache_pb.gif")
        #expect(apache.status == 200 && apache.bytes == 2326 && apache.query == nil)
        let nginx = try #require(
            AccessLogLine.parse(
                Array(
                    #"::1 - - [29/Feb/2024:23:59:59 +0100] "GET /shl/abc?recipient=Dr%20Who+of%2BClinic&x=1 HTTP/1.1" 404 153 "-" "curl/8.5 \"q\"""#
                        .utf8)))
        #expect(nginx.time == 1_709_247_599 && nginx.status == 404 && nginx.bytes == 153 && nginx.path == "/shl/abc")
        #expect(nginx.parameter("recipient") == "Dr Who of+Clinic" && nginx.parameter("x") == "1" && nginx.parameter("y") == nil)
        // nginx writes bytes over 0x7F and quotes as \xHH; Apache writes \" for a quote.
        let escaped = try #require(
            AccessLogLine.parse(Array(#"1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] "HEAD /shl/a?recipient=caf\xC3\xA9\x22 \"x HTTP/1.1" 200 -"#.utf8)))
        #expect(escaped.method == "HEAD" && escaped.bytes == 0)
        #expect(escaped.parameter("recipient") == "café\"")
        // The user field comes from the client (Authorization: Basic) and may hold '[' or ']': the access still counts.
        let user = try #require(
            AccessLogLine.parse(Array(#"1.2.3.4 - [x]y [01/Jan/2026:00:00:00 +0000] "GET /shl/a?recipient=r HTTP/1.1" 200 5"#.utf8)))
        #expect(user.time == 1_767_225_600 && user.path == "/shl/a" && user.parameter("recipient") == "r")
        #expect(AccessLogLine.formDecode("%zz%4") == "%zz%4" && AccessLogLine.formDecode("a%2Bb+c%20d") == "a+b c d")
        #expect(AccessLogLine.formDecode("%FF") == "\u{FFFD}")
        for bad in [
            "", "garbage", #"h - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 2000 1"#,
            #"h - - [31/Feb/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1"#, #"h - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0 200 1"#,
            #"h - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 99999999999999999999"#,
            #"h - - [10/Foo/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 1"#,
        ] {
            #expect(AccessLogLine.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    /// Random bytes and mutations of a good line never trap, and a line over the limit is counted, not read.
    @Test func hostileLinesNeverTrap() throws {
        let good = Array(#"127.0.0.1 - - [01/Dec/2026:14:50:00 +0000] "GET /shl/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA?recipient=%41 HTTP/1.1" 200 10 "-" "x""#.utf8)
        var audit = SHLAudit(issuer: "https://clinic.example.org")
        audit.add(line: good)
        #expect(audit.links.first?.accesses.first?.recipient == "A")
        var state: UInt64 = 0x243F_6A88_85A3_08D3
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33)
        }
        for round in 0..<3000 {
            var line = good
            if round % 3 == 0 {
                line = (0..<(next() % 300)).map { _ in UInt8(truncatingIfNeeded: next()) }
            } else {
                for _ in 0..<(1 + next() % 6) {
                    let at = next() % line.count
                    switch next() % 3 {
                    case 0: line[at] = UInt8(truncatingIfNeeded: next())
                    case 1: line.remove(at: at)
                    default: line.insert([0x22, 0x5C, 0x5B, 0x5D, 0x25, 0x20][next() % 6], at: at)
                    }
                }
            }
            audit.add(line: line)
        }
        #expect(audit.lines == 3001)
        let long = String(repeating: "x", count: AccessLogLine.maxLineBytes + 10)
        #expect(AccessLogLine.parse(Array(long.utf8)) == nil)
    }

    /// A gzip bomb (8 MiB of zeros in a few kB) stops at the inflate budget with an error; a line too long to be
    /// one is counted and skipped, and the lines around it are read.
    @Test func gzipBombAndLongLines() throws {
        let dir = try TestSupport.tempDir("shl-audit-bomb")
        let bomb = dir.appendingPathComponent("bomb.gz").path
        #expect(try TestSupport.run("/bin/sh", ["-c", "head -c 8388608 /dev/zero | gzip -9 > '\(bomb)'"]).status == 0)
        var audit = SHLAudit(issuer: "https://clinic.example.org")
        #expect(throws: HealthCardError.self) { _ = try audit.read(file: bomb, minInflateBudget: 1 << 20) }
        let good = #"127.0.0.1 - - [01/Dec/2026:14:50:00 +0000] "GET /shl/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA?recipient=x HTTP/1.1" 200 10"#
        let log = try TestSupport.write(
            good + "\n" + String(repeating: "y", count: 200_000) + "\n" + good + "\r\n" + good, to: "long.log", in: dir)
        var reader = SHLAudit(issuer: "https://clinic.example.org")
        #expect(try reader.read(file: log) == nil)
        #expect(reader.lines == 4 && reader.unreadable == 1 && reader.links.first?.accesses.count == 3)
    }

    /// A log made by gzip(1) in two members and padded with zero bytes after the last (as some copy tools and
    /// log rotators leave it; `gzip -t` accepts it): every line of both members is read (as many as `gzip -dc`
    /// gives), the padding (over a 64 KiB read chunk) is skipped with no warning, and the audit exits 0 (it
    /// aborted). Any other byte after the padding or after a member is an error naming the file and byte offset.
    @Test func gzipLogWithZeroPaddingIsRead() throws {
        let dir = try TestSupport.tempDir("shl-audit-padding")
        let (site, _, _) = try SHLTestSupport.site(in: dir)
        let line = #"127.0.0.1 - - [01/Dec/2026:14:50:00 +0000] "GET /shl/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA?recipient=x HTTP/1.1" 200 10"#
        let a = try TestSupport.write(line + "\n" + line + "\n", to: "a.log", in: dir)
        let b = try TestSupport.write(line + "\n", to: "b.log", in: dir)
        let both = dir.appendingPathComponent("both.gz")
        let members = try TestSupport.run("/bin/sh", ["-c", "gzip -c '\(a)' > '\(both.path)' && gzip -c '\(b)' >> '\(both.path)'"])
        #expect(members.status == 0)
        let gz = try VerifyFixtures.bytes(both)
        #expect(gz.count > 40 && gz.starts(with: [0x1F, 0x8B]))
        func file(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        let padded = try file("padded.log.gz", gz + [UInt8](repeating: 0, count: 70_000))
        #expect(try TestSupport.run("/bin/sh", ["-c", "gzip -t '\(padded)' 2>/dev/null; [ $? -ne 1 ]"]).status == 0)
        let count = try TestSupport.run("/bin/sh", ["-c", "gzip -dc '\(padded)' 2>/dev/null | wc -l"])
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3")
        let audit = try TestSupport.cli(["shl", "audit", "--site", site, "--json", "--log", padded])
        #expect(audit.status == 0, "\(audit.stderr)")
        #expect(audit.stdout.split(separator: "\n").count == 3, "\(audit.stdout)")
        #expect(!audit.stderr.contains("warning"), "\(audit.stderr)")

        let afterPadding = try file("junk.log.gz", gz + [0, 0, 0, 0x51])
        let junk = try TestSupport.cli(["shl", "audit", "--site", site, "--log", afterPadding])
        #expect(junk.status == 2)
        #expect(junk.stderr.contains("\(afterPadding): byte 0x51 at byte offset \(gz.count + 3) follows the 3 zero bytes"), "\(junk.stderr)")
        let afterMember = try file("appended.log.gz", gz + Array("Q\n".utf8))
        let appended = try TestSupport.cli(["shl", "audit", "--site", site, "--log", afterMember])
        #expect(appended.status == 2)
        #expect(appended.stderr.contains("\(afterMember): byte 0x51 at byte offset \(gz.count), after the end of a gzip member"), "\(appended.stderr)")
    }

    /// An independent receiver (Python urllib, pyca/cryptography, fhir.resources): fetches the link's URL from
    /// the local nginx with `?recipient=`, decrypts the JWE with the link's key and parses the Bundle.
    static let receiverScript = """
        import base64, json, sys, urllib.request, urllib.parse, urllib.error
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from fhir.resources.R4B.bundle import Bundle
        def b64(s):
            return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
        link, issuer, local, recipient = sys.argv[1:5]
        payload = json.loads(b64(open(link).read().strip().split("shlink:/", 1)[1]))
        url = local + payload["url"][len(issuer):] + "?" + urllib.parse.urlencode({"recipient": recipient})
        try:
            with urllib.request.urlopen(url) as response:
                status, body = response.status, response.read().decode("ascii")
        except urllib.error.HTTPError as error:
            print(json.dumps({"status": error.code}))
            sys.exit(0)
        header, _, iv, ciphertext, tag = body.split(".")
        plaintext = AESGCM(b64(payload["key"])).decrypt(b64(iv), b64(ciphertext) + b64(tag), header.encode("ascii"))
        cty = json.loads(b64(header))["cty"]
        bundle = Bundle.model_validate(json.loads(plaintext))
        print(json.dumps({"status": status, "cty": cty, "bytes": len(body), "flag": payload.get("flag"),
            "types": [e.resource.get_resource_type() for e in bundle.entry]}))
        """

    @Test(
        .enabled(if: NginxServer.available, "nginx is not installed and apt-get could not install it"),
        .enabled(if: SHLContentTests.fhirAvailable, SHLContentTests.fhirMissing))
    func auditsANginxLog() throws {
        let dir = try TestSupport.tempDir("shl-audit")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(
            template: "covid19-vaccination", key: key, site: site, out: out,
            extra: ["--no-qr", "--ktc", "--shl-exp", "+24h"])
        let log = dir.appendingPathComponent("access.log").path
        let server = try NginxServer(root: site, in: dir.appendingPathComponent("nginx"), accessLog: log)
        let local = "http://127.0.0.1:\(server.port)"
        let python = try #require(TestSupport.python)
        func receive(_ id: String, as recipient: String) throws -> JSONValue {
            let run = try TestSupport.run(
                python, ["-c", Self.receiverScript, out.path + "/shl/\(id).txt", SHLTestSupport.issuer, local, recipient])
            #expect(run.status == 0, "receiver: \(run.stderr)")
            return try JSONParser.parse(Array(run.stdout.utf8))
        }
        let first = try receive("P-1001", as: "Dr Ada Lovelace, St. Mary's")
        #expect(first["status"] == .integer(200) && first["cty"] == "application/fhir+json" && first["flag"] == "U")
        #expect(first["types"]?[0] == "Patient")
        let second = try receive("P-1002", as: "Clinique café & co")
        #expect(second["status"] == .integer(200))
        _ = try HTTPGet.fetch(local + "/shl/" + String(repeating: "A", count: 43))  // not a link of ours: 404
        try SiteTestSupport.cli(["revoke", "--site", site, "--link", out.path + "/shl/P-1001.txt"])
        let gone = try receive("P-1001", as: "Dr Ada Lovelace, St. Mary's")
        #expect(gone["status"] == .integer(404))
        server.stop()

        // Rotated and compressed, as logrotate leaves it; plus the fresh (empty) log beside it.
        let rotated = log + ".1.gz"
        let gzip = try TestSupport.run("/bin/sh", ["-c", "gzip -c '\(log)' > '\(rotated)'"])
        #expect(gzip.status == 0)
        let audit = try TestSupport.cli(["shl", "audit", "--site", site, "--links", out.path, "--json", "--log", rotated])
        #expect(audit.status == 0, "\(audit.stderr)")
        let lines = try audit.stdout.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        let file1 = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1001")).url.split(separator: "/").last!
        let file2 = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1002")).url.split(separator: "/").last!
        #expect(!audit.stdout.contains(String(file1)) && !audit.stdout.contains(String(file2)), "never a file name")
        let ada = lines.filter { $0["names"] == ["P-1001"] }
        #expect(ada.map { $0["status"] } == [.integer(200), .integer(404)], "\(audit.stdout)")
        #expect(ada.allSatisfy { $0["recipient"] == "Dr Ada Lovelace, St. Mary's" && $0["link"] == .string(LogRedaction.fingerprint(String(file1))) })
        #expect(ada.first?["bytes"] == first["bytes"])
        let clinique = lines.filter { $0["names"] == ["P-1002"] }
        #expect(clinique.count == 1 && clinique[0]["recipient"] == "Clinique café & co" && clinique[0]["method"] == "GET")
        let now = Int64(Date().timeIntervalSince1970)
        #expect(lines.allSatisfy { ($0["seconds"]?.numberLexeme).flatMap { Int64($0) }.map { abs($0 - now) < 600 } == true })
        // The probe for a name no link has is an access to a link file name of nobody's: listed without a name.
        #expect(lines.count == 4 && lines.filter { $0["names"] == [] }.count == 1, "\(audit.stdout)")
        #expect(audit.stderr.contains("4 accesses to 3 links"), "\(audit.stderr)")

        let text = try TestSupport.cli(["shl", "audit", "--site", site, "--links", out.path, "--log", log])
        #expect(text.stdout.contains("(P-1002): 1 access\n") && text.stdout.contains("recipient 'Clinique café & co'"), "\(text.stdout)")
    }

    @Test func usageErrors() throws {
        let dir = try TestSupport.tempDir("shl-audit-usage")
        let (site, _, _) = try SHLTestSupport.site(in: dir)
        let none = try SiteTestSupport.cli(["shl", "audit", "--site", site], expect: 2)
        #expect(none.stderr.contains("needs at least one --log"))
        let missing = try SiteTestSupport.cli(["shl", "audit", "--site", site, "--log", dir.path + "/nope.log"], expect: 2)
        #expect(missing.stderr.contains("is not a file"))
        let corrupt = dir.appendingPathComponent("bad.gz").path
        try Data([0x1F, 0x8B] + Array("not gzip at all".utf8)).write(to: URL(fileURLWithPath: corrupt))
        let bad = try SiteTestSupport.cli(["shl", "audit", "--site", site, "--log", corrupt], expect: 2)
        #expect(bad.stderr.contains("not gzip data, or corrupt"), "\(bad.stderr)")
        let help = try TestSupport.cli(["shl", "audit", "--help"])
        #expect(help.stdout.hasPrefix("Usage: healthcards shl audit "))
    }
}
