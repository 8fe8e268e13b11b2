import HealthCardsCore

/// The issuers a verifier trusts, each with its key set and revocation lists, built from bytes in memory
/// (after jwt-kit's `JWTKeyCollection`): nothing is read from disk or fetched.
///
/// A key verifies only cards whose `iss` is the issuer it was added for (the spec finds an issuer's keys at
/// `<iss>/.well-known/jwks.json`, digest section 7): key sets are never pooled across issuers, and a card
/// signed with a key of another issuer's set is `KEY_NOT_FROM_ISSUER`. A value type: build it once, then
/// share it between threads and verifiers freely (`Sendable`).
///
/// ```swift
/// var trust = TrustStore()
/// let keySet = try trust.add(issuer: "https://spec.smarthealth.cards/examples/issuer", jwks: jwksBytes,
///                            crls: ["3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s": crlBytes], now: now)
/// for finding in keySet.findings { print(finding) }
/// ```
public struct TrustStore: Sendable {
    /// The key sets, each bound to its issuer.
    package private(set) var ring = KeyRing()
    /// What was found about each key set added, in the order added (`source` `.keySet`): its findings
    /// (`JWKS_*`, `JWK_*`, `CRL_*`), the issuer it is bound to, and notes on its `x5c` chains.
    public private(set) var keySets: [CredentialReport] = []

    /// An empty store: it trusts no issuer, so every card is `SIG_NOT_CHECKED` (and not `isVerified`).
    public init() {}

    /// The issuers added, each once, in the order added.
    public var issuers: [String] {
        var seen: Set<String> = []
        return ring.sets.compactMap(\.issuer).filter { seen.insert($0).inserted }
    }

    /// Adds an issuer's key set and its revocation lists, and says what is wrong with them.
    ///
    /// Keys that cannot be used (not EC P-256 signing keys, bad coordinates) are left out, with a finding
    /// each; a key set with no usable key leaves every card of the issuer unverifiable (`KEY_SET_INVALID` on
    /// the card, an error, never a verified card). Errors of the key set as a whole, of a key's entry, or of
    /// its revocation list make every card that key verifies invalid (`KEY_SET_INVALID`).
    /// - Parameters:
    ///   - issuer: the `iss` whose key set this is, compared with each card's `iss` exactly (e.g.
    ///     `https://spec.smarthealth.cards/examples/issuer`).
    ///   - jwks: the JWK Set bytes, as published at `<issuer>/.well-known/jwks.json` (digest section 7); at most
    ///     `limits.input.cardFileBytes` are parsed (more: `FILE_TOO_LARGE`).
    ///   - crls: the revocation list bytes of each `kid`, as published at `<issuer>/.well-known/crl/<kid>.json`
    ///     (digest section 8); at most `limits.input.crlFileBytes` each.
    ///   - name: the name findings on the key set are located at; default `<issuer>/.well-known/jwks.json`
    ///     (and a CRL's, `<issuer>/.well-known/crl/<kid>.json`).
    ///   - now: the time, in seconds since 1970, that `x5c` leaf validity and CRL `rid.<timestamp>` entries
    ///     are judged at.
    /// - Returns: the key set's report (also in `keySets`).
    /// - Throws: `HealthCardError(.configuration)` when `issuer` is not an `http(s)://` URL with a host.
    @discardableResult
    public mutating func add(
        issuer: String, jwks: [UInt8], crls: [String: [UInt8]] = [:], name: String? = nil, now: Int64,
        limits: VerifyLimits = VerifyLimits()
    ) throws(HealthCardError) -> CredentialReport {
        try Self.requireIssuerURL(issuer)
        let file = name ?? "\(issuer)/.well-known/jwks.json"
        let base = name.map { "\(FileIO.parent(of: $0))/crl" } ?? "\(issuer)/.well-known/crl"
        var inputs: [String: CRLInput] = [:]
        for (kid, bytes) in crls { inputs[kid] = .bytes(bytes, name: "\(base)/\(kid).json") }
        return add(jwks: jwks, file: file, issuer: issuer, binding: .given, crls: inputs, now: now, limits: limits)
    }

    /// Adds a key set as a program read it: named by its file, bound as the program knows (`binding`; an
    /// unbound one verifies nothing unless `unboundStandsIn`), with CRLs read or not.
    @discardableResult
    package mutating func add(
        jwks: [UInt8], file: String, issuer: String?, binding: KeySetBinding, crls: [String: CRLInput], now: Int64,
        limits: VerifyLimits
    ) -> CredentialReport {
        let result = KeySetCheck.check(bytes: jwks, file: file, issuer: issuer, crls: crls, now: now, limits: limits)
        var report = CredentialReport(source: .keySet, file: file)
        report.findings = result.findings
        report.notes = result.notes
        report.keySetBinding = (issuer, binding)
        report.limitFindings(perCode: limits.findingsPerCode)
        keySets.append(report)
        ring.sets.append(
            KeyRing.KeySet(
                file: file, issuer: issuer, binding: binding, keys: result.keys,
                problems: result.findings.filter(\.isError)))
        return report
    }

    /// Whether one unbound key set, when it is the only key set, stands for the issuer of every card: a
    /// program's explicit choice (the command line's for a bare `--jwks FILE`), off by default. A store built
    /// with `add(issuer:…)` alone never has unbound sets.
    package var unboundStandsIn: Bool {
        get { ring.standInAllowed }
        set { ring.standInAllowed = newValue }
    }

    /// - Throws: `HealthCardError(.configuration)` unless `issuer` is `http(s)://` with a host.
    static func requireIssuerURL(_ issuer: String) throws(HealthCardError) {
        let lower = issuer.lowercased()
        let rest =
            lower.hasPrefix("https://") ? lower.dropFirst(8) : lower.hasPrefix("http://") ? lower.dropFirst(7) : nil
        guard let rest, let host = rest.split(separator: "/", omittingEmptySubsequences: false).first, !host.isEmpty,
            !issuer.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else {
            throw HealthCardError(
                .configuration,
                "the issuer \(Quote.text(issuer, limit: 200)) is not an https URL with a host; a key set is added for the "
                    + "issuer URL that cards carry as iss, e.g. https://issuer.example.org")
        }
    }
}
