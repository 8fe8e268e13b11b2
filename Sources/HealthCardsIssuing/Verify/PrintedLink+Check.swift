import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsPrint

/// Finding and checking the SMART Health Link that `healthcards print` prints with a card already issued.
extension PrintedLink {
    /// The link `issue --shl` or `healthcards shl` made for the card at `card`, when it is in an output's
    /// `cards/` folder and the link file is there: `X/shl/<name>.txt` for `X/cards/<name>.smart-health-card`.
    /// Nil otherwise.
    public static func file(besideCard card: String) -> String? {
        let folder = FileIO.parent(of: card)
        guard FileIO.basename(folder) == "cards", card.lowercased().hasSuffix(".smart-health-card") else {
            return nil
        }
        let path = FileIO.parent(of: folder) + "/shl/" + FileIO.stem(card) + ".txt"
        return FileIO.isRegularFile(path) ? path : nil
    }

    /// Reads the link in `linkFile` and checks it is one to print with the card whose credentials are
    /// `credentials` (compact JWS, in the card file's order): `verifier` checks it as `healthcards verify` does
    /// (members, lengths, flags, `exp` against its time), and, when one of its link sites (`--shl-site`) holds
    /// the link's file, opens it: the file must hold exactly these credentials. A link that was not opened
    /// (no site given) is printed with a warning saying so.
    /// - Returns: the link and the warnings to show (never the link text: it holds the key).
    /// - Throws: `HealthCardError(.link)` saying why the link must not be printed (not a link, an error
    ///   `verify` finds, its file opens another card), `.io` when the file cannot be read.
    public static func check(linkFile: String, credentials: [String], verifier: FileVerifier) throws -> (
        link: PrintedLink, warnings: [String]
    ) {
        guard let size = FileIO.size(linkFile), size <= SHLinkText.maxCharacters + 16 else {
            throw HealthCardError(
                .link, "\(linkFile) is not a link file: a SMART Health Link is a few hundred characters")
        }
        let text = String(decoding: UTF8BOM.strip(try FileIO.read(linkFile)), as: UTF8.self)
            .trimmingCharacters(in: " \t\r\n")
        guard SHLinkText.looksLikeLink(text), !text.contains(where: { $0.isNewline || $0 == " " }) else {
            throw HealthCardError(
                .link, "\(linkFile) does not hold one SMART Health Link (shlink:/…, or a viewer URL#shlink:/…)")
        }
        // A link withdrawn with `revoke --link` (its marker beside the text) opens nothing once the site is deployed:
        // say so, rather than only that its file is missing.
        if let url = try? SHLinkText.parse(text).url,
            let withdrawal = SHLWithdrawalRecord.recorded(besideLinkFile: linkFile, siteFileName: FileIO.basename(url))
        {
            let name = FileIO.stem(linkFile)
            throw HealthCardError(
                .link, code: .shlWithdrawn,
                "the link \(linkFile) was withdrawn" + (withdrawal.at.map { " on \(Clock.describe($0))" } ?? "")
                    + " (recorded in \(withdrawal.marker)): its file was deleted from the site, so its QR code would open "
                    + "nothing. Print the card without its link, or first make the person \(name) a new link (a withdrawn link "
                    + "is made anew only for a person named to renew) and print again")
        }
        let reports = try verifier.verify([linkFile])
        guard let report = reports.first, report.source == .shlink else {
            throw HealthCardError(.link, "\(linkFile) does not hold a SMART Health Link")
        }
        let errors = reports.flatMap(\.findings).filter(\.isError)
        if !errors.isEmpty {
            throw HealthCardError(
                .link,
                "the link \(linkFile) does not verify: "
                    + errors.prefix(3).map(\.descriptionWithoutHealthData).joined(separator: "; "))
        }
        let opened = reports.dropFirst().compactMap(\.jws)
        var warnings = report.findings.filter { $0.code != .shlNotResolved }.map(\.descriptionWithoutHealthData)
        if reports.count > 1 {
            guard opened == credentials else {
                throw HealthCardError(
                    .link,
                    "the link \(linkFile) opens another card than this one (made for an earlier card?); make the "
                        + "card's link again, or print the card without its link")
            }
        } else {
            warnings.append(
                "the link \(linkFile) was printed without opening its file, so it is not known to open this card: "
                    + "give the issuer's site folder that holds the link's file to check it")
        }
        return (try PrintedLink(text: text), warnings)
    }
}
