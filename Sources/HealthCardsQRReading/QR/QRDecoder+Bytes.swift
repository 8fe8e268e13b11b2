import HealthCardsCore

extension QRDecoder {
    /// Every QR symbol in an image people send, from its bytes: a PNG or a JPEG (told apart by their first bytes),
    /// ordered top to bottom, then left to right. A SMART Health Card symbol's `text` is `shc:/` and digits (or
    /// `shc:/C/N/` and digits for chunk C of N); `HealthCardVerifier.verify(qrTexts:names:now:)` checks them.
    /// - Parameter maxPixels: the most width × height read, checked from the file's header before any pixel is
    ///   decoded (`InputBudget.imagePixels` by default).
    /// - Returns: an empty array when no decoder finds a readable QR symbol.
    /// - Throws: `HealthCardError(.input)` for an image over `maxPixels`, `.png` for bytes libpng or libjpeg cannot
    ///   decode (or that are neither format), `.qr` when a decoder fails (not when it merely finds nothing).
    public func decode(image: [UInt8], maxPixels: Int = InputBudget.imagePixels) throws -> [DecodedQR] {
        try decode(GrayImage(imageBytes: image, maxPixels: maxPixels))
    }
}
