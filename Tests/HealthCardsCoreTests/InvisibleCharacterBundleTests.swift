import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// A FHIR Bundle's strings are held to what a CSV value is (`INPUT_INVISIBLE_CHARACTER`): a character no one sees
/// inside a lot number, a name or a performer is refused when issuing (`STRING_INVISIBLE_CHARACTER`, an error) and
/// reported in someone else's card (a warning). A variant hunt found `issue` signing them from Bundle input
/// ("lotNumber":"000\u200b0001") and `verify` silent on them.
@Suite struct InvisibleCharacterBundleTests {
    /// The forge's one-dose Bundle with `from` replaced by `to` in its minified JSON, minimized, and judged.
    func findings(_ from: String, _ to: String, purpose: BundleValidator.Purpose) throws -> BundleValidator.Findings {
        let text = JSONWriter.minifiedString(VerifyForge.bundle(doses: 1))
        #expect(text.contains(from))
        let changed = text.replacingOccurrences(of: from, with: to)
        return BundleValidator.validate(
            try BundleMinimizer.minimize(try JSONParser.parse(changed)), now: Clock.nowSeconds(), purpose: purpose)
    }

    @Test(arguments: [
        (#""0000001""#, "\"000\u{200B}0001\"", "Bundle.entry[1].resource.lotNumber", "U+200B"),
        (#""0000001""#, "\"000\u{2060}0001\"", "Bundle.entry[1].resource.lotNumber", "U+2060"),
        (#""0000001""#, "\"000\u{00AD}0001\"", "Bundle.entry[1].resource.lotNumber", "U+00AD"),
        (#""Testperson""#, "\"Testperson\u{00A0}\"", "Bundle.entry[0].resource.name[0].family", "U+00A0"),
        (#""ABC General Hospital""#, "\"ABC\u{202E} General Hospital\"", "Bundle.entry[1].resource.performer[0].actor.display", "U+202E"),
    ])
    func hiddenCharactersAreRefusedWhenIssuingAndReportedWhenVerifying(
        from: String, to: String, path: String, codePoint: String
    ) throws {
        let issuing = try findings(from, to, purpose: .issuing)
        let refused = issuing.errors.filter { $0.code == .stringInvisibleCharacter }
        #expect(refused.count == 1 && refused.first?.location.path == path, "\(issuing.all)")
        #expect(refused.first?.message.contains(codePoint) == true, "\(refused.first?.message ?? "")")
        // Escaped, so the message shows what the value holds.
        #expect(refused.first?.message.contains("\\u{") == true)
        let verifying = try findings(from, to, purpose: .verifying)
        #expect(!verifying.errors.contains { $0.code == .stringInvisibleCharacter })
        #expect(verifying.warnings.filter { $0.code == .stringInvisibleCharacter }.count == 1)
    }

    /// What a script spells with is not refused: a zero-width non-joiner inside a Persian name.
    @Test func aJoinerInsideAPersianNameIsSpelling() throws {
        let f = try findings(#""Testperson""#, "\"\u{0645}\u{06CC}\u{200C}\u{062E}\u{0648}\u{0627}\u{0647}\u{0645}\"", purpose: .issuing)
        #expect(!f.all.contains { $0.code == .stringInvisibleCharacter }, "\(f.all)")
        // The unchanged Bundle has none either.
        #expect(try !findings(#""0000001""#, #""0000001""#, purpose: .issuing).all.contains { $0.code == .stringInvisibleCharacter })
    }
}
