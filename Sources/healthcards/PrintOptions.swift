#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// The printing options `issue` and `print` share (docs/printing.md).
enum PrintOptions {
    /// Options that take a value.
    static let valued: Set<String> = ["paper", "issuer-name", "logo", "pdf-combined"]
    /// Options without one.
    static let flags: Set<String> = ["no-lot", "no-performer"]

    static let help = """
          --paper a4|letter     paper size (default: from the locale, LC_ALL/LC_PAPER/LANG: Letter for
                                US, CA, MX, PH and other Letter countries; A4 otherwise, and for C/POSIX)
          --issuer-name NAME    the issuer's name as people know it, printed at the top (default: the host
                                of the issuer URL); at most \(PrintSettings.maxIssuerNameCharacters) characters
          --logo FILE           a PNG or SVG logo for the top of the page (at most 34 × 16 mm on paper)
          --no-lot              leave out each dose's lot number
          --no-performer        leave out who gave each dose or ran each test
          --pdf-combined FILE   also write every card into this one PDF, each person on new pages, in
                                input order (for mass printing); never inside a published site
        """

    /// The print settings from parsed arguments.
    /// - Throws: `HealthCardError(.configuration)` for an unknown paper, `.pdf`/`.io` for a logo that cannot be used.
    static func settings(_ parsed: Arguments, environment: [String: String]) throws -> PrintSettings {
        var settings = PrintSettings(paper: Paper.fromLocale(environment), today: Clock.todayUTC(Clock.nowSeconds()))
        if let text = parsed.value("paper") {
            guard let paper = Paper(rawValue: text.lowercased()) else {
                throw HealthCardError(.configuration, "--paper \(Quote.text(text)) is not known; expected a4 or letter")
            }
            settings.paper = paper
        }
        if let name = parsed.value("issuer-name") {
            guard !name.isEmpty, !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw HealthCardError(
                    .configuration, "--issuer-name must be a non-empty name on one line (no control characters)")
            }
            guard name.count <= PrintSettings.maxIssuerNameCharacters else {
                throw HealthCardError(
                    .configuration,
                    "--issuer-name is \(name.count) characters; at most \(PrintSettings.maxIssuerNameCharacters) fit on the page "
                        + "(the header, the notes and the wallet card name the issuer). Give the name people know it by")
            }
            settings.issuerName = name
        }
        if let path = parsed.value("logo") {
            do { settings.logo = try Logo(bytes: try FileIO.read(path, maxBytes: Logo.maxBytes), source: path) } catch let error
                as HealthCardError
            {
                throw HealthCardError(.configuration, "--logo: \(error.text)")
            }
        }
        settings.showLot = !parsed.has("no-lot")
        settings.showPerformer = !parsed.has("no-performer")
        return settings
    }

    /// The process environment as a dictionary.
    static func environment() -> [String: String] {
        var result: [String: String] = [:]
        for name in ["LC_ALL", "LC_PAPER", "LANG"] {
            if let value = getenv(name) { result[name] = String(cString: value) }
        }
        return result
    }
}
