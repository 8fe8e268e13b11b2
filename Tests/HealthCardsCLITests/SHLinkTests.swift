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

/// The link payload, labels, the site folder a base URL names, and the link's QR.
@Suite struct SHLinkTests {
    /// The IG's "Example SMART Health Link Generation": this payload, minified and base64url-encoded, is this text.
    static let igPayload = JSONValue.object([
        "url": "https://ehr.example.org/qr/Y9xwkUdtmN9wwoJoN3ffJIhX2UGvCL1JnlPVNL3kDWM/m", "flag": "LP",
        "key": "rxTgYlOaKJPFtcEd0qcceN8wEU4p94SqAwIWQe6uX7Q", "label": "Back-to-school immunizations for Oliver Brown",
    ])
    static let igBare =
        "shlink:/eyJ1cmwiOiJodHRwczovL2Voci5leGFtcGxlLm9yZy9xci9ZOXh3a1VkdG1OOXd3b0pvTjNmZkpJaFgyVUd2Q0wxSm5sUFZOTDNrRFdNL20iLCJmbGFnIjoiTFAiLCJrZXkiOiJyeFRnWWxPYUtKUEZ0Y0VkMHFjY2VOOHdFVTRwOTRTcUF3SVdRZTZ1WDdRIiwibGFiZWwiOiJCYWNrLXRvLXNjaG9vbCBpbW11bml6YXRpb25zIGZvciBPbGl2ZXIgQnJvd24ifQ"

    @Test func igExampleEncodingAndParse() throws {
        #expect(SHLink.scheme + Base64URL.encode(JSONWriter.minified(Self.igPayload)) == Self.igBare)
        let viewer = "https://viewer.example.org#" + Self.igBare
        for text in [Self.igBare, viewer] {
            let link = try SHLinkText.parse(text)
            #expect(link.url == "https://ehr.example.org/qr/Y9xwkUdtmN9wwoJoN3ffJIhX2UGvCL1JnlPVNL3kDWM/m")
            #expect(link.key == "rxTgYlOaKJPFtcEd0qcceN8wEU4p94SqAwIWQe6uX7Q")
            #expect(link.flag == "LP" && link.label == "Back-to-school immunizations for Oliver Brown")
            #expect(link.viewer == (text == viewer ? "https://viewer.example.org#" : nil))
        }
        #expect(SHLinkText.looksLikeLink(viewer) && SHLinkText.looksLikeLink(Self.igBare))
        #expect(!SHLinkText.looksLikeLink("shc:/5676") && !SHLinkText.looksLikeLink("https://example.org/#x"))
        #expect(throws: HealthCardError.self) { try SHLinkText.parse("shlink:/not*base64") }
        #expect(throws: HealthCardError.self) { try SHLinkText.parse("shlink:/" + Base64URL.encode(Array("[1]".utf8))) }
    }

    /// Our links: members in order url, key, exp, flag, label; the viewer in front; the text parses back.
    @Test func linkTextRoundTrip() throws {
        let link = SHLink(
            url: "https://issuer.example.org/shl/" + String(repeating: "A", count: 43),
            key: try AES256Key.random().base64url,
            exp: 1_900_000_000, flag: "U", label: "SMART Health Card", viewer: "https://viewer.example.org/#")
        #expect(JSONWriter.minifiedString(link.payload).hasPrefix(#"{"url":"https://issuer.example.org/shl/AAAA"#))
        #expect(link.payload.objectValue?.keys == ["url", "key", "exp", "flag", "label"])
        #expect(link.text == "https://viewer.example.org/#" + link.bare)
        #expect(try SHLinkText.parse(link.text) == link)
        #expect(try SHLinkText.parse(link.bare).viewer == nil)
    }

