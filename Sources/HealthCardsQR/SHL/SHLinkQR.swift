import HealthCardsCore

extension QRCode {
    /// The QR symbol of a SMART Health Link: the link text (with its viewer prefix, when there is one, so a
    /// phone camera opens the viewer) as one byte-mode segment, at error correction **M** as the links
    /// specification recommends ("Sharing User transmits a SMART Health Link"), in the smallest version that
    /// fits. Not the SMART Health Card layout: no numeric segment, no version-22 limit (a link is a few
    /// hundred characters; ECC M holds 2331 bytes at version 40).
    /// - Throws: `HealthCardError(.qr)` when the text fits no QR version.
    public init(link: String) throws {
        try self.init(segments: [(.byte, Array(link.utf8))], level: .M)
    }
}
