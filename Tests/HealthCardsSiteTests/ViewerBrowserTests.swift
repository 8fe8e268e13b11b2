import Foundation
import Testing

import HealthCardsCore
import HealthCardsSite
import HealthCardsTestSupport

/// The link viewer (`site --viewer`) in a real browser: Debian's headless Chromium driven by Selenium through the
/// system chromedriver (`Tests/Tools/viewer_browser.py`, one browser session for every case), against a private
/// nginx on 127.0.0.1 with a throw-away TLS certificate that serves the issuer's site (key set, CRL, static `U` link
/// files, the viewer, with the site's own nginx rules) as `issuer.example.org` and proxies `links.example.org` to a
/// real `healthcards serve`. Chromium resolves every host name to that nginx, so nothing can leave the machine, and
/// both the page's requests (Chromium's performance log) and nginx's access log (every request on the wire) are
/// checked to name only the link host and the key host.
@Suite struct ViewerBrowserTests {
    static let issuer = "https://issuer.example.org"
    static let linksBase = "https://links.example.org/shl"
    static let viewer = issuer + "/viewer/#"
    static let script = VerifyFixtures.repoRoot.appendingPathComponent("Tests/Tools/viewer_browser.py").path

    /// Chromium, its driver and the test Python with Selenium and axe-selenium-python (`make test-deps`).
    static let browserAvailable: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"),
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), let python = TestSupport.python
        else { return false }
        return (try? TestSupport.run(python, ["-c", "import selenium, axe_selenium_python"]))?.status == 0
    }()
    static let browserMissing: Comment =
        "Debian chromium and chromium-driver, or selenium in .build/test-venv, are missing (make test-deps installs them)"

    /// The vaccination template's CSV: Ada (two doses), a name in Arabic, one in Chinese, and a card to revoke.
    static func vaccinationCSV(in dir: URL) throws -> String {
        let header = try String(
            contentsOf: SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv"),
            encoding: .utf8
        ).split(separator: "\n")[0]
        let rows = [
            "EV-1,1,P-1,Ada,,Lovelace,1960-04-12,F,Springfield,IL,ABC General Hospital,999999,2021-01-15,207,80777-0273-10,MOD,011J20A,2021-07-01,LA,C28161,1",
            "EV-2,1,P-1,Ada,,Lovelace,1960-04-12,F,Springfield,IL,Main St Pharmacy,999998,2021-02-12,207,80777-0273-10,MOD,012M20A,2021-07-01,LA,C28161,2",
            "EV-3,1,P-2,ليلى,,حداد,1985-03-09,F,Springfield,IL,ABC General Hospital,999999,2021-03-02,208,59267-1000-01,PFR,EN6201,2021-06-30,RA,C28161,1",
            "EV-4,1,P-3,秀英,,王,1990-07-01,F,Springfield,IL,ABC General Hospital,999999,2021-04-02,208,59267-1000-01,PFR,EN6202,2021-06-30,RA,C28161,1",
            "EV-5,1,P-4,Rex,,Withdrawn,1970-01-02,M,Springfield,IL,ABC General Hospital,999999,2021-05-02,208,59267-1000-01,PFR,EN6203,2021-06-30,RA,C28161,1",
        ]
        return try TestSupport.write(([String(header)] + rows).joined(separator: "\n") + "\n", to: "vax.csv", in: dir)
    }

    /// The link text of `out/shl/<id>.txt`.
    static func link(_ out: URL, _ id: String) throws -> String { try SHLTestSupport.linkText(out, id: id) }

    /// A copy of the card `path` whose payload says `from` as `to`, signature unchanged (altered after signing).
    static func alteredCard(_ path: String, replacing from: String, with to: String, in dir: URL) throws -> String {
        let file = try JSONParser.parse(try SiteTestSupport.bytes(path))
        let jws = try #require(file["verifiableCredential"]?[0]?.stringValue)
        let parts = jws.split(separator: ".").map(String.init)
        let payload = JSONWriter.minifiedString(try TestSupport.payload(of: jws))
        #expect(payload.contains(from))
        let changed = try RawDeflater().deflate(Array(payload.replacingOccurrences(of: from, with: to).utf8))
        let forged = [parts[0], Base64URL.encode(changed), parts[2]].joined(separator: ".")
        let text = #"{"verifiableCredential":[""# + forged + #""]}"#
        return try TestSupport.write(text, to: "altered.smart-health-card", in: dir)
    }

    /// `link` with its payload's `exp` set to `exp` (a link past its time; the payload is not signed).
    static func withExp(_ link: String, _ exp: Int) throws -> String {
        let marker = try #require(link.range(of: "shlink:/"))
        let decoded = try #require(Base64URL.decode(String(link[marker.upperBound...])))
        var payload = try #require(try JSONParser.parse(decoded).objectValue)
        payload["exp"] = .integer(Int64(exp))
        return String(link[..<marker.upperBound]) + Base64URL.encode(JSONWriter.minified(.object(payload)))
    }

    @Test(
        .enabled(if: browserAvailable, browserMissing),
        .enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"),
        .timeLimit(.minutes(10)))
    func linksOpenInARealBrowserAndSayHonestlyWhatWasChecked() throws {
        let dir = try TestSupport.tempDir("viewer")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let ridSecret = dir.appendingPathComponent("rid.secret").path
        try SiteTestSupport.cli(["keygen", "--rid-secret", ridSecret])
        let site = dir.appendingPathComponent("site").path
        let laidOut = try SiteTestSupport.cli([
            "site", "--out", site, key.path, "--issuer", Self.issuer, "--crl", "--viewer",
        ])
        #expect(laidOut.stderr.contains(Self.viewer), "\(laidOut.stderr)")
        let template = SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path
        let issueBase = [
            "issue", "--issuer", Self.issuer, "--key", key.path, "--rid-secret", ridSecret, "--site", site,
            "--shl", Self.issuer + "/shl", "--viewer", Self.viewer, "--template", template, "--no-qr", "--quiet",
        ]
        // Cards with static U links in the site; then P-4's card is revoked.
        let cards = dir.appendingPathComponent("cards")
        try SiteTestSupport.cli(issueBase + ["--out", cards.path, try Self.vaccinationCSV(in: dir)])
        try SiteTestSupport.cli([
            "revoke", "--site", site, "--key", key.path, "--rid-secret", ridSecret, "--report", cards.path, "--id",
            "P-4",
        ])
        // A Kill-the-Clipboard Bundle with the printed card in it.
        let bundles = dir.appendingPathComponent("bundles")
        let bundleCSV = try TestSupport.write(
            try String(contentsOfFile: try Self.vaccinationCSV(in: dir), encoding: .utf8).split(separator: "\n")
                .prefix(3).joined(separator: "\n") + "\n", to: "bundle.csv", in: dir)
        try SiteTestSupport.cli(issueBase + ["--out", bundles.path, "--content", "bundle", "--pdf", bundleCSV])
        // Manifest links on the link server: a passcode link, one deactivated, and a U link to an altered card.
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let card = cards.appendingPathComponent("cards/P-1.smart-health-card").path
        let passcode = try ServerTestSupport.passcodeFile("correct horse", in: dir)
        let linkOptions = ["--viewer", Self.viewer]
        let guarded = try ServerTestSupport.makeLink(
            "guarded", db: db, base: Self.linksBase, in: dir,
            linkOptions + ServerTestSupport.fastKDF + [
                "--passcode-file", passcode, "--jwks", site, "--max-attempts", "5",
            ],
            files: [card])
        let closed = try ServerTestSupport.makeLink(
            "closed", db: db, base: Self.linksBase, in: dir, linkOptions, files: [card])
        try ServerTestSupport.link("deactivate", db: db, base: "", ["--id", closed.id])
        let altered = try ServerTestSupport.makeLink(
            "altered", db: db, base: Self.linksBase, in: dir, linkOptions + ["--direct"],
            files: [try Self.alteredCard(card, replacing: "Lovelace", with: "Lovelase", in: dir)])
        func text(_ file: String) throws -> String {
            try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        // The servers: healthcards serve, and nginx with TLS in front of it and the site.
        let serverPort = try ServerTestSupport.freePort()
        let server = try ServerProcess(db: db, port: serverPort, base: Self.linksBase, in: dir)
        defer { server.stop() }
        let front = try ViewerFront(site: site, serverPort: serverPort, in: dir)
        defer { front.stop() }

        let ada = try Self.link(cards, "P-1")
        let downloads = dir.appendingPathComponent("downloads")
        let screenshots = dir.appendingPathComponent("screenshots")
        for folder in [downloads, screenshots] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let adaCase: JSONValue = .object([
            "link": .string(ada), "issuer": .string(Self.issuer), "name": .string("Ada Lovelace"), "doses": .integer(2),
            "texts": .array(
                ["011J20A", "012M20A", "ABC General Hospital", "Main St Pharmacy", "1960"].map(JSONValue.string)),
            "dates": .array(["2021-01-15", "2021-02-12"].map(JSONValue.string)), "linkHost": "issuer.example.org",
        ])
        let cases: JSONObject = [
            "u-card": adaCase,
            "pasted": .object([
                "viewer": .string(Self.issuer + "/viewer/"), "name": "Ada Lovelace",
                "link": .string(String(ada[try #require(ada.range(of: "shlink:/")).lowerBound...])),
            ]),
            "p-manifest": .object([
                "link": .string(try text(guarded.file)), "passcode": "correct horse",
                "remainingAfterWrong": .integer(4),
                "name": "Ada Lovelace", "linkHost": "links.example.org", "keyHost": "issuer.example.org",
            ]),
            "bundle-pdf": .object([
                "link": .string(try Self.link(bundles, "P-1")), "name": "Ada Lovelace", "doses": .integer(2),
                "pdf": .string(bundles.appendingPathComponent("pdf/P-1.pdf").path), "linkHost": "issuer.example.org",
            ]),
            "altered": .object(["link": .string(try text(altered.file))]),
            "revoked": .object(["link": .string(try Self.link(cards, "P-4"))]),
            "expired": .object([
                "link": .string(try Self.withExp(try text(guarded.file), 1_000_000_000)),
                "linkHost": "links.example.org",
            ]),
            "deactivated": .object(["link": .string(try text(closed.file))]),
            "arabic": .object(["link": .string(try Self.link(cards, "P-2")), "name": "ليلى حداد"]),
            "chinese": .object(["link": .string(try Self.link(cards, "P-3")), "name": "王秀英"]),
        ]
        let allowedHosts: JSONValue = .array(["issuer.example.org", "links.example.org"])
        let config: JSONValue = .object([
            "port": .integer(Int64(front.port)), "allowedHosts": allowedHosts,
            "downloads": .string(downloads.path), "screenshots": .string(screenshots.path),
            "docScreenshot": ProcessInfo.processInfo.environment["HEALTHCARDS_VIEWER_SCREENSHOT"].map(JSONValue.string)
                ?? .null,
            "cases": .object(cases),
        ])
        let configPath = try TestSupport.write(
            String(decoding: JSONWriter.pretty(config), as: UTF8.self), to: "browser.json", in: dir)
        let run = try TestSupport.run(try #require(TestSupport.python), [Self.script, configPath])
        try #require(run.status == 0, "viewer_browser.py: \(run.stderr)")
        let answer = try JSONParser.parse(Array(run.stdout.utf8))
        let failures = answer["failures"]?.arrayValue?.compactMap(\.stringValue) ?? ["no answer: \(run.stdout)"]
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))\n\(run.stdout)")
        for name in cases.keys {
            #expect(answer["results"]?[name] != nil, "case \(name) did not run")
        }
        // What reached nginx, however it was asked: the two hosts, and the link files and key set were fetched. Chromium
        // itself also calls its own Google services however it is started (component updates, network time,
        // accounts); the page never does (its every request is in the performance log, checked above), so those
        // are set apart by their domains and nothing else may appear.
        front.stop()
        let log = try String(contentsOfFile: front.accessLog, encoding: .utf8).split(separator: "\n")
        let logHosts = Set(log.compactMap { $0.split(separator: " ").first.map(String.init) })
        let chromiumOwn = logHosts.filter { host in
            ["google.com", "googleapis.com", "gstatic.com"].contains { host == $0 || host.hasSuffix("." + $0) }
        }
        #expect(
            logHosts.subtracting(chromiumOwn) == ["issuer.example.org", "links.example.org"],
            "nginx saw hosts \(logHosts)")
        #expect(log.contains { $0.hasPrefix("issuer.example.org GET /.well-known/jwks.json 200") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("issuer.example.org GET /.well-known/crl/\(key.kid).json 200") })
        #expect(log.contains { $0.hasPrefix("links.example.org POST /shl/\(guarded.id) 401") })
        #expect(log.contains { $0.hasPrefix("links.example.org POST /shl/\(closed.id) 404") })
        // The expired link was never asked for beyond its one wrong and one right passcode.
        #expect(log.filter { $0.hasPrefix("links.example.org POST /shl/\(guarded.id) ") }.count == 2, "\(log)")
        // The server recorded the recipient the person typed.
        let audit = try ServerTestSupport.link("audit", db: db, base: "", ["--id", guarded.id])
        #expect(audit.stdout.contains("Front desk, Example Clinic"), "\(audit.stdout)")
    }
}

/// The test's nginx: TLS (a throw-away self-signed certificate) on 127.0.0.1, `issuer.example.org` serving the site
/// folder with its own `healthcards-nginx.conf`, `links.example.org` proxying `/shl/` to the link server, and any
/// other name refused (421). The access log has one line a request: `$host $request_method $uri $status`.
final class ViewerFront {
    let process = Process()
    let port: Int
    let accessLog: String

    init(site: String, serverPort: UInt16, in dir: URL) throws {
        let prefix = dir.appendingPathComponent("nginx").path
        try FileManager.default.createDirectory(atPath: prefix + "/tmp", withIntermediateDirectories: true)
        let certificate = prefix + "/cert.pem"
        let key = prefix + "/key.pem"
        let openssl = try TestSupport.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                "-subj", "/CN=issuer.example.org", "-addext",
                "subjectAltName=DNS:issuer.example.org,DNS:links.example.org", "-keyout", key, "-out", certificate,
            ])
        guard openssl.status == 0 else { throw HealthCardError(.io, "openssl req: \(openssl.stderr)") }
        port = try NginxServer.freePort()
        accessLog = prefix + "/access.log"
        let conf = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log;
            events { worker_connections 64; }
            http {
                include /etc/nginx/mime.types;
                default_type application/octet-stream;
                log_format hosts '$host $request_method $uri $status';
                access_log \(accessLog) hosts;
                client_body_temp_path \(prefix)/tmp/body;
                proxy_temp_path \(prefix)/tmp/proxy;
                fastcgi_temp_path \(prefix)/tmp/fastcgi;
                uwsgi_temp_path \(prefix)/tmp/uwsgi;
                scgi_temp_path \(prefix)/tmp/scgi;
                ssl_certificate \(certificate);
                ssl_certificate_key \(key);
                server {
                    listen 127.0.0.1:\(port) ssl default_server;
                    server_name _;
                    return 421;
                }
                server {
                    listen 127.0.0.1:\(port) ssl;
                    server_name issuer.example.org;
                    root \(site);
                    include \(site)/\(HostRules.nginxFileName);
                }
                server {
                    listen 127.0.0.1:\(port) ssl;
                    server_name links.example.org;
                    location /shl/ {
                        proxy_pass http://127.0.0.1:\(serverPort);
                        proxy_http_version 1.1;
                        proxy_set_header Host $host;
                    }
                }
            }

            """
        let confPath = try TestSupport.write(conf, to: "nginx/nginx.conf", in: dir)
        let check = try TestSupport.run(
            NginxServer.binary, ["-t", "-p", prefix, "-e", prefix + "/error.log", "-c", confPath])
        guard check.status == 0 else { throw HealthCardError(.configuration, "nginx -t: \(check.stderr)") }
        process.executableURL = URL(fileURLWithPath: NginxServer.binary)
        process.arguments = ["-p", prefix, "-e", prefix + "/error.log", "-c", confPath]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<400 where !NginxServer.accepts(port: port) {
            guard process.isRunning else { break }
            usleep(50_000)
        }
        guard NginxServer.accepts(port: port) else {
            stop()
            throw HealthCardError(
                .io,
                "nginx did not start: \((try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? "")")
        }
    }

    /// SIGKILL (nginx in single-process mode started from a test thread never sees SIGTERM: `NginxServer.stop`).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}
