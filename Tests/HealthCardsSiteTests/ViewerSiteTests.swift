import Foundation
import Testing

import HealthCardsCore
import HealthCardsSite
import HealthCardsTestSupport

/// `site --viewer`: the viewer's files as the repository has them, written into `SITE/viewer/` with the site's
/// modes, never over a file or through a link it did not make, and served by every host's rules with a strict
/// Content-Security-Policy. (The page itself runs in a browser in ViewerBrowserTests.)
@Suite struct ViewerSiteTests {
    static let viewerFolder = VerifyFixtures.repoRoot.appendingPathComponent("viewer")

    @Test func theEmbeddedFilesAreTheRepositorysViewerFolderByteForByte() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.viewerFolder.path).sorted()
        #expect(
            names == SiteViewer.staticFiles.map(\.name).sorted(), "viewer/ holds \(names): run scripts/gen-viewer.py")
        for file in SiteViewer.staticFiles {
            let bytes = try VerifyFixtures.bytes(Self.viewerFolder.appendingPathComponent(file.name))
            let same = Array(file.text.utf8) == bytes
            #expect(same, "ViewerFiles.swift differs from viewer/\(file.name): run scripts/gen-viewer.py")
        }
    }

    @Test func thePageLoadsNothingInlineAndNothingFromElsewhere() throws {
        let html = try #require(SiteViewer.staticFiles.first { $0.name == "index.html" }?.text)
        // A strict CSP blocks inline script, style attributes and event handlers: the page has none.
        #expect(!html.contains("style="), "a style attribute")
        #expect(html.range(of: #"<script(?![^>]*\bsrc=)"#, options: .regularExpression) == nil, "an inline script")
        #expect(html.range(of: #"\son[a-z]+="#, options: .regularExpression) == nil, "an inline event handler")
        #expect(!html.contains("<style"), "a style element")
        // Every script and style sheet is the viewer's own file, by a relative name.
        let references = html.matches(of: /(?:src|href)="([^"]*)"/).map { String($0.output.1) }
        #expect(Set(references) == ["viewer.css", "codes.js", "viewer.js"], "\(references)")
        let script = try #require(SiteViewer.staticFiles.first { $0.name == "viewer.js" }?.text)
        for risky in [
            "innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "new Function", "document.write", ".style",
        ] {
            #expect(!script.contains(risky), "viewer.js uses \(risky)")
        }
        for file in SiteViewer.files {
            #expect(
                file.text.split(separator: "\n").prefix(2).contains { $0.contains(SiteViewer.marker) }, "\(file.name)")
        }
    }

    @Test func codesNameVaccinesAndResultsFromTheLibrarysTables() throws {
        let codes = SiteViewer.codesFile.text
        #expect(codes.hasPrefix("/* \(SiteViewer.marker)"))
        let cvx207 = try #require(CVX.lookup("207")).shortDescription
        #expect(codes.contains(#""207":"\#(cvx207)""#))
        #expect(codes.contains(#""94558-4":"SARS-CoV-2 Ag Resp Ql IA.rapid""#))
        #expect(codes.contains(#""260373001":"Detected""#), "SNOMED CT names without their semantic tag")
        #expect(codes.contains("window.HEALTHCARDS_CODES"))
    }

    @Test func siteViewerWritesThePublishedFilesAndReplacesOnlyItsOwn() throws {
        let dir = try TestSupport.tempDir("viewer-site")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        let run = try SiteTestSupport.cli([
            "site", "--out", site, key.path, "--issuer", SiteTestSupport.issuer, "--viewer",
        ])
        #expect(run.stderr.contains("--viewer \(SiteTestSupport.issuer)/viewer/#"), "\(run.stderr)")
        #expect(SHLTestSupport.mode(site + "/viewer") == 0o755)
        for file in SiteViewer.files {
            let path = site + "/viewer/" + file.name
            let same = try SiteTestSupport.bytes(path) == Array(file.text.utf8)
            #expect(same, "\(path)")
            #expect(SHLTestSupport.mode(path) == 0o644, "\(path)")
        }
        // Again: its own files are replaced.
        try TestSupport.write("/* healthcards-viewer: an older version */\n", to: "site/viewer/viewer.js", in: dir)
        try SiteTestSupport.cli(["site", "--out", site, key.path, "--viewer"])
        let replaced =
            try SiteTestSupport.bytes(site + "/viewer/viewer.js")
            == Array(try #require(SiteViewer.staticFiles.last).text.utf8)
        #expect(replaced, "viewer.js was not replaced")

        // A file it did not write is never replaced, and the run writes nothing at all.
        let foreign = try TestSupport.write("<p>the web team's own page</p>\n", to: "site/viewer/index.html", in: dir)
        try FileManager.default.removeItem(atPath: site + "/.well-known/jwks.json")
        let refused = try SiteTestSupport.cli(["site", "--out", site, key.path, "--viewer"], expect: 2)
        #expect(
            refused.stderr.contains("index.html") && refused.stderr.contains("was not written by this toolkit"),
            "\(refused.stderr)")
        #expect(try String(contentsOfFile: foreign, encoding: .utf8) == "<p>the web team's own page</p>\n")
        #expect(!FileManager.default.fileExists(atPath: site + "/.well-known/jwks.json"), "the site was written anyway")
        // Without --viewer the site is laid out and the viewer folder is left alone.
        try SiteTestSupport.cli(["site", "--out", site, key.path])
        #expect(try String(contentsOfFile: foreign, encoding: .utf8) == "<p>the web team's own page</p>\n")
    }

    @Test func symbolicLinksAreRefusedNeverFollowed() throws {
        let dir = try TestSupport.tempDir("viewer-links")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, key.path, "--issuer", SiteTestSupport.issuer])
        // The viewer folder itself a link to somewhere else.
        let elsewhere = dir.appendingPathComponent("elsewhere").path
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: site + "/viewer", withDestinationPath: elsewhere)
        let folder = try SiteTestSupport.cli(["site", "--out", site, key.path, "--viewer"], expect: 2)
        #expect(folder.stderr.contains("symbolic link"), "\(folder.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
        // A file in it a link to a file of someone else's, even one that carries the marker.
        try FileManager.default.removeItem(atPath: site + "/viewer")
        try FileManager.default.createDirectory(atPath: site + "/viewer", withIntermediateDirectories: true)
        let target = try TestSupport.write("/* healthcards-viewer */\nsomeone else's\n", to: "target.js", in: dir)
        try FileManager.default.createSymbolicLink(atPath: site + "/viewer/viewer.js", withDestinationPath: target)
        let file = try SiteTestSupport.cli(["site", "--out", site, key.path, "--viewer"], expect: 2)
        #expect(file.stderr.contains("viewer.js is a symbolic link"), "\(file.stderr)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "/* healthcards-viewer */\nsomeone else's\n")
        #expect(!FileManager.default.fileExists(atPath: site + "/viewer/index.html"))
    }

    @Test func everyHostsRulesServeTheViewerWithAStrictPolicy() throws {
        let policy = SiteViewer.contentSecurityPolicy
        for part in [
            "default-src 'self'", "connect-src https:", "img-src 'self' blob: data:", "object-src 'none'",
            "base-uri 'none'", "frame-ancestors 'none'",
        ] {
            #expect(policy.contains(part), "\(part)")
        }
        #expect(!policy.contains("unsafe"))
        #expect(
            HostRules.nginx.contains(
                #"location ~ "/viewer/([a-z]+\.(html|css|js))?$" {"#
                    + "\n    types { text/html html; text/css css; text/javascript js; }"
                    + "\n    add_header Content-Security-Policy \"\(policy)\" always;"
                    + "\n    add_header Referrer-Policy \"no-referrer\" always;"
                    + "\n    add_header Cache-Control \"no-store\" always;"))
        #expect(
            HostRules.apache.contains(
                #"<If "%{REQUEST_URI} =~ m#/viewer/([a-z]+\.(html|css|js))?$#">"#
                    + "\n    Header always set Content-Security-Policy \"\(policy)\""
                    + "\n    Header always set Referrer-Policy \"no-referrer\""
                    + "\n    Header always set Cache-Control \"no-store\""))
        #expect(
            HostRules.headersFile(pathPrefix: "/shc").contains(
                "/shc/viewer/*\n  Content-Security-Policy: \(policy)\n  Referrer-Policy: no-referrer\n  Cache-Control: no-store"
            ))
    }

    @Test(.enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"))
    func nginxServesTheViewerWithItsHeaders() throws {
        let dir = try TestSupport.tempDir("viewer-nginx")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, key.path, "--issuer", SiteTestSupport.issuer, "--viewer"])
        let server = try NginxServer(root: site, in: dir.appendingPathComponent("nginx"))
        defer { server.stop() }
        for (path, type) in [
            ("/viewer/", "text/html"), ("/viewer/index.html", "text/html"), ("/viewer/viewer.js", "text/javascript"),
            ("/viewer/viewer.css", "text/css"), ("/viewer/codes.js", "text/javascript"),
        ] {
            let response = try HTTPGet.fetch("http://127.0.0.1:\(server.port)\(path)")
            #expect(response.status == 200, "\(path)")
            #expect(response.header("Content-Type") == type, "\(path): \(response.headers)")
            #expect(response.header("Content-Security-Policy") == SiteViewer.contentSecurityPolicy, "\(path)")
            #expect(
                response.header("Referrer-Policy") == "no-referrer" && response.header("Cache-Control") == "no-store",
                "\(path)")
            #expect(response.header("X-Content-Type-Options") == "nosniff", "\(path)")
        }
    }
}
