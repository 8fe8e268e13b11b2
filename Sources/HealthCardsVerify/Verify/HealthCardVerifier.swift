import HealthCardsCore

/// Verifies SMART Health Cards and Links held in memory, against a `TrustStore`: bytes in, an immutable
/// `VerificationReport` out. Nothing is read from disk or fetched (a link's file comes from the caller's
/// `SHLFileSource`), the time is passed in, and the verifier keeps no state between calls, so one verifier
/// may serve any number of threads at once.
///
/// Every problem found is a `Finding` with a stable `RuleCode` (docs/error-codes.md), a severity and a
/// location; a card is acceptable only when its report `isVerified` (no error, and the signature verified
/// with a key its issuer publishes).
///
/// ```swift
/// let verifier = HealthCardVerifier(trustStore: trust)
/// let report = verifier.verify(jws: record.jws, now: Int64(Date().timeIntervalSince1970))
/// if report.isVerified { … } else { for finding in report.findings { print(finding) } }
/// ```
public struct HealthCardVerifier: Sendable {
    /// The issuers trusted, with their keys and revocation lists.
    public let trustStore: TrustStore
    /// What one call reads, spends and lists at most.
    public let limits: VerifyLimits
    /// Judge SMART Health Links against the CMS Kill the Clipboard profile too (`KTCProfile`, `SHL_KTC`).
    public var killTheClipboard = false

    /// - Parameter killTheClipboard: also judge links against the Kill the Clipboard profile.
    public init(trustStore: TrustStore, limits: VerifyLimits = VerifyLimits(), killTheClipboard: Bool = false) {
        self.trustStore = trustStore
        self.limits = limits
        self.killTheClipboard = killTheClipboard
    }

    /// Verifies a `.smart-health-card` file: `{"verifiableCredential":["<JWS>",…]}` (digest section 5), each
    /// JWS a credential of its own (`CredentialReport.index` 0, 1, …).
    /// - Parameters:
    ///   - bytes: the file's bytes (at most `limits.input.cardFileBytes`; more is `FILE_TOO_LARGE`, not parsed).
    ///   - name: what findings are located at (a file name, a URL); none when nil.
    ///   - now: the time `nbf`, `exp` and clinical dates are judged at, in seconds since 1970.
    public func verify(cardFile bytes: [UInt8], name: String? = nil, now: Int64) -> VerificationReport {
        let ledger = FindingLedger(limit: limits.findingsPerRun)
        let reports = CardFile.check(bytes, file: name, checker: checker(now: now))
        return VerificationReport(now: now, reports: reports.map { ledger.admit($0, perCode: limits.findingsPerCode) })
    }

    /// Verifies one compact JWS (`header.payload.signature`, digest section 1), e.g. HealthKit's
    /// `HKVerifiableClinicalRecord.jws`.
    /// - Parameters:
    ///   - jws: the compact serialization, with nothing around it (whitespace is `JWS_COMPACT_FORM`).
    ///   - name: what findings are located at; none when nil.
    ///   - now: seconds since 1970.
    public func verify(jws: String, name: String? = nil, now: Int64) -> VerificationReport {
        var report = CredentialReport(source: .jws, file: name)
        if jws.utf8.count > limits.fileBytes {
            report.findings.append(
                Finding(
                    .fileTooLarge,
                    "the JWS is \(jws.utf8.count) bytes; at most \(InputBudget.describe(bytes: limits.fileBytes)) are read",
                    at: .init(file: name)))
        } else {
            checker(now: now).check(jws, into: &report)
        }
        let ledger = FindingLedger(limit: limits.findingsPerRun)
        return VerificationReport(now: now, reports: [ledger.admit(report, perCode: limits.findingsPerCode)])
    }

    /// Verifies `shc:/` QR texts (digest section 6): single QRs, and chunk sets `shc:/C/N/…` given in any
    /// order, even mixed with other cards' chunks (they are grouped by what they hold). Each card is one
    /// credential (`source` `.qrText`) whose `files` name its chunks in order.
    /// - Parameters:
    ///   - texts: the texts as scanned (a QR's whole content; `SHC:/` is read, with a warning).
    ///   - names: one name per text for locations (e.g. the image each was scanned from); by default
    ///     `qr 1`, `qr 2`, ….
    ///   - now: seconds since 1970.
    public func verify(qrTexts texts: [String], names: [String]? = nil, now: Int64) -> VerificationReport {
        let named = names.map { $0.count == texts.count } == true
        var pieces: [QRPiece] = []
        var oversized: [CredentialReport] = []
        for (i, text) in texts.enumerated() {
            let name = named ? names![i] : "qr \(i + 1)"
            guard text.utf8.count <= limits.fileBytes else {
                var report = CredentialReport(source: .qrText, file: name)
                report.findings.append(
                    Finding(
                        .fileTooLarge,
                        "the QR text is \(text.utf8.count) bytes; at most \(InputBudget.describe(bytes: limits.fileBytes)) "
                            + "are read (a QR holds under 4,300 characters)", at: .init(file: name)))
                oversized.append(report)
                continue
            }
            pieces.append(QRPiece(text: Array(text.utf8), file: name))
        }
        let ledger = FindingLedger(limit: limits.findingsPerRun)
        let reports = oversized + qrReports(pieces, source: .qrText, now: now)
        return VerificationReport(now: now, reports: reports.map { ledger.admit($0, perCode: limits.findingsPerCode) })
    }

