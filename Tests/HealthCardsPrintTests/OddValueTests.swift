import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
import HealthCardsTestSupport

/// Values no real issuer has, which used to be accepted and cost a run dearly or produced something no
/// one can use: a payload larger than verifiers inflate, a DNS label of 300 characters, a patient id or
/// a field of megabytes, an issuer name longer than a page. Each is refused with a clear message, at a
/// documented length. Through the real CLI where the value comes from the command line or an input.
@Suite struct OddValueTests {
    static let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
    static let sample = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path

    /// A Bundle whose Patient's family name is 5,000,000 characters: refused before signing with its size and
    /// the 4 MiB limit, not as a failed self-check.
    @Test func payloadOverTheInflateLimitIsRefusedBeforeSigning() throws {
        let dir = try TestSupport.tempDir("odd-payload")
        let key = try TestSupport.demoKey(in: dir)
        var bundle = VerifyForge.bundle(doses: 1).objectValue!
        VerifyForge.changing(&bundle, "Patient") {
            $0["name"] = [.object(["family": .string(String(repeating: "X", count: 5_000_000)), "given": ["Ada"]])]
        }
        let input = try TestSupport.write(
            String(decoding: JSONWriter.minified(.object(bundle)), as: UTF8.self), to: "huge.json", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", key, "--out", out.path, "--nbf", "1700000000",
            "--quiet", input,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let line = try #require(try TestSupport.report(out).first)
        #expect(line["status"]?.stringValue == "rejected")
        let messages = (line["errors"]?.arrayValue ?? []).compactMap { $0["message"]?.stringValue }
        #expect(messages.count == 1, "\(messages)")
        let message = messages.first ?? ""
        #expect(line["errors"]?[0]?["code"]?.stringValue == "DEFLATE_TOO_LARGE", "\(line)")
        #expect(message.hasPrefix("the payload is 4.8 MiB ("), "\(message)")
        #expect(message.contains("over the 4 MiB (4194304 bytes) a verifier inflates"), "\(message)")
        #expect(message.contains("no QR code could hold it"), "\(message)")
        #expect(message.contains("Nothing was signed"), "\(message)")
        #expect(!message.contains("self-check"), "\(message)")
        #expect(BatchTestSupport.cardCount(out) == 0)
    }

    /// DNS allows 63 characters per label and 253 in all (RFC 1035): longer issuer hosts are refused.
    @Test func issuerHostLabelsAndLengthFollowDNS() throws {
        let label63 = String(repeating: "a", count: 63)
        try Payload.validateIssuer("https://\(label63).example.org")
        let long = String(repeating: "a", count: 300)
        #expect(throws: HealthCardError.self) { try Payload.validateIssuer("https://\(long).example.org") }
        do {
            try Payload.validateIssuer("https://\(long).example.org")
            Issue.record("a host label of 300 characters was accepted")
        } catch {
            #expect(error.code == .issMalformed)
            #expect(
                error.message.contains(
                    "has a host label of 300 characters ('aaaaaaaaaaaaaaaaaaaa…' (300 characters, cut)); DNS allows at most 63 per label"
                ), "\(error.message)")
            #expect(error.message.utf8.count < 400)
        }
        // 4 labels of 63 and the TLD: 4 × 64 + 3 = 259 characters.
        let host = Array(repeating: label63, count: 4).joined(separator: ".") + ".org"
        #expect(throws: HealthCardError.self) { try Payload.validateIssuer("https://\(host)") }
        let run = try TestSupport.cli([
            "issue", "--issuer", "https://\(long).example.org", "--key", "k.pem", "--out", "o", "x.json",
        ])
        #expect(run.status == 2)
        #expect(run.stderr.contains("DNS allows at most 63 per label"), "\(run.stderr)")
    }

