import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
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
        var viewer = "viewer"

        /// `issue`: `--shl BASE_URL --shl-label TEXT --shl-exp SECONDS --shl-renew ID --viewer URL#`.
        static let issue = Names(base: "shl", label: "shl-label", exp: "shl-exp", renew: "shl-renew")
        /// `shl`: `--base-url BASE_URL --label TEXT --exp SECONDS --renew ID --viewer URL#`.
        static let shl = Names(base: "base-url", label: "label", exp: "exp", renew: "renew")
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
            for name in [names.label, names.exp, names.viewer, names.renew] where parsed.value(name) != nil {
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
            let value = try TimeOption.parse(names.exp, text, example: now + 31_536_000)
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
        return (destination, options)
    }
}
