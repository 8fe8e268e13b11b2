import HealthCardsCore
import HealthCardsQR

/// A SMART Health Link printed with its card (`issue --pdf --shl`, `healthcards print` with a link): the link
/// text as handed out and its QR symbol (byte mode, error correction **M**, as the links specification asks;
/// `QRCode(link:)`).
///
/// The text holds the key that opens the card: it is drawn only as the QR code, never as text, and never
/// logged.
public struct PrintedLink: Sendable {
    /// The link as handed out: `shlink:/…`, or `<viewer URL>#shlink:/…`.
    public let text: String
    /// The link's QR symbol (ECC M).
    public let code: QRCode
    /// Whether a phone camera opens it in a web browser: the link starts with a viewer URL (`--viewer`). A
    /// bare `shlink:/` link opens only in an app that reads SMART Health Links.
    public let opensInBrowser: Bool

    /// - Parameter text: the link text (`SHLink.text`, or a line of `OUT/shl/<id>.txt` without its newline).
    /// - Throws: `HealthCardError(.qr)` when the text fits no QR version at ECC M (over 2331 bytes).
    public init(text: String) throws {
        self.text = text
        code = try QRCode(link: text)
        opensInBrowser = SHLinkText.split(text)?.viewer != nil
    }
}