    /// CSV: an id over 256 bytes rejects its row as a record of its own, without the id in the report; a field
    /// over 4096 bytes rejects its patient, naming the column; the other patients are issued.
    @Test func csvIDsAndFieldsHaveADocumentedLength() throws {
        let dir = try TestSupport.tempDir("odd-csv")
        let key = try TestSupport.demoKey(in: dir)
        let lines = try VerifyFixtures.text(URL(fileURLWithPath: Self.sample)).split(separator: "\n").map(String.init)
        let header = lines[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let idColumn = try #require(header.firstIndex(of: "recip_id"))
        let lotColumn = try #require(header.firstIndex(of: "lot_number"))
        var longID = lines[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        longID[0] = "EV-9001"
        longID[idColumn] = String(repeating: "I", count: 100_000)
        // A second row of P-1002 (its first row is the sample's) with a 5000-byte lot number.
        let p1002 = try #require(lines.first { $0.contains(",P-1002,") })
        var longField = p1002.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        longField[0] = "EV-9002"
        longField[lotColumn] = String(repeating: "L", count: 5000)
        let csv = try TestSupport.write(
            (lines + [longID.joined(separator: ","), longField.joined(separator: ",")]).joined(separator: "\n") + "\n",
            to: "odd.csv", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", "https://issuer.example.org", "--key", key, "--template", Self.template, "--out",
            out.path, "--nbf", "1700000000", "--quiet", csv,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let reportBytes = try VerifyFixtures.bytes(out.appendingPathComponent("report.ndjson"))
        #expect(reportBytes.count < 20_000, "the report repeats the long values: \(reportBytes.count) bytes")
        let report = try TestSupport.report(out)
        let byID = Dictionary(report.map { ($0["id"]?.stringValue ?? "null", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(byID["P-1001"]?["status"]?.stringValue == "issued")
        #expect(byID["P-1003"]?["status"]?.stringValue == "issued")
        let rejected = try #require(byID["P-1002"])
        #expect(rejected["status"]?.stringValue == "rejected")
        let fieldError = rejected["errors"]?[0]?["message"]?.stringValue ?? ""
        #expect(
            fieldError.hasPrefix("column 'lot_number' holds 5000 bytes; a field may hold at most 4096"), "\(fieldError)"
        )
        let orphan = try #require(report.first { $0["id"] == .null })
        #expect(orphan["status"]?.stringValue == "rejected")
        let idError = orphan["errors"]?[0]?["message"]?.stringValue ?? ""
        #expect(
            idError.hasPrefix("the patient id in column 'recip_id' is 100000 bytes long; an id may have at most 256"),
            "\(idError)")
    }

    /// A Bundle's Patient identifier over 256 bytes gives no rid (a warning with its length), not a huge report line.
    @Test func bundleIdentifierOverTheLimitGivesNoRid() {
        var bundle = VerifyForge.bundle(doses: 1).objectValue!
        VerifyForge.changing(&bundle, "Patient") {
            $0["identifier"] = [.object(["system": "urn:mrn", "value": .string(String(repeating: "9", count: 300))])]
        }
        guard case .none(let reason) = PatientIdentity.ofBundle(.object(bundle), system: nil) else {
            Issue.record("a 300-byte identifier gave a rid")
            return
        }
        #expect(reason.contains("is 308 bytes long; a rid is derived from an id of at most 256"), "\(reason)")
    }

    /// `--issuer-name` over 100 characters is refused (it ran off the page); a long host from a card's iss
    /// is cut with "…".
    @Test func issuerNameFitsThePage() throws {
        let (out, site, dir) = try PrintCommandTests.issued("covid19-vaccination")
        let card = out.appendingPathComponent("cards/P-1001.smart-health-card").path
        let long = String(repeating: "n", count: 101)
        let refused = try TestSupport.cli([
            "print", "--jwks", site.path, "--out", dir.appendingPathComponent("p1").path, "--issuer-name", long, card,
        ])
        #expect(refused.status == 2)
        #expect(
            refused.stderr.contains("--issuer-name is 101 characters; at most 100 fit on the page"), "\(refused.stderr)"
        )
        let help = try TestSupport.cli(["print", "--help"]).stdout
        #expect(help.contains("of the issuer URL); at most 100 characters"))
        var settings = PrintSettings(today: "2026-12-01")
        #expect(settings.issuerDisplayName("https://issuer.example.org/path") == "issuer.example.org")
        let host = String(repeating: "h", count: 63) + "." + String(repeating: "i", count: 63) + ".example.org"
        let shown = settings.issuerDisplayName("https://" + host)
        #expect(shown.count == 100 && shown.hasSuffix("…") && host.hasPrefix(String(shown.dropLast())))
        settings.issuerName = "Springfield County Health Department"
        #expect(settings.issuerDisplayName("https://issuer.example.org") == "Springfield County Health Department")
    }

    /// With the longest name allowed, the card still fits the pages it takes without one.
    @Test(.enabled(if: PDFTools.available, PDFTools.missing))
    func longestIssuerNameKeepsThePageCount() throws {
        let (out, site, dir) = try PrintCommandTests.issued("covid19-vaccination")
        let card = out.appendingPathComponent("cards/P-1001.smart-health-card").path
        let name = String(String(repeating: "Springfield County Health Department ", count: 3).prefix(100))
        for (folder, extra) in [("plain", [String]()), ("named", ["--issuer-name", name])] {
            let run = try TestSupport.cli(
                ["print", "--jwks", site.path, "--out", dir.appendingPathComponent(folder).path] + extra + [card])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let plain = try PDFTools.info(dir.appendingPathComponent("plain/P-1001.pdf"))
        let named = try PDFTools.info(dir.appendingPathComponent("named/P-1001.pdf"))
        #expect(named.pages == plain.pages)
        let words = try PDFTools.words(dir.appendingPathComponent("named/P-1001.pdf"))
        for page in words {
            for word in page {
                #expect(word.yMax <= named.height && word.xMax <= named.width, "\(word.text) off the page")
            }
        }
    }
}
