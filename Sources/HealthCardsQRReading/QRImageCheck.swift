import HealthCardsCore
import HealthCardsQR
import HealthCardsVerify

/// Reads QR images and checks the symbols themselves (digest section 6): version at most 22, error
/// correction level, exactly two segments as read from the symbol's bit stream (byte `shc:/`[`C/N/`], then
/// numeric), and the smallest version that fits them.
package enum QRImageCheck {
    /// The pieces of every `shc:/` symbol in a PNG and the symbols holding a SMART Health Link (checked by
    /// `SHLCheck`), or a finding when none can be read. `QR_DECODE_BUDGET` (a decoder not run, symbols past
    /// `QRDecoder.maxSymbols` not checked) goes on the first piece, or into the findings when there is none.
    package static func read(png: [UInt8], file: String) -> (pieces: [QRPiece], links: [DecodedQR], findings: [Finding]) {
        read(image: png, file: file)
    }

    /// As `read(png:file:)` for a PNG or a JPEG, told apart by their first bytes.
    /// - Parameter maxPixels: the most width × height decoded (`InputLimits.imagePixels`), checked from the
    ///   header; over it, `FILE_TOO_LARGE`.
    package static func read(image bytes: [UInt8], file: String, maxPixels: Int = InputBudget.imagePixels)
        -> (pieces: [QRPiece], links: [DecodedQR], findings: [Finding])
    {
        let symbols: [DecodedQR]
        let image: GrayImage
        let budget: [Finding]
        let tried: String
        do {
            image = try GrayImage(imageBytes: bytes, maxPixels: maxPixels)
            let decoder = try QRDecoder()
            symbols = try decoder.decode(image)
            budget = decoder.budgetNotes.map {
                Finding(.qrDecodeBudget, $0 + "; symbols there may not have been read (docs/verify.md, \"Budgets\")", at: .init(file: file))
            }
            tried = decoder.triedSummary
        } catch let error as HealthCardError where error.kind == .input {
            return ([], [], [Finding(.fileTooLarge, error.text, at: .init(file: file))])
        } catch {
            let format = QRImageFormat.sniff(bytes)?.rawValue ?? "image"
            return ([], [], [Finding(.qrImageUnreadable, "the \(format) cannot be read: \(error). Save the image again as a PNG or a JPEG "
                + "(a screenshot or a new scan will do) and check that copy", at: .init(file: file))])
        }
        if symbols.isEmpty {
            return ([], [], [Finding(.qrNoSymbol, noSymbolMessage(image, tried: tried), at: .init(file: file))] + budget)
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
        // What a budget left unread is said once for the image: on its first card symbol's credential, or beside
        // its links.
        if pieces.isEmpty { return (pieces, links, budget) }
        pieces[0].findings += budget
        return (pieces, links, [])
    }

    static func symbolFindings(_ symbol: DecodedQR, file: String, chunk: Int?) -> [Finding] {
        var found: [Finding] = []
        let at = Finding.Location(file: file, chunk: chunk)
        guard let version = symbol.version, let level = symbol.errorCorrection else {
            found.append(Finding(.qrGridUnreadable, "the symbol was read (by \(symbol.readBy.rawValue)), but its version and ECC level could "
                + "not be: the module grid cannot be sampled from the image (too blurred, too small, in strong perspective or "
                + "partly covered) and zxing-cpp's error-corrected codewords were not there to read them from; the version limit, "
                + "the ECC level, the two-segment layout and the smallest version were not checked. Give a sharper, "
                + "larger or straighter image of the QR to have them checked", at: at))
            return found
        }
        if version > QRCode.maxVersion {
            found.append(Finding(.qrVersionTooHigh, "the symbol is version \(version); SMART Health Cards QRs are version 22 or lower", at: at))
        }
        if level != .L {
            found.append(Finding(.qrECCLevel, "the symbol uses error correction \(level.rawValue); the spec's sizes (1195 characters per QR) assume L, and higher levels make a denser symbol", at: at))
        }
        // Any case: `SHC:/` is read (QR_PREFIX_CASE warns), so its symbol's layout is judged as well; other texts are
        // QR_PREFIX's.
        let prefix = Array("shc:/".utf8)
        guard symbol.bytes.count >= prefix.count, zip(symbol.bytes, prefix).allSatisfy({ QRPiece.lower($0) == $1 }) else { return found }
        guard let segments = symbol.segments else {
            found.append(Finding(.qrSegmentsUnreadable, "the segment headers could not be read from the symbol's modules (the grid sampled "
                + "from the image does not give back the data \(symbol.readBy.rawValue) decoded, and zxing-cpp's error-corrected codewords "
                + "were not there or did not either: a blurred, skewed or damaged image); the two-segment layout "
                + "and the smallest version were not checked. Give a sharper image of the QR to have them checked", at: at))
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

    /// What to say when no decoder found a symbol: the passes that ran (`QRDecoder.triedSummary`; only those), what
    /// usually causes it, what this image shows of it, and what to do.
    static func noSymbolMessage(_ image: GrayImage, tried: String = "") -> String {
        var seen: [String] = []
        // A card's QR is version 10 to 22 (57 to 105 modules, with the quiet zone 65 to 113): under about 1.5
        // pixels a module no decoder finds it.
        if min(image.width, image.height) < 160 {
            seen.append("the image is only \(image.width) × \(image.height) pixels, too few for the 65 to 113 modules (quiet zone "
                + "included) of a card's QR at 2 pixels or more per module")
        }
        var histogram = [Int](repeating: 0, count: 256)
        let step = max(1, image.pixels.count / 250_000)
        var total = 0
        for i in stride(from: 0, to: image.pixels.count, by: step) {
            histogram[Int(image.pixels[i])] += 1
            total += 1
        }
        func percentile(_ p: Double) -> Int {
            var seenCount = 0
            for (value, count) in histogram.enumerated() {
                seenCount += count
                if Double(seenCount) > Double(total) * p { return value }
            }
            return 255
        }
        let dark = percentile(0.02), light = percentile(0.98)
        if light - dark < 64 {
            seen.append("the image has little contrast (its dark and light parts are \(dark) and \(light) of 255): faded print, "
                + "glare or a dim photo")
        }
        return "no QR symbol was found in the image (\(image.width) × \(image.height) pixels"
            + (tried.isEmpty ? "" : "; tried: " + tried) + "). "
            + (seen.isEmpty ? "" : "Here " + seen.joined(separator: "; ") + ". ")
            + "What usually causes it: too few pixels per module (a thumbnail, a scan under 150 dpi, a photo from far away); "
            + "no quiet zone (the symbol needs a light margin 4 modules wide: cropped too tight, or printed against a dark or "
            + "busy background); glare, a reflection or a shadow across the symbol; blur (out of focus, moving) or heavy JPEG "
            + "compression; a symbol cut off at the edge of the image, creased or partly covered. What to do: scan it at 300 dpi, "
            + "or photograph it flat, evenly lit without reflections, in focus, filling about half the frame with its margin "
            + "showing; or check the card's own file (.smart-health-card) or the QR text instead"
    }
}
