import Foundation
import Testing

import HealthCardsCore
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsVerify
import HealthCardsTestSupport

/// The library's own error, message, time, limit and log values (issue 20).
@Suite struct LibraryCoreTests {
    /// A message is in the library's terms: a refused setting names the library parameter it begins with
    /// (`setting`), which a program may say as its own option, and keeps its specific code.
    @Test func messagesAreInTheLibrarysTerms() {
        do {
            try Payload.validateIssuer("http://issuer.example.org")
            Issue.record("an http issuer was accepted")
        } catch {
            #expect(error.code == .issNotHTTPS)
            #expect(error.setting == "issuer")
            #expect(error.message.hasPrefix("issuer 'http://issuer.example.org' "), "\(error.message)")
            #expect(!error.message.contains("--"), "\(error.message)")
        }
        let plain = HealthCardError(.configuration, "no signing key was given")
        #expect(plain.setting == nil && plain.message == "no signing key was given")
        #expect(plain.about("key").setting == "key")
        // A value quoted in a message is escaped, private-use characters included.
        let forged = "\u{E000}sjwks\u{E001}"
        let quoted = HealthCardError(.input, "found \(Quote.text(forged))")
        #expect(quoted.message == #"found '\u{E000}sjwks\u{E001}'"#)
    }

    /// Every error has a code (its rule's, or its kind's general one), a structured location, and a log line
    /// without its message.
    @Test func errorsCarryCodesAndPlaces() {
        let row = HealthCardError(.template, code: .templateValue, "'13/13/2021' is not a date", at: "in.csv:9 column admin_date")
        #expect(row.location == HealthCardError.Location(file: "in.csv", line: 9, column: "admin_date"))
        #expect(row.location.description == "in.csv:9 column admin_date")
        #expect(row.logDescription == "error template TEMPLATE_VALUE at in.csv:9 column admin_date")
        #expect(!row.logDescription.contains("13/13"), "a log line never holds the value")
        let path = HealthCardError(.validation, "x", at: "Bundle.entry[1].resource.status")
        #expect(path.location.path == "Bundle.entry[1].resource.status" && path.location.file == nil)
        #expect(HealthCardError(.io, "disk full").reportedCode == .outputFailed)
        let finding = Finding(.immunizationStatus, "status must be completed", at: .init(path: "Bundle.entry[1].resource.status"))
        let converted = HealthCardError(finding)
        #expect(converted.code == .immunizationStatus && converted.severity == .error && converted.location == finding.location)
        let several = HealthCardError(all: [converted, row])
        #expect(several.all.count == 2 && several.code == .immunizationStatus)
        #expect(several.description.contains("; "))
    }

    /// Kinds are values a client compares, not an enum it must switch over exhaustively.
    @Test func kindsHaveNamesAndGeneralCodes() {
        let kinds: [HealthCardError.Kind] = [
            .configuration, .key, .input, .template, .bundle, .validation, .crypto, .compression, .qr, .png, .io, .link, .pdf,
        ]
        #expect(Set(kinds.map(\.name)).count == kinds.count)
        #expect(Set(kinds.map(\.generalCode)).count == kinds.count)
        #expect(HealthCardError.Kind.configuration.name == "configuration")
    }

    /// One rule set for issuer URLs: issue refuses what verify reports, and `:0443` is no way around `:443`.
    @Test func issuerURLRulesAreOne() throws {
        for iss in ["https://issuer.example.org:0443", "https://issuer.example.org:443", "https://Issuer.example.org",
                    "https://issuer.example.org/a//b", "https://10.0.0.5", "https://issuer.example.org:080"] {
            #expect(throws: HealthCardError.self, "\(iss)") { try Payload.validateIssuer(iss) }
            #expect(IssuerURL.problem(iss)?.code == .issNotCanonical, "\(iss)")
        }
        for iss in ["http://issuer.example.org", "https://issuer.example.org/", "https://issuer.example.org?x=1",
                    "https://issuer.example.org:70000", "https://"] {
            #expect(throws: HealthCardError.self, "\(iss)") { try Payload.validateIssuer(iss) }
            #expect(IssuerURL.problem(iss)?.breaksSpec == true, "\(iss)")
        }
        try Payload.validateIssuer("https://issuer.example.org:8443/shc")
        #expect(IssuerURL.problem("https://spec.smarthealth.cards/examples/issuer") == nil)
    }

