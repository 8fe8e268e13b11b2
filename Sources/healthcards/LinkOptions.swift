import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// The SMART Health Link options shared by `issue --shl` and `healthcards shl`: base URL, label, exp, viewer.
enum LinkOptions {
    /// Option names of one command.
    struct Names {
        var base: String
        var label: String
        var exp: String
        var renew: String
        var longTerm: String
        var viewer = "viewer"
        var content = "content"
        var ktc = "ktc"

        /// `issue`: `--shl BASE_URL --shl-label TEXT --shl-exp SECONDS --shl-renew ID --shl-long-term --viewer URL#
        /// --content WHAT --ktc`.
        static let issue = Names(base: "shl", label: "shl-label", exp: "shl-exp", renew: "shl-renew", longTerm: "shl-long-term")
        /// `shl`: `--base-url BASE_URL --label TEXT --exp SECONDS --renew ID --long-term --viewer URL# --content WHAT --ktc`.
        static let shl = Names(base: "base-url", label: "label", exp: "exp", renew: "renew", longTerm: "long-term")
    }

    /// The valued options of links, for `Arguments`.
    static func valued(_ names: Names) -> Set<String> { [names.content] }
    /// The flags of links, for `Arguments`.
    static func flags(_ names: Names) -> Set<String> { [names.longTerm, names.ktc] }

    /// The help lines of the link options shared by `issue` and `shl` (`--content`, `--ktc`, long-term).
    static func help(_ names: Names) -> String {
        let hours = KTCProfile.maxLifetimeSeconds / 3600
        func option(_ name: String, _ lines: [String]) -> String {
            let head = "  --" + name
            let pad = head.count < 24 ? String(repeating: " ", count: 24 - head.count) : "\n" + String(repeating: " ", count: 24)
            return head + pad + lines.joined(separator: "\n" + String(repeating: " ", count: 24))
        }
        return [
            option(
                "\(names.content) card|bundle|both",
                [
                    "what each link's file holds: card (the default) the .smart-health-card file",
                    "(cty application/smart-health-card, signed); bundle the person's shared FHIR",
                    "Bundle (cty application/fhir+json: a collection with the Patient and the card's",
                    "resources, urn:uuid: fullUrls, timestamp the card's nbf); both: a U link holds",
                    "one file, so the signed card (docs/shl.md). With issue --pdf, a bundle also holds",
                    "the printed card as a DocumentReference (LOINC 60591-5, application/pdf)",
                ]),
            option(
                names.longTerm,
                [
                    "flag LU (long-term): the content may change; a later run re-encrypts the",
                    "current content under the same key and file name with a fresh IV",
                ]),
            option(
                names.ktc,
                [
                    "CMS Kill the Clipboard profile: flag U; --\(names.exp) required, at most \(hours) hours",
                    "ahead (the profile suggests 5-15 minutes for a link shown on a screen, 24-48",
                    "hours for one on paper: --\(names.exp) +15m, +48h); content bundle unless",
                    "--\(names.content) says otherwise (a warning then). Static links never have P",
                ]),
        ].joined(separator: "\n")
    }

    /// The link stage the options ask for, or nil when the base URL option is absent.
    /// - Throws: as `options`.
    static func stage(
        _ parsed: Arguments, names: Names, site: PublishedSite?, outDir: String, access: OutputAccess,
        makeQR: Bool, qrImage: QRImage, now: Int64
    ) throws -> SHLStage? {
        guard
            let (destination, options) = try options(
                parsed, names: names, site: site, makeQR: makeQR, qrImage: qrImage, now: now)
        else { return nil }
        return SHLStage(destination: destination, options: options, outDir: outDir, access: access)
    }

