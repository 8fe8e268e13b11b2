import HealthCardsCore

/// What one verifier accepts and reports at most, so that no input, however it is made, costs more time,
/// memory or output than these bounds (docs/verify.md, "Budgets"). A value per verifier
/// (`HealthCardVerifier`, `TrustStore.add`): the defaults are `InputBudget`'s, and a program may pass
/// smaller ones (a server) or larger ones.
public struct VerifyLimits: Sendable, Equatable {
    /// Most bytes of a `.smart-health-card` file, a compact JWS, the `shc:/` texts of one call, or a key set
    /// (`jwks.json`): 1 MiB (`InputBudget.cardFileBytes`). Larger input is `FILE_TOO_LARGE` and not parsed.
    public var fileBytes: Int = InputBudget.cardFileBytes
    /// Most credentials (JWS) checked in one `.smart-health-card` file: 64; the rest are `FILE_TOO_LARGE`.
    public var credentialsPerFile: Int = InputBudget.credentialsPerFile
    /// Most payload bytes, once inflated, checked in one `.smart-health-card` file: 16 MiB. Once a file's
    /// payloads reach this, its other credentials are not checked (`FILE_TOO_LARGE`).
    public var payloadBytesPerFile: Int = InputBudget.payloadBytesPerFile
    /// Most bytes of one revocation list (`crl/<kid>.json`): 16 MiB; a larger one is `CRL_INVALID`.
    public var crlBytes: Int = InputBudget.crlFileBytes
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
    /// Past it, the keys not tried are said in the finding.
    public var signatureVerificationsPerCredential: Int = 64
    /// Most ECDSA signature verifications spent telling apart the QR chunk sets of one call (each candidate
    /// last chunk is tried against the keys): 4,096. Past it, chunks are matched by their form alone.
    public var signatureVerificationsPerGrouping: Int = 4096

    /// The defaults above.
    public init() {}
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
