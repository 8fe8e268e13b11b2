import HealthCardsCore

/// What one verifier accepts and reports at most, so that no input, however it is made, costs more time,
/// memory or output than these bounds (docs/verify.md, "Budgets"). A value per verifier
/// (`HealthCardVerifier`, `TrustStore.add`): the input sizes are Core's `InputLimits` (defaults
/// `InputBudget`'s); the rest bound what a verifier spends and lists. A program may pass smaller ones (a
/// server) or larger ones.
public struct VerifyLimits: Sendable, Equatable {
    /// Input sizes and counts: `cardFileBytes` (a `.smart-health-card` file, a compact JWS, one `shc:/` text,
    /// a key set: 1 MiB; more is `FILE_TOO_LARGE`, not parsed), `credentialsPerFile` (64), `payloadBytesPerFile`
    /// (16 MiB once inflated; past either, a file's other credentials are `FILE_TOO_LARGE`), `crlFileBytes` (a
    /// revocation list: 16 MiB, more is `CRL_INVALID`), and the image sizes a program's QR reader applies.
    public var input = InputLimits()
    /// Most bytes of a SMART Health Link's file (a compact JWE): 4 MiB (`JWE.maxCompactBytes`).
    public var linkFileBytes: Int = JWE.maxCompactBytes
    /// Most findings of one rule code listed for one credential (or key set, or link): 20. The next one
    /// says how many more there were ("… and N more"), and the others are not listed.
    public var findingsPerCode: Int = 20
    /// Most findings listed in one check (one call of `HealthCardVerifier`, or one run of a program over many
    /// files): 100,000. Past it, each credential lists only its first error (so its verdict stands) and one
    /// `FINDINGS_CAPPED` finding saying how many were left out.
    public var findingsPerRun: Int = 100_000
    /// Most ECDSA signature verifications spent on one credential: 64 (one is the usual cost: the key its
    /// `kid` names; the rest look for the key that did sign it, in the issuer's and other issuers' key sets).
    /// Past it, the keys not tried are said in the finding; a key the kid names left untried is
    /// `SIG_NOT_CHECKED`, an error.
    public var signatureVerificationsPerCredential: Int = 64
    /// Most ECDSA signature verifications spent telling apart the QR chunk sets of one call (each candidate
    /// last chunk is tried against the keys): 4,096. Past it, chunks are matched by their form alone.
    public var signatureVerificationsPerGrouping: Int = 4096
    /// Most bytes of a credential's payload (once inflated) that its JSON report (`CredentialReport.json`) repeats:
    /// 256 KiB, several times a real card's. A larger payload is still checked, and `CredentialReport.payload`
    /// keeps its members but only the first `summaryEntries` Bundle entries (memory stays bounded); the JSON gives `"payload":null` and `"payloadOmitted":{"bytes":N}` instead, so
    /// the report of a hostile file stays small.
    public var echoedPayloadBytes: Int = 256 * 1024
    /// Most Bundle entries the readable summary of one credential lists a line for (`summaryLines`): 100;
    /// the rest are counted in one line.
    public var summaryEntries: Int = 100

    /// The defaults above.
    public init() {}

    /// `input.cardFileBytes`.
    package var fileBytes: Int { input.cardFileBytes }
    /// `input.credentialsPerFile`.
    package var credentialsPerFile: Int { input.credentialsPerFile }
    /// `input.payloadBytesPerFile`.
    package var payloadBytesPerFile: Int { input.payloadBytesPerFile }
    /// `input.crlFileBytes`.
    package var crlBytes: Int { input.crlFileBytes }
}

/// A count of ECDSA verifications left (`VerifyLimits.signatureVerificationsPerCredential`,
/// `…PerGrouping`): one per check, made for it and dropped after, so no verifier holds state between calls.
package final class SignatureBudget {
    package private(set) var remaining: Int
    /// Verifications refused because the budget was spent.
    package private(set) var refused = 0

    package init(_ limit: Int) { remaining = max(0, limit) }

    /// True (and one less left) when a verification may be made.
    package func spend() -> Bool {
        guard remaining > 0 else {
            refused += 1
            return false
        }
        remaining -= 1
        return true
    }
}
