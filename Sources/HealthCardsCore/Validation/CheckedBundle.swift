/// A card's FHIR Bundle after the one rule set (`BundleValidator`) has judged it: the Bundle, the profile
/// that judged it (vaccination, lab, or generic SMART Health Card), and every finding. Every input makes
/// one (a template's CSV rows, a `.json` or `.ndjson` Bundle: `minimizing`), `verify` makes one from
/// each card it reads (`asFound`), and the issuer signs only from one: a rule added to the validator
/// applies to every input, every card issued and every card verified.
///
/// It can only be made by checking, so its findings always belong to its Bundle.
public struct CheckedBundle: Sendable {
    /// The Bundle: minimized for issuing, as found in the card for verifying.
    public let bundle: JSONValue
    /// The profile whose rules judged it.
    public let profile: BundleProfile
    /// Every finding, errors and warnings, each with a code and a FHIR path into `bundle`.
    public let findings: [Finding]
    /// For each entry of `bundle`, its index in the Bundle it was made from (minimizing lists doses and
    /// lab results by date), to trace a finding back to its input row.
    package let origins: [Int]

    private init(bundle: JSONValue, findings: BundleValidator.Findings, origins: [Int]) {
        self.bundle = bundle
        self.profile = findings.profile
        self.findings = findings.all
        self.origins = origins
    }

    /// The errors: a card with any is not issued (and is invalid in `verify`).
    public var errors: [Finding] { findings.filter(\.isError) }
    /// The warnings: reported, the card is still issued.
    public var warnings: [Finding] { findings.filter { !$0.isError } }
    /// True when no finding is an error.
    public var isAcceptable: Bool { !findings.contains(where: \.isError) }

    /// Minimizes an input Bundle (`BundleMinimizer`: digest section 3, doses and lab results by date)
    /// and checks it for issuing.
    /// - Parameter now: seconds since 1970 to judge future dates against (default: now).
    /// - Throws: `HealthCardError` (`all`: every problem) when the Bundle cannot be minimized (not a Bundle, no entries, a
    ///   reference that resolves to nothing), each with the FHIR path in the input.
    public static func minimizing(_ bundle: JSONValue, now: Int64?) throws(HealthCardError)
        -> CheckedBundle
    {
        let (minimized, origins) = try BundleMinimizer.minimizeKeepingOrigins(bundle)
        return CheckedBundle(
            bundle: minimized, findings: BundleValidator.validate(minimized, now: now, purpose: .issuing),
            origins: origins)
    }

    /// Checks a Bundle as found in a card, changing nothing (`verify`).
    /// - Parameter now: seconds since 1970 to judge future dates against (`verify --now`); nil skips it.
    public init(asFound bundle: JSONValue, now: Int64?) {
        let count = bundle["entry"]?.arrayValue?.count ?? 0
        self.init(
            bundle: bundle, findings: BundleValidator.validate(bundle, now: now, purpose: .verifying),
            origins: Array(0..<count))
    }

    /// `NBF_BEFORE_EVENT` for each dose or lab result dated after `nbf` (a card cannot be issued before
    /// what it records; see `DateRules`). Only the vaccination and lab profiles date their entries.
    /// - Parameters:
    ///   - nbf: the card's `nbf`, whole seconds since 1970.
    ///   - severity: an error when issuing; a warning in `verify` (verifiers do not check it).
    public func eventsAfter(notBefore nbf: Int64, severity: Finding.Severity) -> [Finding] {
        profile == .generic ? [] : DateRules.eventsAfterNotBefore(bundle, nbf: nbf, severity: severity)
    }
}
