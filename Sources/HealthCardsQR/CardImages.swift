import HealthCardsCore

/// How a run makes the QR images of its cards (digest section 6).
public struct QRSettings: Sendable {
    /// Make QR symbols and PNG images.
    public var makeQR: Bool
    /// Split JWS longer than 1195 characters into chunked QRs instead of rejecting the QR.
    public var chunk: Bool
    /// How each symbol is drawn as a PNG.
    public var qrImage: QRImage
    /// Each card also gets a SMART Health Link (`issue --shl`): a JWS over the single-QR limit is then
    /// issued without a QR of its own, with a warning, instead of being rejected (the link carries it).
    public var linksOversized: Bool

    public init(makeQR: Bool = true, chunk: Bool = false, qrImage: QRImage = QRImage(), linksOversized: Bool = false) {
        self.makeQR = makeQR
        self.chunk = chunk
        self.qrImage = qrImage
        self.linksOversized = linksOversized
    }
}

/// The QR symbols and PNG images of a signed card (`IssuedCard.jws`).
public struct CardImages: Sendable {
    /// One QR per chunk (one for an unchunked card); empty when QR output is off or the JWS is too long.
    public var codes: [QRCode]
    /// PNG bytes for each of `codes`.
    public var pngs: [[UInt8]]
    /// Why the card has no QR image, or is chunked.
    public var warnings: [HealthCardError]

    /// The QR symbols and PNG images of a signed JWS (none when QR output is off). Deterministic: the
    /// same JWS and settings give the same bytes, which lets a resumed run check images it finds.
    /// Without QR output (`makeQR` false) there is no QR to reject: a JWS over the single-QR limit
    /// gives a warning instead (the card cannot be shown as one QR code; a SMART Health Link can carry it).
    /// - Throws: `HealthCardError(.qr)` when the JWS is over 1195 characters without `chunk` or
    ///   `linksOversized` (the message gives the size, the limit and the options), `.png` from libpng.
    public init(jws: JWS, settings: QRSettings) throws {
        (codes, pngs, warnings) = ([], [], [])
        let length = jws.compact.utf8.count
        if !settings.makeQR {
            guard length > QRNumeric.maxSingleJWSCharacters else { return }
            warnings = [HealthCardError(.qr, "the JWS is \(length) characters; one QR holds at most "
                + "\(QRNumeric.maxSingleJWSCharacters), so this card cannot be shown as one QR code (only as the file). "
                + "Hand it out as the .smart-health-card file or through a SMART Health Link, or put fewer entries in the card")]
            return
        }
        if length > QRNumeric.maxSingleJWSCharacters && !settings.chunk {
            if settings.linksOversized {
                warnings = [HealthCardError(.qr, "the JWS is \(length) characters; one QR holds at most "
                    + "\(QRNumeric.maxSingleJWSCharacters), so the card has no QR image of its own: hand out its SMART Health Link "
                    + "(shl/<id>.png, shl/<id>.txt) or the .smart-health-card file")]
                return
            }
            throw HealthCardError(.qr, code: .qrTooLong, "the JWS is \(length) characters; one QR holds at most \(QRNumeric.maxSingleJWSCharacters). "
                + "Hand it out as a SMART Health Link (docs/shl.md), put fewer entries in the card (e.g. one card per dose series), "
                + "or make chunked QRs (deprecated since SHC 1.3.0)")
        }
        let chunks = QRNumeric.chunks(jws.compact)
        for (i, chunk) in chunks.enumerated() {
            let code = try QRCode(jws: chunk, chunk: i + 1, of: chunks.count)
            codes.append(code)
            pngs.append(try settings.qrImage.png(code))
        }
        if chunks.count > 1 {
            warnings.append(HealthCardError(.qr, "the JWS is \(length) characters, split into \(chunks.count) chunked QRs; chunking is deprecated since SHC 1.3.0 and some verifiers refuse it"))
        }
    }
}
