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

    /// Trusts the issuers of a VCI directory (its signature was verified when it was made): each entry's keys
    /// verify cards of that entry's `iss` only (found by `iss`, then through the entry's `canonical_iss`; a key
    /// by issuer and kid together), and each entry's revocation lists revoke as a site's `crl/<kid>.json`
    /// does. A card whose issuer is neither in the directory nor given a key set of its own is
    /// `DIRECTORY_ISSUER_UNKNOWN` (an error); one of an archival issuer, of keys last retrieved more than
    /// `maxKeyAge` before `now`, or of an issuer in the day's audit errors gets a warning each. The entries' own
    /// findings are not added to `keySets` (there are hundreds); `directoryFindings` lists their errors.
    /// - Parameters:
    ///   - directory: the verified snapshot.
    ///   - pinned: false when the certificate that verified it is the one shipped beside it (a warning on
    ///     nothing here; a program says so).
    ///   - now: the time key ages, `x5c` validity and CRL timestamps are judged at, in seconds since 1970.
    ///   - maxKeyAge: seconds; default `Directory.defaultMaxKeyAge` (365 days).
    public mutating func add(
        directory: Directory, pinned: Bool = true, now: Int64, maxKeyAge: Int64 = Directory.defaultMaxKeyAge,
        limits: VerifyLimits = VerifyLimits()
    ) {
        var sets: [KeyRing.KeySet] = []
        sets.reserveCapacity(directory.issuers.count)
        var problems: [Finding] = []
        var byEntry: [Int: [Finding]] = [:]
        for issuer in directory.issuers {
            let file = "\(Directory.snapshotName) issuerInfo[\(issuer.index)] (\(issuer.name))"
            var crls: [String: CRLInput] = [:]
            for (kid, bytes) in issuer.crlFiles { crls[kid] = .bytes(bytes, name: "\(file) crls[\(kid)]") }
            let result = KeySetCheck.check(
                bytes: issuer.keySetBytes, file: file, issuer: issuer.iss, crls: crls, now: now, limits: limits)
            let errors = result.findings.filter(\.isError)
            // An entry without keys is not a problem of the directory's (its issuer publishes none now).
            let own = errors.filter { $0.code != .jwksNoKeys }
            problems += own
            if !own.isEmpty { byEntry[issuer.position] = own }
            sets.append(KeyRing.KeySet(file: file, issuer: issuer.iss, binding: .directory, keys: result.keys, problems: errors))
        }
        let age = max(0, maxKeyAge)
        ring.directory = KeyRing.DirectoryTrust(
            directory: directory, sets: sets, staleBefore: now > Int64.min + age ? now - age : Int64.min, maxKeyAge: age,
            pinned: pinned)
        directoryFindings = directory.findings + problems
        directoryEntryErrors = byEntry
    }

    /// The errors of each directory entry's keys and CRLs, by the entry's `Directory.Issuer.position`; entries
    /// without errors are absent.
    public private(set) var directoryEntryErrors: [Int: [Finding]] = [:]

    /// The errors found in the directory's entries (keys and revocation lists a card of that issuer would
    /// depend on, `KEY_SET_INVALID` on its cards), and entries left out of it.
    public private(set) var directoryFindings: [Finding] = []

    /// The directory added, if any.
    public var directory: Directory? { ring.directory?.directory }

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
