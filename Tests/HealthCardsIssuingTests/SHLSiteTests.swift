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

/// The host rules for link files, and a real nginx serving a link's file as a receiver fetches it.
@Suite struct SHLSiteTests {
    @Test func rulesServeLinkFilesAsJOSEWithCORSAndNoStore() throws {
        #expect(
            HostRules.nginx.contains(
                """
                location ~ "/shl/[A-Za-z0-9_-]{43}$" {
                    types { }
                    default_type application/jose;
                    add_header Access-Control-Allow-Origin "*" always;
                    add_header Cache-Control "no-store" always;
                }
                """))
        #expect(
            HostRules.apache.contains(
                """
                <FilesMatch "^[A-Za-z0-9_-]{43}$">
                    ForceType application/jose
                    Header always set Access-Control-Allow-Origin "*"
                    Header always set Cache-Control "no-store"
                </FilesMatch>
                """))
        #expect(
            HostRules.headersFile(pathPrefix: "/shc").contains(
                "\n/shc/shl/*\n  Access-Control-Allow-Origin: *\n  Content-Type: application/jose\n  Cache-Control: no-store\n"
            ))
        // The Apache pattern matches a link file name, not a CRL (<kid>.json) or the key set.
        let pattern = try Regex("^[A-Za-z0-9_-]{43}$")
        #expect(try pattern.wholeMatch(in: try SHLDestination.newFileName()) != nil)
        #expect(try pattern.wholeMatch(in: try SHLDestination.newFileName() + ".json") == nil)
    }

    /// `GET <url>?recipient=test` from nginx on 127.0.0.1 with the site's own rules: 200, application/jose,
    /// CORS *, no-store, the file's bytes, which decrypt with the link's key to the card; a withdrawn link is 404.
    @Test(.enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"))
    func nginxServesALinkFile() throws {
        let dir = try TestSupport.tempDir("shl-nginx")
        let (site, key, _) = try SHLTestSupport.site(in: dir)
        let out = dir.appendingPathComponent("out")
        try SHLTestSupport.issue(template: "covid19-vaccination", key: key, site: site, out: out, extra: ["--no-qr"])
        let text = try SHLTestSupport.linkText(out, id: "P-1001")
        let link = try SHLinkText.parse(text)

        let server = try NginxServer(root: site, in: dir.appendingPathComponent("nginx"))
        defer { server.stop() }
        let local =
            "http://127.0.0.1:\(server.port)" + link.url.dropFirst(SHLTestSupport.issuer.count) + "?recipient=test"
        let response = try HTTPGet.fetch(local)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/jose")
        #expect(response.header("Access-Control-Allow-Origin") == "*")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.body == (try SiteTestSupport.bytes(try SHLTestSupport.siteFile(of: text, site: site))))
        let keyBytes = try #require(AES256Key.decode(base64url: link.key))
        let opened = try JWE(compact: String(decoding: response.body, as: UTF8.self)).decrypt(key: keyBytes)
        #expect(opened.plaintext == (try SiteTestSupport.bytes(out.path + "/cards/P-1001.smart-health-card")))
        #expect(opened.parts.contentType == "application/smart-health-card")

        try SiteTestSupport.cli(["revoke", "--site", site, "--link", out.path + "/shl/P-1001.txt"])
        #expect(try HTTPGet.fetch(local).status == 404)
        // Another card's link still works.
        let other = try SHLinkText.parse(try SHLTestSupport.linkText(out, id: "P-1002")).url
        #expect(
            try HTTPGet.fetch("http://127.0.0.1:\(server.port)" + other.dropFirst(SHLTestSupport.issuer.count)).status
                == 200)
    }
}