    /// Verifies a SMART Health Link (links-specification): its text (`shlink:/…`, bare or after a viewer URL's
    /// `#`), its payload, and for a `U` link the file `files` gives for its `url`, decrypted with the link's
    /// key, with the card inside verified as a credential of its own. The key is never put in the report.
    /// - Parameters:
    ///   - link: the link text.
    ///   - name: what findings on the link are located at; none when nil (the text holds the key, so it is never
    ///     used as a name).
    ///   - files: where the file of a `U` link comes from; by default none (`SHL_NOT_RESOLVED`, a warning: the
    ///     payload alone was checked).
    ///   - now: seconds since 1970 (the link's `exp` is judged against it, as a hint).
    /// - Returns: the link's report (`source` `.shlink`), then the card(s) in its file.
    public func verify(link: String, name: String? = nil, files: any SHLFileSource = NoSHLFiles(), now: Int64)
        -> VerificationReport
    {
        let ledger = FindingLedger(limit: limits.findingsPerRun)
        let reports = linkChecker(now: now, files: files).check(text: link, file: name, ivs: SHLCheck.IVRegister())
        return VerificationReport(now: now, reports: reports.map { ledger.admit($0, perCode: limits.findingsPerCode) })
    }

    // MARK: What a program's own walker (`FileVerifier`) builds on.

    /// The JWS checker with this verifier's keys and limits, at `now`.
    package func checker(now: Int64) -> JWSCheck { JWSCheck(keyRing: trustStore.ring, now: now, limits: limits) }

    /// The link checker with this verifier's keys and limits, at `now`, reading link files from `files`.
    package func linkChecker(now: Int64, files: any SHLFileSource) -> SHLCheck {
        SHLCheck(files: files, now: now, checker: checker(now: now), ktc: killTheClipboard)
    }

    /// The reports of QR pieces (texts or image symbols): grouped into cards, each checked.
    package func qrReports(_ pieces: [QRPiece], source: CredentialReport.Source, now: Int64) -> [CredentialReport] {
        let checker = checker(now: now)
        return QRAssembly.assemble(pieces, checker: checker).map { set in
            var report = CredentialReport(source: source, files: set.pieces.map(\.file))
            report.findings = set.findings
            report.qrSymbols = set.pieces.compactMap(\.symbol)
            if let jws = set.jws { checker.check(jws, into: &report) }
            return report
        }
    }
}

/// What one check found: one report per credential, link, or input read as neither, in the order found.
/// Immutable; `json` is the shape `healthcards verify --json` prints (docs/verify.md gives the schema).
public struct VerificationReport: Sendable {
    /// The time everything was judged at, in seconds since 1970.
    public let now: Int64
    /// Every report, in the order found (a link's report comes before the card(s) in its file).
    public let reports: [CredentialReport]

    package init(now: Int64, reports: [CredentialReport]) {
        self.now = now
        self.reports = reports
    }

    /// The health cards checked (from card files, JWS, QR texts or images).
    public var credentials: [CredentialReport] { reports.filter(\.isCredential) }
    /// The SMART Health Links checked.
    public var links: [CredentialReport] { reports.filter { $0.source == .shlink } }
    /// Every finding of every report.
    public var findings: [Finding] { reports.flatMap(\.findings) }
    public var errorCount: Int { reports.reduce(0) { $0 + $1.errorCount } }
    public var warningCount: Int { reports.reduce(0) { $0 + $1.warningCount } }
    /// True when no report has an error (warnings allowed). Not that a signature verified: see `isVerified`.
    public var isValid: Bool { errorCount == 0 }
    /// True when there is at least one credential, no report has an error, and every credential's signature
    /// verified with a key of its issuer: the verdict to accept the card(s) on.
    public var isVerified: Bool { isValid && !credentials.isEmpty && credentials.allSatisfy(\.isVerified) }

    /// `{"now", "keySets":[], "credentials":[…], "links":[…], "other":[…], "summary":{…}}`, as
    /// `healthcards verify --json` prints it (docs/verify.md, "JSON output").
    public var json: JSONValue { Self.json(now: now, keySets: [], reports: reports, say: \.message) }

    /// The JSON document for `keySets` and `reports`, findings' messages said by `say`; `extra` members are
    /// added to `summary`.
    package static func json(
        now: Int64, keySets: [CredentialReport], reports: [CredentialReport], say: (Finding) -> String,
        extra: JSONObject = [:]
    ) -> JSONValue {
        let credentials = reports.filter(\.isCredential)
        let links = reports.filter { $0.source == .shlink }
        let other = reports.filter { $0.source == .unknown }
        let all = keySets + reports
        var summary: JSONObject = [
            "credentials": .integer(Int64(credentials.count)), "keySets": .integer(Int64(keySets.count)),
            "links": .integer(Int64(links.count)), "other": .integer(Int64(other.count)),
            "errors": .integer(Int64(all.reduce(0) { $0 + $1.errorCount })),
            "warnings": .integer(Int64(all.reduce(0) { $0 + $1.warningCount })),
            "notVerified": .integer(Int64(credentials.filter { !$0.isVerified }.count
                + links.filter { !($0.isValid && $0.isLinkContentChecked == true) }.count)),
        ]
        for (name, value) in extra { summary[name] = value }
        return .object([
            "now": .integer(now),
            "keySets": .array(keySets.map { $0.json(say: say) }),
            "credentials": .array(credentials.map { $0.json(say: say) }),
            "links": .array(links.map { $0.json(say: say) }),
            "other": .array(other.map { $0.json(say: say) }),
            "summary": .object(summary),
        ])
    }
}