    @Test func labels() throws {
        #expect(SHLLabel().render(bundle: nil).label == "SMART Health Card")
        #expect(!SHLLabel().namesThePerson)
        let bundle = try JSONParser.parse(
            #"""
            {"resourceType":"Bundle","entry":[{"resource":{"resourceType":"Patient","name":[{"family":"Testperson","given":["Ada","M."]}]}}]}
            """#)
        let named = try SHLLabel(template: "Vaccinations of {name}")
        #expect(named.namesThePerson)
        #expect(named.render(bundle: bundle).label == "Vaccinations of Ada M. Testperson")
        #expect(!named.render(bundle: bundle).shortened)
        let long = try SHLLabel(template: String(repeating: "x", count: 70) + " {name}")
        let rendered = long.render(bundle: bundle)
        #expect(rendered.shortened && rendered.label.utf16.count <= 80 && rendered.label.hasSuffix("…"))
        #expect(rendered.label.hasPrefix(String(repeating: "x", count: 70) + " Ada"))
        for bad in ["", "  ", "a\nb", "Card of {given}", String(repeating: "y", count: 81)] {
            #expect(throws: HealthCardError.self, "\(bad)") { try SHLLabel(template: bad) }
        }
        // The IG's label is a FHIR string of at most 80 characters: Unicode characters, counted as code points
        // (an emoji is one; a letter with a combining mark is two); a label the toolkit writes is also within 80
        // UTF-16 code units, as a JavaScript receiver counts (an emoji is two).
        #expect(SHLink.labelFits(String(repeating: "é", count: 80)) && !SHLink.labelFits(String(repeating: "é", count: 81)))
        #expect(SHLink.labelFits(String(repeating: "😀", count: 40)) && !SHLink.labelFits(String(repeating: "😀", count: 41)))
        #expect(!SHLink.labelFits(String(repeating: "😀", count: 80)))
        #expect(!SHLink.labelFits(String(repeating: "e\u{301}", count: 41)))
        let said = SHLink.labelLengthProblem(String(repeating: "😀", count: 81))
        #expect(said.hasPrefix("label is 81 Unicode characters (code points); 81 as a reader sees them, 162 UTF-16 code units"), "\(said)")
    }

    @Test func viewers() throws {
        #expect(try SHLOptions.checkViewer("https://viewer.example.org/#") == "https://viewer.example.org/#")
        for bad in [
            "http://viewer.example.org/#", "https://viewer.example.org/", "https://v.example.org/#a#", "https://v x/#",
        ] {
            #expect(throws: HealthCardError.self, "\(bad)") { try SHLOptions.checkViewer(bad) }
        }
    }

    /// A base URL names a folder `shl` under the issuer URL; everything else is refused with the reason.
    @Test func destinations() throws {
        let dir = try TestSupport.tempDir("shl-dest")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let root = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", root, key.path, "--issuer", "https://clinic.example.org/shc"])
        let site = try PublishedSite(root: root)
        let ok = try SHLDestination(site: site, baseURL: "https://clinic.example.org/shc/shl/")
        #expect(ok.baseURL == "https://clinic.example.org/shc/shl" && ok.folder == root + "/shl")
        #expect(
            try SHLDestination(site: site, baseURL: "https://clinic.example.org/shc/links/shl").relativeFolder
                == "links/shl")
        let refusals: [(String, String)] = [
            ("https://clinic.example.org/shl", "is not under the issuer URL https://clinic.example.org/shc"),
            ("https://other.example.org/shc/shl", "is not under the issuer URL"),
            ("http://clinic.example.org/shc/shl", "is not under the issuer URL"),
            ("https://clinic.example.org/shc", "is not under the issuer URL"),
            ("https://clinic.example.org/shc/links", "names the folder 'links'"),
            ("https://clinic.example.org/shc/../shl", "starts with '.'"),
            ("https://clinic.example.org/shc/.well-known/shl", "starts with '.'"),
            ("https://clinic.example.org/shc//shl", "is empty"),
            ("https://clinic.example.org/shc/a%2Fb/shl", "has characters other than"),
            ("https://clinic.example.org/shc/shl?x=1", "query or fragment"),
            ("https://clinic.example.org/shc/" + String(repeating: "a", count: 60) + "/shl", "at most 84"),
        ]
        for (base, reason) in refusals {
            #expect(throws: HealthCardError.self, "\(base)") { try SHLDestination(site: site, baseURL: base) }
            do { _ = try SHLDestination(site: site, baseURL: base) } catch {
                #expect(error.message.contains(reason), "\(base): \(error.message)")
                #expect(error.message.contains("e.g. base URL https://clinic.example.org/shc/shl"), "\(error.message)")
            }
        }
        // URLs map to files of the site, never outside it.
        let name = try SHLDestination.newFileName()
        #expect(SHLDestination.isFileName(name) && !SHLDestination.isFileName(name + "A"))
        #expect(site.localPath(forURL: ok.url(ofFile: name) + "?recipient=test") == root + "/shl/" + name)
        #expect(ok.url(ofFile: name).count <= SHLink.maxURLCharacters)
        for outside in [
            "https://clinic.example.org/shc/../x", "https://clinic.example.org/shcx/shl/a",
            "https://clinic.example.org/shc/",
            "https://clinic.example.org/shc/.well-known/jwks.json", "https://clinic.example.org/other",
        ] {
            #expect(site.localPath(forURL: outside) == nil, "\(outside)")
        }
    }

    /// The link's QR: one byte segment at ECC M, read back by zbar to the exact text (viewer prefix included).
    @Test func linkQRDecodesToTheExactLink() throws {
        let link = SHLink(
            url: "https://issuer.example.org/shl/" + (try SHLDestination.newFileName()),
            key: try AES256Key.random().base64url,
            flag: "U", label: "Vaccinations of Chloé Exampledóttir", viewer: "https://viewer.example.org/#")
        let code = try QRCode(link: link.text)
        let symbols = try SHCQRCodeReader.read(png: try QRImage().png(code))
        #expect(symbols.count == 1)
        #expect(symbols.first?.text == link.text)
        #expect(symbols.first?.errorCorrection == .M)
        #expect(symbols.first?.segments?.map(\.mode) == [.byte])
        #expect(symbols.first?.version == code.version)
    }
}
