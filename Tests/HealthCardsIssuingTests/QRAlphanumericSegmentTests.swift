import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQRReading
import HealthCardsIssuing
import HealthCardsTestSupport

/// Symbols whose text starts `SHC:/` in upper case, written in alphanumeric mode (the mode a generic encoder
/// picks for upper-case text and digits), used to pass as "OK" with only `QR_PREFIX_CASE`: the segment layout
/// was checked only for a text starting `shc:/` exactly (case `qr-alphanumeric-segments/`, made with Python
/// `qrcode` from the spec's example 00 card and a small card of the spec's key 0 for `https://x.io`). Any layout
/// but [byte `shc:/`, numeric] is `QR_SEGMENTS`, whatever the prefix's case.
@Suite struct QRAlphanumericSegmentTests {
    static let caseDir = VerifyFixtures.cases.appendingPathComponent("qr-alphanumeric-segments")
    static let specJWKS = TestSupport.spec("issuer/.well-known/jwks.json").path
    static let specIssuer = "https://spec.smarthealth.cards/examples/issuer"

    /// The one credential report of an image, verified by the library with the spec's key set for `issuer`.
    static func report(_ name: String, issuer: String) throws -> CredentialReport {
        let verifier = try FileVerifier(keySets: ["\(issuer)=\(specJWKS)"], now: 1_700_000_100)
        let reports = try verifier.verify([caseDir.appendingPathComponent(name).path]).filter { $0.source == .qrImage }
        try #require(reports.count == 1, "\(name): \(reports.count) reports")
        return reports[0]
    }

    /// The segments as the symbol's bit stream holds them: read, and what the case's maker wrote.
    static func modes(_ name: String) throws -> [QRSegment.Mode]? {
        let symbols = try SHCQRCodeReader.read(png: try VerifyFixtures.bytes(caseDir.appendingPathComponent(name)))
        return symbols.first?.segments?.map(\.mode)
    }

    /// Each image's issuer and the segment modes its maker wrote.
    static let alphanumeric: [String: (issuer: String, written: [QRSegment.Mode])] = [
        "tiny-all-alnum-upper.png": ("https://x.io", [.alphanumeric]),
        "tiny-alnum-prefix-alnum-digits.png": ("https://x.io", [.alphanumeric, .alphanumeric]),
        "alnum-upper-prefix.png": (specIssuer, [.alphanumeric, .numeric]),
        "short-alnum-prefix.png": (specIssuer, [.alphanumeric, .numeric]),
    ]

    @Test(arguments: ["tiny-all-alnum-upper.png", "tiny-alnum-prefix-alnum-digits.png", "alnum-upper-prefix.png", "short-alnum-prefix.png"])
    func alphanumericSegmentsAreAnErrorWhateverThePrefixCase(name: String) throws {
        let (issuer, written) = try #require(Self.alphanumeric[name])
        #expect(try Self.modes(name) == written)
        let report = try Self.report(name, issuer: issuer)
        #expect(report.signature == .verified, "\(name)")
        let segments = report.findings.filter { $0.code == .qrSegments }
        #expect(segments.count == 1 && segments.allSatisfy(\.isError), "\(name): \(report.findings.map(\.code.rawValue))")
        #expect(segments.first?.message.contains("alphanumeric") == true, "\(segments.first?.message ?? "")")
        let valid = report.isValid
        #expect(!valid)
        #expect(report.findings.contains { $0.code == .qrPrefixCase })
    }

    /// Controls: `SHC:/` in a byte segment, then numeric, is the right layout (only the case is warned about);
    /// lower-case `shc:/` then alphanumeric digits was already `QR_SEGMENTS`.
    @Test func controls() throws {
        #expect(try Self.modes("short-byte-upper-prefix.png") == [.byte, .numeric])
        let upper = try Self.report("short-byte-upper-prefix.png", issuer: Self.specIssuer)
        #expect(upper.findings.map(\.code) == [.qrPrefixCase], "\(upper.findings.map(\.code.rawValue))")
        #expect(upper.isVerified)
        let lower = try Self.report("tiny-byte-prefix-alnum-digits.png", issuer: "https://x.io")
        #expect(lower.findings.map(\.code) == [.qrSegments], "\(lower.findings.map(\.code.rawValue))")
    }
}
