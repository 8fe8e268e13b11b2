import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite
import HealthCardsTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `healthcards site`: the static-host folder and its header rules, served by a real nginx.
@Suite struct SiteTests {
    @Test func layoutAndRuleFiles() throws {
        let dir = try TestSupport.tempDir("site")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, key.path, "--issuer", "https://issuer.example.org/shc", "--crl"])
        let files = try FileManager.default.subpathsOfDirectory(atPath: site.path).filter {
            !FileIO.isDirectory(site.path + "/" + $0)
        }.sorted()
        #expect(
            files == [
                SiteLock.fileName, ".htaccess", ".well-known/crl/\(key.kid).json", ".well-known/jwks.json", "_headers",
                "healthcards-nginx.conf", "healthcards-site.json",
            ])
        let headers = try String(contentsOf: site.appendingPathComponent("_headers"), encoding: .utf8)
        #expect(
            headers.contains(
                "\n/shc/.well-known/jwks.json\n  Access-Control-Allow-Origin: *\n  Content-Type: application/json\n"))
        #expect(headers.contains("\n/shc/.well-known/crl/*\n  Access-Control-Allow-Origin: *\n"))
        #expect(headers.contains("\n/shc/*.smart-health-card\n  Content-Type: application/smart-health-card\n"))
        let htaccess = try String(contentsOf: site.appendingPathComponent(".htaccess"), encoding: .utf8)
        #expect(htaccess.contains("AddType application/smart-health-card .smart-health-card"))
        #expect(
            htaccess.contains(
                "<Files \"jwks.json\">\n    ForceType application/json\n    Header always set Access-Control-Allow-Origin \"*\""
            ))
        // The Apache CRL pattern matches kid file names (43 base64url characters), not jwks.json.
        let pattern = try Regex("^[A-Za-z0-9_-]{43}\\.json$")
        #expect(try pattern.wholeMatch(in: "\(key.kid).json") != nil)
        #expect(try pattern.wholeMatch(in: "jwks.json") == nil)
        #expect(try SiteTestSupport.json(site.path + "/.well-known/crl/\(key.kid).json")["rids"] == .array([]))
        // Our verify judges the key set clean, and nothing private is in the site.
        let verify = try SiteTestSupport.cli(["verify", site.path])
        #expect(verify.stdout.contains(" 0 error(s), 0 warning(s)"), "\(verify.stdout)")
        for file in files {
            let text = String(decoding: try SiteTestSupport.bytes(site.path + "/" + file), as: UTF8.self)
            #expect(!text.contains("PRIVATE KEY") && !text.contains("\"d\""))
        }
    }

    /// The site folder (key set and CRL) checks clean in the independent checker.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func siteFolderPassesIndependentChecker() throws {
        let dir = try TestSupport.tempDir("site")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli([
            "site", "--out", site.path, key.path, "--issuer", "https://issuer.example.org/shc", "--crl",
        ])
        let check = try TestSupport.check([site.path])
        #expect(check.status == 0, "\(check.stdout)")
    }

    /// Without --crl, a key without a revocation list gets none and no crlVersion: advertising one would
    /// promise revocation its cards (issued without vc.rid) cannot have. `revoke` creates it when needed.
    @Test func noCRLVersionWithoutARevocationList() throws {
        let dir = try TestSupport.tempDir("site")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        let run = try SiteTestSupport.cli(["site", "--out", site.path, key.path])
        #expect(run.stdout == "\(key.kid) (no CRL)\n")
        #expect(try JWKS(bytes: try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json"), source: "j").keys[0].crlVersion == nil)
        #expect(!FileManager.default.fileExists(atPath: site.path + "/.well-known/crl"))
        let raw = try SiteTestSupport.json(site.path + "/.well-known/jwks.json")
        #expect(raw["keys"]?[0]?["crlVersion"] == nil)
        // With --crl: an empty list and crlVersion 1.
        let withCRL = try SiteTestSupport.cli(["site", "--out", site.path, key.path, "--crl"])
        #expect(withCRL.stdout == "\(key.kid) crlVersion 1\n")
        // --out naming a file says what it is.
        let file = try TestSupport.write("x", to: "not-a-folder", in: dir)
        let onFile = try SiteTestSupport.cli(["site", "--out", file, key.path], expect: 2)
        #expect(onFile.stderr.contains("--out \(file) is a file; site lays out a folder"), "\(onFile.stderr)")
    }

    /// The deny rules come from one list (`HostRules.deniedFiles`), for nginx and Apache alike.
    @Test func rulesDenyTheRuleFilesFromOneList() {
        #expect(
            HostRules.deniedFiles == [HostRules.nginxFileName, ".htaccess", "_headers", SiteRecord.fileName, SiteLock.fileName])
        #expect(
            HostRules.nginx.contains(
                #"location ~ (^|/)(healthcards-nginx\.conf|\.htaccess|_headers|healthcards-site\.json|\.healthcards-site\.lock)$ {"#
            ))
        #expect(
            HostRules.apache.contains(
                #"RedirectMatch 404 (^|/)(healthcards-nginx\.conf|\.htaccess|_headers|healthcards-site\.json|\.healthcards-site\.lock)$"#
            ))
    }

    /// A malformed existing CRL stops `site` before it writes anything.
    @Test func malformedCRLStopsBeforeWriting() throws {
        let dir = try TestSupport.tempDir("site")
        let a = try SiteTestSupport.keygen("a.pem", in: dir)
        let b = try SiteTestSupport.keygen("b.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        try TestSupport.write(
            #"{"kid":"\#(b.kid)","method":"rid","ctr":0,"rids":[]}"#, to: ".well-known/crl/\(b.kid).json", in: site)
        let run = try SiteTestSupport.cli(["site", "--out", site.path, a.path, b.path], expect: 2)
        #expect(run.stderr.contains("ctr must be a positive integer"))
        // Only the site's lock file (bookkeeping, taken before the CRLs are read; it stays, as issue's does).
        #expect(
            try FileManager.default.subpathsOfDirectory(atPath: site.path).sorted() == [
                SiteLock.fileName, ".well-known", ".well-known/crl", ".well-known/crl/\(b.kid).json",
            ])
    }

    /// A site for a new key, with one of its cards and a file the rules do not name, served by nginx.
    static func servedSite() throws -> (key: (path: String, kid: String), site: URL, card: URL, server: NginxServer) {
        let dir = try TestSupport.tempDir("nginx")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, key.path, "--crl", "--issuer", SiteTestSupport.issuer])
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key.path, out: out)
        let card = out.appendingPathComponent("cards/P-1001.smart-health-card")
        try FileManager.default.createDirectory(
            at: site.appendingPathComponent("cards"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: card, to: site.appendingPathComponent("cards/P-1001.smart-health-card"))
        try TestSupport.write("{}", to: "other.json", in: site)
        return (key, site, card, try NginxServer(root: site.path, in: dir.appendingPathComponent("nginx")))
    }

    @Test(.enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"))
    func nginxServesKeysWithCORSAndCardsWithTheirType() throws {
        let (key, site, card, server) = try Self.servedSite()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"

        let jwks = try HTTPGet.fetch(base + "/.well-known/jwks.json")
        #expect(jwks.status == 200)
        #expect(jwks.header("Access-Control-Allow-Origin") == "*")
        #expect(jwks.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(jwks.body == (try SiteTestSupport.bytes(site.path + "/.well-known/jwks.json")))
        #expect(try JWKS(bytes: jwks.body, source: "GET jwks.json").keys.map(\.kid) == [key.kid])

        let crl = try HTTPGet.fetch(base + "/.well-known/crl/\(key.kid).json")
        #expect(crl.status == 200)
        #expect(crl.header("Access-Control-Allow-Origin") == "*")
        #expect(crl.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(try CRL(bytes: crl.body, source: "GET crl").kid == key.kid)

        let served = try HTTPGet.fetch(base + "/cards/P-1001.smart-health-card")
        #expect(served.status == 200)
        #expect(served.header("Content-Type") == "application/smart-health-card")
        #expect(served.body == (try VerifyFixtures.bytes(card)))

        // Control: a file the rules do not name gets no CORS header, so the header above is the rules' work.
        let other = try HTTPGet.fetch(base + "/other.json")
        #expect(other.status == 200 && other.header("Access-Control-Allow-Origin") == nil)

        // The rule files are there on disk but not served: 404, at the root and below it.
        try TestSupport.write("# rules", to: "cards/_headers", in: site)
        for name in HostRules.deniedFiles + ["cards/_headers"] {
            #expect(FileManager.default.fileExists(atPath: site.path + "/" + name))
            let denied = try HTTPGet.fetch(base + "/" + name)
            #expect(denied.status == 404, "\(name)")
            #expect(!String(decoding: denied.body, as: UTF8.self).contains("location"), "\(name)")
        }
        // Names that only contain a denied name are still served.
        try TestSupport.write("{}", to: "my_headers.json", in: site)
        #expect(try HTTPGet.fetch(base + "/my_headers.json").status == 200)
    }

    /// The independent checker fetches iss/.well-known/jwks.json (with an Origin header) from nginx.
    @Test(
        .enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"),
        .enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func independentCheckerFetchesTheKeySetFromNginx() throws {
        let (_, _, card, server) = try Self.servedSite()
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let check = try TestSupport.check(["--fetch-jwks", "--resolve", "\(SiteTestSupport.issuer)=\(base)", card.path])
        #expect(check.status == 0, "\(check.stdout)")
        #expect(check.stdout.hasSuffix("1 credentials checked, 0 errors, 0 warnings\n"), "\(check.stdout)")
    }
}
