import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// `--qr-scale PIXELS` of `issue` and `shl`: pixels per QR module, from `QRImage.minimumReliableScale` to 64.
enum QRScaleOption {
    /// The option's lines in `--help`.
    static let help = """
          --qr-scale PIXELS     pixels per QR module (default \(QRImage.defaultScale); \(QRImage.minimumReliableScale) to 64). Fewer are refused:
                                at 2 px an image scaled down or blurred (by a document program or a screen)
                                is no longer read by zbar (which verify uses) or by every phone scanner, and
                                at 1 px zbar cannot read it at all
        """

    /// The scale `text` gives.
    /// - Throws: `HealthCardError(.configuration)` for anything but a whole number from the minimum to 64.
    static func parse(_ text: String) throws -> Int {
        let minimum = QRImage.minimumReliableScale
        guard let scale = Int(text), (minimum...64).contains(scale) else {
            let small = Int(text).map { $0 >= 1 && $0 < minimum } ?? false
            throw HealthCardError(
                .configuration,
                "--qr-scale \(Quote.text(text)) must be a whole number of pixels per module from \(minimum) to 64"
                    + (small
                        ? "; at fewer than \(minimum) a scaled or blurred image is not read reliably (our verify and "
                            + "common scanners miss it). Leave --qr-scale out for the default \(QRImage.defaultScale)"
                        : ""))
        }
        return scale
    }
}