    /// The verifier reports a non-canonical iss as a warning, a broken one as an error.
    @Test func verifyWarnsOfANonCanonicalIssuer() throws {
        let forge = try VerifyForge()
        var claims = VerifyForge.claims()
        claims["iss"] = "https://ISSUER.example.org"
        let card = try forge.card(try forge.jws(claims: claims))
        let findings = try forge.verify([card], keySets: []).flatMap(\.findings)
        #expect(findings.contains { $0.code == .issNotCanonical && $0.severity == .warning }, "\(findings)")
        #expect(!findings.contains { $0.code == .issMalformed })
    }

    /// A fixed clock decides what "now" is for an issuer: a card dated after it is refused.
    @Test func theIssuersClockDecidesNow() throws {
        let key = try P256Key.generate()
        let settings = IssueSettings(issuer: "https://issuer.example.org", notBefore: 1_600_000_000)
        #expect(throws: HealthCardError.self) {
            _ = try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: FixedWallClock(1_500_000_000))
        }
        let issuer = try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: FixedWallClock(1_700_000_000))
        #expect(issuer.clock.nowSeconds() == 1_700_000_000)
    }

    /// Limits are values a run is given: a CSV record over the run's own budget is refused, under the default not.
    @Test func aRunReadsWithinItsOwnLimits() throws {
        let dir = try TestSupport.tempDir("limits")
        let template = try Template(
            bytes: try FileIO.read(VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path),
            source: "template")
        let csv = try FileIO.read(VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path)
        let path = try TestSupport.write(String(decoding: csv, as: UTF8.self), to: "in.csv", in: dir)
        _ = try CSVTemplateInput(path: path, template: template)
        var small = InputLimits.standard
        small.csvRecordBytes = 40
        let error = #expect(throws: HealthCardError.self) { _ = try CSVTemplateInput(path: path, template: template, limits: small) }
        #expect(error?.code == .inputTooLarge, "\(String(describing: error))")
    }

    /// A record over its budget names a quote never closed only when a quoted field was open: an unquoted row that
    /// is simply too long was told to "check for a quote that is never closed" (it has none).
    @Test func anOverlongRowBlamesAQuoteOnlyWhenOneIsOpen() throws {
        let dir = try TestSupport.tempDir("limits-quote")
        let long = String(repeating: "x", count: 100)
        let unquoted = try Self.overBudgetError("a,b\n1,2\n3,\(long)\n", in: dir)
        #expect(unquoted?.code == .inputTooLarge)
        #expect(unquoted?.text.contains("in.csv:3: the record starting on this line is longer than") == true, "\(String(describing: unquoted))")
        #expect(unquoted?.text.contains("no quoted field was open") == true && unquoted?.text.contains("never closed") == false,
                "\(String(describing: unquoted))")
        let open = try Self.overBudgetError("a,b\n1,\"2\n\(long)\n", in: dir)
        #expect(open?.code == .inputTooLarge)
        #expect(open?.text.contains("a quoted field opened on line 2 (") == true && open?.text.contains("never closed") == true,
                "\(String(describing: open))")
    }

    /// The error reading `text` as CSV with records of at most 64 bytes.
    static func overBudgetError(_ text: String, in dir: URL) throws -> HealthCardError? {
        var small = InputLimits.standard
        small.csvRecordBytes = 64
        let reader = try CSVReader(path: try TestSupport.write(text, to: "in.csv", in: dir), limits: small)
        return #expect(throws: HealthCardError.self) { while try reader.next() != nil {} }
    }

    /// A redacted id is stable and does not show the id.
    @Test func logRedactionHidesIds() {
        let a = LogRedaction.fingerprint("P-1001")
        #expect(a == LogRedaction.fingerprint("P-1001") && a != LogRedaction.fingerprint("P-1002"))
        #expect(a.count == 12 && !a.contains("1001"))
        let record = LogRecord(.warning, "batch.file-rejected", error: HealthCardError(.input, code: .csvQuoting, "Ada's row", at: "in.csv:3"))
        #expect(record.message == "error input CSV_QUOTING at in.csv:3" && record.fields["code"] == "CSV_QUOTING")
    }
}