    /// Where the link files go and what the links carry, or nil when the base URL option is absent. Prints
    /// a warning when the label names the person.
    /// - Throws: `HealthCardError(.configuration)`: link options without the base URL, a base URL without `--site`
    ///   or not under the site's issuer (`SHLDestination`), a bad label, viewer or exp.
    static func options(
        _ parsed: Arguments, names: Names, site: PublishedSite?, makeQR: Bool, qrImage: QRImage, now: Int64
    ) throws -> (SHLDestination, SHLOptions)? {
        guard let base = parsed.value(names.base) else {
            for name in [names.label, names.exp, names.viewer, names.renew, names.content]
            where parsed.value(name) != nil {
                throw HealthCardError(
                    .configuration, "--\(name) is an option of the SMART Health Link; give --\(names.base) BASE_URL too")
            }
            for name in [names.longTerm, names.ktc] where parsed.has(name) {
                throw HealthCardError(
                    .configuration, "--\(name) is an option of the SMART Health Link; give --\(names.base) BASE_URL too")
            }
            return nil
        }
        guard let site else {
            throw HealthCardError(
                .configuration,
                "--\(names.base) needs --site SITE: the link files are written into the issuer's site folder (laid out by "
                    + "`healthcards site --out SITE --issuer URL KEY...`), which the host serves at the issuer URL")
        }
        let destination = try SHLDestination(site: site, baseURL: base, option: "--\(names.base)")
        var options = SHLOptions(makeQR: makeQR, qrImage: qrImage)
        if let text = parsed.value(names.label) {
            options.label = try SHLLabel(template: text, option: "--\(names.label)")
            if options.label.namesThePerson {
                printError(
                    "warning: --\(names.label) puts the Patient's name in each link's label, which anyone who sees the "
                        + "link or its QR code can read; use it only when the people asked for it")
            }
        }
        if let text = parsed.value(names.exp) {
            let value = try linkTime(names.exp, text, now: now)
            guard value > now else {
                throw HealthCardError(
                    .configuration,
                    "--\(names.exp) \(value) (\(Clock.describe(value))) has passed; receivers would take the link as stale. "
                        + "Give a time in the future, or leave it out")
            }
            options.exp = value
        }
        if let text = parsed.value(names.viewer) { options.viewer = try SHLOptions.checkViewer(text) }
        // Ids whose withdrawn (or unlocatable) link is replaced by a new one: named one by one, never all at once.
        options.renew = Set(parsed.values(names.renew).map { OutputNames.safe(PatientIdentity.normalize($0)) })
        let ktc = parsed.has(names.ktc)
        if let text = parsed.value(names.content) {
            guard let content = SHLContent(rawValue: text) else {
                throw HealthCardError(
                    .configuration, "--\(names.content) \(Quote.text(text, limit: 40)) is not card, bundle or both")
            }
            options.content = content
        } else if ktc {
            options.content = .bundle
        }
        if options.content == .both {
            printError(
                "warning: --\(names.content) both: a static link (flag U) names one file, so each link carries the signed card "
                    + "(its Bundle is inside it); use --\(names.content) bundle for the FHIR Bundle alone")
        }
        options.longTerm = parsed.has(names.longTerm)
        if ktc { try checkKTC(options, names: names, now: now) }
        return (destination, options)
    }

    /// The Kill the Clipboard profile's rules (`KTCProfile`) for the links of a run: refuses what it forbids, warns
    /// where the links would differ from it.
    /// - Throws: `HealthCardError(.configuration)`: no exp, or one further ahead than `KTCProfile.maxLifetimeSeconds`.
    static func checkKTC(_ options: SHLOptions, names: Names, now: Int64) throws {
        let hours = KTCProfile.maxLifetimeSeconds / 3600
        guard let exp = options.exp else {
            throw HealthCardError(
                .configuration,
                "--\(names.ktc): the Kill the Clipboard profile requires exp; give --\(names.exp) (e.g. +15m for a link shown "
                    + "on a screen, +48h for one on paper; at most \(hours) hours ahead)")
        }
        guard exp - now <= KTCProfile.maxLifetimeSeconds else {
            throw HealthCardError(
                .configuration,
                "--\(names.ktc): --\(names.exp) \(exp) (\(Clock.describe(exp))) is \(Self.duration(exp - now)) ahead; the "
                    + "profile's links are short-lived: at most \(hours) hours (it suggests 5-15 minutes on a screen, 24-48 "
                    + "hours on paper)")
        }
        if options.content != .bundle {
            printError(
                "warning: --\(names.ktc): the profile shares a FHIR Bundle (application/fhir+json); these links carry the "
                    + "signed card (--\(names.content) \(options.content.rawValue)), which CMS's reference reader also accepts")
        }
        if options.longTerm {
            printError(
                "warning: --\(names.ktc): the profile's links are U; these are LU (long-term), which its receivers may not poll")
        }
        printError(
            "warning: --\(names.ktc): the profile says senders SHALL audit every access (recipient and time): keep the "
                + "host's access logs with their query strings (the rules of `healthcards site`) and read them with "
                + "`healthcards shl audit` (docs/shl.md)")
    }

    /// A link time: integer seconds since 1970, or `+N` followed by `s`, `m`, `h` or `d`, that long after `now`.
    /// - Throws: `HealthCardError(.configuration)` as `TimeOption.parse`.
    static func linkTime(_ name: String, _ text: String, now: Int64) throws -> Int64 {
        if text.hasPrefix("+"), let unit = text.last, let scale = ["s": 1, "m": 60, "h": 3600, "d": 86_400][unit],
            let count = Int64(text.dropFirst().dropLast()), count > 0, count <= 36_500 * 86_400 / scale
        {
            return now + count * Int64(scale)
        }
        if text.hasPrefix("+") {
            throw HealthCardError(
                .configuration, "--\(name) \(Quote.text(text, limit: 40)) is not +N with s, m, h or d (e.g. +15m, +48h)")
        }
        return try TimeOption.parse(name, text, example: now + 31_536_000)
    }

    /// `90 minutes`, `3 hours`, `12 days`: a rough length for messages.
    static func duration(_ seconds: Int64) -> String {
        if seconds < 7200 { return "\(seconds / 60) minutes" }
        if seconds < 172_800 { return "\(seconds / 3600) hours" }
        return "\(seconds / 86_400) days"
    }
}
