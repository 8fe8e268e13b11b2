import HealthCardsCore
import HealthCardsVerify

/// Reads QR images and checks the symbols themselves (digest section 6): version at most 22, error
/// correction level, exactly two segments as read from the symbol's bit stream (byte `shc:/`[`C/N/`], then
/// numeric), and the smallest version that fits them.
package enum QRImageCheck {
    /// The pieces of every `shc:/` symbol in a PNG and the symbols holding a SMART Health Link (checked by
    /// `SHLCheck`), or a finding when none can be read.
    package static func read(png: [UInt8], file: String) -> (pieces: [QRPiece], links: [DecodedQR], findings: [Finding]) {
        let symbols: [DecodedQR]
        do { symbols = try SHCQRCodeReader.read(png: png) } catch let error as HealthCardError where error.kind == .input {
            return ([], [], [Finding(.fileTooLarge, error.text, at: .init(file: file))])
        } catch {
            return ([], [], [Finding(.qrImageUnreadable, "the image cannot be read: \(error)", at: .init(file: file))])
        }
        if symbols.isEmpty {
            return ([], [], [Finding(.qrNoSymbol, "no QR symbol was found in the image", at: .init(file: file))])
        }
        var pieces: [QRPiece] = []
        var links: [DecodedQR] = []
        for symbol in symbols {
            if SHLinkText.looksLikeLink(symbol.text) {
                links.append(symbol)
                continue
            }
            var piece = QRPiece(text: symbol.bytes, file: file, symbol: (symbol.version, symbol.errorCorrection))
            piece.findings += symbolFindings(symbol, file: file, chunk: piece.chunk?.index)
            pieces.append(piece)
        }
        return (pieces, links, [])
    }

    static func symbolFindings(_ symbol: DecodedQR, file: String, chunk: Int?) -> [Finding] {
        var found: [Finding] = []
        let at = Finding.Location(file: file, chunk: chunk)
        guard let version = symbol.version, let level = symbol.errorCorrection else {
            found.append(Finding(.qrGridUnreadable, "the symbol's version or ECC level could not be read from the image (rotated or skewed?); they were not checked", at: at))
            return found
        }
        if version > QRCode.maxVersion {
            found.append(Finding(.qrVersionTooHigh, "the symbol is version \(version); SMART Health Cards QRs are version 22 or lower", at: at))
        }
        if level != .L {
            found.append(Finding(.qrECCLevel, "the symbol uses error correction \(level.rawValue); the spec's sizes (1195 characters per QR) assume L, and higher levels make a denser symbol", at: at))
        }
        guard symbol.bytes.starts(with: Array("shc:/".utf8)) else { return found }  // QR_PREFIX says it
        guard let segments = symbol.segments else {
            found.append(Finding(.qrSegmentsUnreadable, "the segment headers could not be read from the symbol's modules (the grid sampled "
                + "from the image does not give back the data zbar decoded: a blurred, skewed or damaged image?); the two-segment layout "
                + "and the smallest version were not checked", at: at))
            return found
        }
        let expected = QRVersionProbe.shcSegments(symbol.bytes)
        let layout = segments.map(\.description).joined(separator: ", ")
        let rule = "a SMART Health Card QR has exactly two segments: byte 'shc:/' (with 'C/N/' when chunked), then numeric with all the digits"
        if segments.count == 1 && segments[0].mode == .byte {
            found.append(Finding(.qrSingleSegment, "the symbol holds one byte segment with the whole text (\(layout)); \(rule). "
                + "Encode it with explicit segments", at: at))
            return found
        }
        guard segments.count == 2, segments[0].mode == .byte, segments[1].mode == .numeric,
            segments[0].data == expected[0].1, segments[1].data == expected[1].1, !expected[1].1.isEmpty
        else {
            found.append(Finding(.qrSegments, "the symbol's segments are \(layout); \(rule)", at: at))
            return found
        }
        guard let smallest = QRVersionProbe.smallestVersion(expected, level: level), version > smallest else { return found }
        found.append(Finding(.qrVersionNotMinimal, "the symbol is version \(version) but its two segments fit version \(smallest) at ECC \(level.rawValue); let the encoder pick the smallest version", at: at))
        return found
    }
}
