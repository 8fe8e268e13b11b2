import HealthCardsCore
import HealthCardsQR

/// The codes at the top of a printed card and what the page says about them in plain words: the card's QR
/// code, a SMART Health Link's, or both.
extension CardPrinter {
    /// A QR code at the top right of the first page, with what is printed below it.
    struct TopCode {
        var symbol: QRSymbol
        /// The symbol's printed width without its quiet zone, millimetres.
        var millimetres: Double
        /// A small heading below the code ("SMART Health Card"), or nil.
        var title: String?
        var caption: String
        var alignment: TextStyle.Alignment
    }

    /// The card's own code, 60 mm; titled when a link's code stands beside it.
    func cardCode(_ symbol: QRSymbol, titled: Bool) -> TopCode {
        TopCode(
            symbol: symbol, millimetres: Self.qrMillimetres, title: titled ? "SMART Health Card" : nil,
            caption: Self.cardCaption, alignment: .center)
    }

    /// What the card's own code says below it: how to scan it, and that it needs no internet connection (the
    /// code holds the signed record itself).
    static let cardCaption = "Scan with a phone camera. Works without an internet connection"

    /// What a link's code says, in plain words, about the network: the card is fetched when the link is opened.
    static let linkNeedsInternet = "Opening it needs an internet connection"

    /// The link's code beside the card's: sized by its modules, with a caption saying what a link is.
    func linkCode(_ symbol: QRSymbol, link: PrintedLink, issuerName: String) -> TopCode {
        TopCode(
            symbol: symbol, millimetres: Self.linkMillimetres(symbol), title: "SMART Health Link",
            caption: Self.linkCaption(issuerName: issuerName, link: link), alignment: .start)
    }

    /// The link's code as the only code of a card too large for one QR code (the note explains it).
    func mainLinkCode(_ symbol: QRSymbol, link: PrintedLink) -> TopCode {
        TopCode(
            symbol: symbol, millimetres: Self.linkMillimetres(symbol), title: "SMART Health Link",
            caption: (link.opensInBrowser
                ? "Scan with a phone camera" : "Scan with an app that reads SMART Health Links") + ". "
                + Self.linkNeedsInternet,
            alignment: .center)
    }

    /// What the card's code is and where it works. With a link beside it, which of the two codes is the card
    /// (a shorter text: it stands beside the wallet card).
    static func note(issuerName: String, withLink: Bool = false) -> String {
        guard withLink else {
            return "The QR code is your SMART Health Card: a copy of the record on this page, digitally signed by "
                + "\(issuerName) so that anyone can check it was not changed. The code holds the whole record, so it "
                + "works without an internet connection. Scan it with your phone's camera to "
                + "keep it in Apple Health and Wallet on an iPhone, or in an Android wallet or health app that "
                + "accepts SMART Health Cards. Places that ask for proof scan it with a verifier app, such as the "
                + "SMART Health Card Verifier. Anyone who scans the code can read what is printed here: keep this "
                + "page as private as any medical record, and show it only when you choose to."
        }
        return "The QR code marked SMART Health Card (above, and on the wallet card) is a copy of the record on "
            + "this page, digitally signed by \(issuerName) so that anyone can check it was not changed; it holds "
            + "the whole record and works without an internet connection. Scan it "
            + "with your phone's camera to keep it in Apple Health and Wallet on an iPhone, or in an Android wallet "
            + "or health app that accepts SMART Health Cards; places that ask for proof scan it with a verifier app. "
            + "Anyone who scans either code can read what is printed here: keep this page as private as any "
            + "medical record."
    }

    /// The caption of a link's code printed beside the card's: what a link is, that it can be withdrawn, and
    /// that it is private.
    static func linkCaption(issuerName: String, link: PrintedLink) -> String {
        (link.opensInBrowser
            ? "A link to this same card: scanned with a phone camera, it opens the card in a web browser or in "
                + "an app that reads SMART Health Links. "
            : "A link to this same card: an app that reads SMART Health Links opens the card from it. ")
            + "\(linkNeedsInternet): the card is fetched from \(issuerName). "
            + "\(issuerName) can withdraw the link, and then it stops working. "
            + "Anyone who has this code can open your card: keep it private."
    }

    /// The note of a card that has no QR code of its own: why there is a link instead of several codes, what
    /// the link does, that it can be withdrawn, and that it is private.
    static func linkOnlyNote(issuerName: String, link: PrintedLink) -> String {
        "This card holds too much to fit in one QR code, so instead of several codes it comes as a SMART Health "
            + "Link: the QR code is a link to your SMART Health Card, a copy of the record on this page digitally "
            + "signed by \(issuerName) so that anyone can check it was not changed. "
            + (link.opensInBrowser
                ? "Scan it with your phone's camera to open the card in a web browser, or with an app that reads "
                    + "SMART Health Links. "
                : "Scan it with an app that reads SMART Health Links to open the card. ")
            + "Opening the link needs an internet connection: the card is fetched from \(issuerName). "
            + "An app that does not read links can take the card file (.smart-health-card) instead: ask "
            + "\(issuerName) for it. \(issuerName) can withdraw the link, and then it stops working. Anyone who "
            + "scans the code can open the card: keep this page as private as any medical record, and show it only "
            + "when you choose to."
    }
}
