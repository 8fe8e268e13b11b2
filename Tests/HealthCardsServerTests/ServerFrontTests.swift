import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// The nginx front of `contrib/nginx-healthcards-serve.conf` as shipped (only its addresses, certificate and log
/// path changed for the test): a receiver resolves a link through it over TLS, and its access log holds neither
/// the link id nor the location secret.
@Suite struct ServerFrontTests {
    @Test(
        .enabled(if: ServerTestSupport.clientAvailable, ServerTestSupport.clientMissing),
        .enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"))
    func linksResolveThroughTheShippedNginxFront() throws {
        let dir = try TestSupport.tempDir("front")
        let db = try ServerTestSupport.database(.sqlite, in: dir)
        let serverPort = try ServerTestSupport.freePort()
        let frontPort = try ServerTestSupport.freePort()
        let base = "https://127.0.0.1:\(frontPort)/shl"
        let certificate = dir.appendingPathComponent("cert.pem").path
        let key = dir.appendingPathComponent("key.pem").path
        let openssl = try TestSupport.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                "/CN=127.0.0.1",
                "-keyout", key, "-out", certificate,
            ])
        #expect(openssl.status == 0, "\(openssl.stderr)")
        var site = try String(
            contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("contrib/nginx-healthcards-serve.conf"),
            encoding: .utf8)
        // The port-80 redirect server and the IPv6 listen lines are left out; the rest is as shipped.
        let redirect = try #require(site.range(of: "server {\n    listen 80;"))
        let redirectEnd = try #require(site.range(of: "}\n", range: redirect.upperBound..<site.endIndex))
        site.removeSubrange(redirect.lowerBound..<redirectEnd.upperBound)
        for (from, to) in [
            ("    listen [::]:443 ssl http2;\n", ""),
            ("listen 443 ssl http2;", "listen 127.0.0.1:\(frontPort) ssl http2;"),
            ("/etc/letsencrypt/live/links.example.org/fullchain.pem", certificate),
            ("/etc/letsencrypt/live/links.example.org/privkey.pem", key),
            ("/var/log/nginx/healthcards-links.log", dir.appendingPathComponent("access.log").path),
            ("server 127.0.0.1:8080;", "server 127.0.0.1:\(serverPort);"),
        ] {
            #expect(site.contains(from), "the shipped configuration no longer has \(from)")
            site = site.replacingOccurrences(of: from, with: to)
        }
        try TestSupport.write(site, to: "site.conf", in: dir)
        let prefix = dir.appendingPathComponent("nginx").path
        try FileManager.default.createDirectory(atPath: prefix + "/tmp", withIntermediateDirectories: true)
        let conf = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log;
            events { worker_connections 64; }
            http {
                client_body_temp_path \(prefix)/tmp/body;
                proxy_temp_path \(prefix)/tmp/proxy;
                fastcgi_temp_path \(prefix)/tmp/fastcgi;
                uwsgi_temp_path \(prefix)/tmp/uwsgi;
                scgi_temp_path \(prefix)/tmp/scgi;
                include \(dir.appendingPathComponent("site.conf").path);
            }

            """
        let confPath = try TestSupport.write(conf, to: "nginx.conf", in: dir)
        let check = try TestSupport.run(
            NginxServer.binary, ["-t", "-p", prefix, "-e", prefix + "/error.log", "-c", confPath])
        try #require(check.status == 0, "nginx -t: \(check.stderr)")
        let nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: NginxServer.binary)
        nginx.arguments = ["-p", prefix, "-e", prefix + "/error.log", "-c", confPath]
        nginx.standardOutput = FileHandle.nullDevice
        nginx.standardError = FileHandle.nullDevice
        try nginx.run()
        // SIGKILL: a child started from a test thread inherits its blocked signals, and nginx in single-process
        // mode never unblocks SIGTERM (as NginxServer.stop says).
        func stopNginx() {
            if nginx.isRunning { kill(nginx.processIdentifier, SIGKILL) }
            nginx.waitUntilExit()
        }
        defer { stopNginx() }
        let link = try ServerTestSupport.makeLink("plain", db: db, base: base, in: dir, [])
        let passcode = try ServerTestSupport.passcodeFile("front door", in: dir)
        let guarded = try ServerTestSupport.makeLink(
            "guarded", db: db, base: base, in: dir, ["--passcode-file", passcode] + ServerTestSupport.fastKDF)
        let server = try ServerProcess(db: db, port: serverPort, base: base, in: dir)
        for _ in 0..<400 where !NginxServer.accepts(port: Int(frontPort)) { usleep(50_000) }
        let resolved = try ServerTestSupport.client(["resolve", link.file, dir.appendingPathComponent("out").path])
        #expect(int(resolved["status"]) == 200, "\(resolved)")
        #expect(
            resolved["headers"]?["access-control-allow-origin"] == "*"
                && resolved["headers"]?["cache-control"] == "no-store")
        #expect(resolved["headers"]?["strict-transport-security"] == "max-age=31536000")
        #expect(
            try VerifyFixtures.bytes(dir.appendingPathComponent("out/file-1"))
                == VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card)))
        let wrong = try ServerTestSupport.client([
            "post", base + "/" + guarded.id, #"{"recipient":"r","passcode":"x"}"#,
        ])
        #expect(int(wrong["status"]) == 401 && int(wrong["body"]?["remainingAttempts"]) == 9)
        // nginx refuses a body over 16 KiB itself; /healthz answers inside (this client is 127.0.0.1, which the
        // front allows; others get 403).
        let big = #"{"recipient":""# + String(repeating: "x", count: 17 * 1024) + #""}"#
        #expect(int(try ServerTestSupport.client(["post", base + "/" + link.id, big])["status"]) == 413)
        #expect(int(try ServerTestSupport.client(["get", "https://127.0.0.1:\(frontPort)/healthz"])["status"]) == 200)
        #expect(server.stop() == 0)
        stopNginx()
        let log = try String(contentsOf: dir.appendingPathComponent("access.log"), encoding: .utf8)
        #expect(log.contains("\"POST /shl/...\" 200") && log.contains("\"GET /shl/file/...\" 200"), "\(log)")
        let location = try #require(resolved["manifest"]?["files"]?[0]?["location"]?.stringValue)
        for secret in [link.id, guarded.id, String(location.split(separator: "/").last ?? "")] {
            #expect(!log.contains(secret), "the access log holds \(secret)")
        }
    }
}
