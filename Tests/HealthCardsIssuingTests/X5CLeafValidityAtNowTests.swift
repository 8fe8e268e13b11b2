import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsTestSupport

/// The x5c leaf must be valid at `--now`: otherwise `JWK_X5C_VALIDITY` is an error on the card it verifies (and a
/// warning on the key set, whose other keys are not affected). A leaf valid now but not at the card's `nbf` stays a warning on the card (the spec's example
/// 01 is signed after its example leaf expired). Fixtures: `Tests/Fixtures/x5c-chains/` (README there).
@Suite struct X5CLeafValidityAtNowTests {
    static let issuer = "https://issuer.example.org"

    static func verify(_ name: String, now: Int64) throws -> (keySet: CredentialReport, card: CredentialReport) {
        let verifier = try FileVerifier(keySets: ["\(issuer)=\(X5CChainCompletenessTests.keySet(name))"], now: now)
        let set = try #require(verifier.keySetReports.first)
        let card = try #require(try verifier.verify([X5CChainCompletenessTests.card(name)]).last)
        return (set, card)
    }

    /// Leaf valid 2022-01-01 to 2023-01-01, now 2023-11-14: a warning on the key set, an error on the card.
    @Test func leafExpiredAtNowIsAnError() throws {
        let (set, card) = try Self.verify("expired-at-now", now: 1_700_000_100)
        let onSet = try #require(set.findings.first { $0.code == .jwkX5CValidity }, "\(set.findings)")
        #expect(onSet.severity == .warning && onSet.location.path == "keys[0].x5c[0]")
        #expect(onSet.message.contains("valid from 2022-01-01 00:00:00 UTC to 2023-01-01 00:00:00 UTC, not now (2023-11-14"),
                "\(onSet.message)")
        let onCard = try #require(card.findings.first { $0.code == .jwkX5CValidity }, "\(card.findings)")
        #expect(onCard.severity == .error)
        #expect(onCard.message.contains("which does not include now (2023-11-14"), "\(onCard.message)")
        #expect(card.signature == .verified && !card.isValid)
    }

    /// Leaf valid from 2025-01-01: not yet valid now (2023), an error; valid now (2027) but not at the card's nbf
    /// (2023-06-22), a warning, and the card is valid.
    @Test func leafNotYetValidAtNowIsAnErrorButOnlyAtNbfAWarning() throws {
        let (set, card) = try Self.verify("notyet-at-now", now: 1_700_000_100)
        #expect(set.findings.map { "\($0.severity.rawValue) \($0.code.rawValue)" } == ["warning JWK_X5C_VALIDITY"])
        #expect(card.findings.contains { $0.code == .jwkX5CValidity && $0.severity == .error }, "\(card.findings)")
        #expect(!card.isValid)

        let (later, laterCard) = try Self.verify("notyet-at-now", now: 1_800_000_000)
        #expect(later.findings.isEmpty, "\(later.findings)")
        let warning = try #require(laterCard.findings.first { $0.code == .jwkX5CValidity }, "\(laterCard.findings)")
        #expect(warning.severity == .warning)
        #expect(warning.message.contains("does not include the card's nbf (2023-06-22 16:19:24 UTC); it is valid now"),
                "\(warning.message)")
        #expect(laterCard.isValid && laterCard.signature == .verified)
    }

    /// The rule code's usual severity is error now; the nbf-only warning is set on its finding.
    @Test func codeIsAnErrorByDefault() {
        #expect(RuleCode.jwkX5CValidity.severity == .error)
    }
}
