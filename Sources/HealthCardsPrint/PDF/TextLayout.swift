internal import CPango
import HealthCardsCore
import HealthCardsQR

/// How a piece of text looks: font size in points, weight, colour, alignment.
struct TextStyle: Sendable {
    var size: Double
    var bold = false
    var color = RGB(0.1, 0.1, 0.1)
    var alignment: Alignment = .start
    /// Letters in capitals with a little spacing (labels).
    var tracking: Double = 0

    enum Alignment: Sendable { case start, center, end }

    /// The font families, in order: Noto Sans covers Latin, Greek and Cyrillic; fontconfig falls back to
    /// the other Noto families (Arabic, Hebrew, CJK, ...) for characters it lacks.
    static let families = "Noto Sans, Noto Sans Arabic, Noto Sans Hebrew, Noto Sans CJK JP, sans-serif"
}

/// Text laid out by Pango (Debian `libpango-1.0`, through `pangocairo`): the one owner of Pango
/// objects in the toolkit. Pango shapes every script with HarfBuzz, applies the Unicode bidirectional
/// algorithm (an Arabic or Hebrew name runs right to left), breaks lines at word boundaries (or
/// between characters where a word is longer than the line), and picks a Noto font for each character.
///
/// A layout is made for one `Canvas` and drawn on it; its size is known before drawing.
final class TextLayout {
    private let layout: OpaquePointer
    /// Width of the box in points, when wrapping.
    let boxWidth: Double?
    /// The colour the text is drawn in.
    private let color: RGB

    /// Lays out `text`.
    /// - Parameters:
    ///   - width: wrap to this many points (nil: one line, unlimited).
    ///   - maxLines: at most this many lines; the last shown ends in "…" when the text is longer.
    init(_ text: String, style: TextStyle, width: Double?, maxLines: Int? = nil, on context: TextContext) {
        layout = pango_layout_new(context.context)
        boxWidth = width
        color = style.color
        let font = pango_font_description_from_string(TextStyle.families)
        pango_font_description_set_absolute_size(font, style.size * Double(PANGO_SCALE))
        pango_font_description_set_weight(font, style.bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL)
        pango_layout_set_font_description(layout, font)
        pango_font_description_free(font)
        // The paragraph direction stays left to right, so every line of the page starts on the left;
        // within it, a right-to-left run (an Arabic or Hebrew name) is still laid out right to left.
        pango_layout_set_auto_dir(layout, 0)
        if let width {
            pango_layout_set_width(layout, Int32(clamping: Int((width * Double(PANGO_SCALE)).rounded(.down))))
            pango_layout_set_wrap(layout, PANGO_WRAP_WORD_CHAR)
        }
        if let maxLines {
            pango_layout_set_height(layout, -Int32(clamping: maxLines))
            pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_END)
        }
        switch style.alignment {
        case .start: pango_layout_set_alignment(layout, PANGO_ALIGN_LEFT)
        case .center: pango_layout_set_alignment(layout, PANGO_ALIGN_CENTER)
        case .end: pango_layout_set_alignment(layout, PANGO_ALIGN_RIGHT)
        }
        let attributes = pango_attr_list_new()
        let color = pango_attr_foreground_new(
            UInt16(style.color.r * 65535), UInt16(style.color.g * 65535), UInt16(style.color.b * 65535))
        pango_attr_list_insert(attributes, color)
        if style.tracking != 0 {
            pango_attr_list_insert(
                attributes, pango_attr_letter_spacing_new(Int32(style.tracking * Double(PANGO_SCALE))))
        }
        // A word broken at the end of a line gets no hyphen Pango would add: a lot number, a code or a name
        // holds exactly its own characters on paper.
        pango_attr_list_insert(attributes, pango_attr_insert_hyphens_new(0))
        // No optional ligatures (fi): a ligature glyph stands for several characters, which PDF readers
        // extract as a presentation form (U+FB01) or in the wrong order. The ligatures a script requires
        // (Arabic lam-alef and lam with alef maksura, `rlig`) stay: see docs/printing.md, "The text layer".
        pango_attr_list_insert(attributes, pango_attr_font_features_new("liga 0"))
        pango_layout_set_attributes(layout, attributes)
        pango_attr_list_unref(attributes)
        let clean = TextLayout.printable(text)
        pango_layout_set_text(layout, clean, Int32(clamping: clean.utf8.count))
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(layout)) }

    /// Logical size of the laid-out text in points.
    var size: (width: Double, height: Double) {
        var ink = PangoRectangle()
        var logical = PangoRectangle()
        pango_layout_get_extents(layout, &ink, &logical)
        return (Double(logical.width) / Double(PANGO_SCALE), Double(logical.height) / Double(PANGO_SCALE))
    }

    var height: Double { size.height }

    /// Lines after wrapping.
    var lineCount: Int { Int(pango_layout_get_line_count(layout)) }

    /// Whether Pango shortened the text with "…" to keep within `maxLines`.
    var isEllipsized: Bool { pango_layout_is_ellipsized(layout) != 0 }

    /// The characters no installed font has a glyph for (Pango's unknown glyphs, which print as empty
    /// boxes), as Unicode scalar values, in the order laid out.
    var unknownCharacters: [UInt32] {
        guard pango_layout_get_unknown_glyphs_count(layout) > 0 else { return [] }
        var found: [UInt32] = []
        forEachRun { run, _, _ in
            let glyphs = run.pointee.glyphs.pointee
            for i in 0..<Int(glyphs.num_glyphs) {
                let glyph = glyphs.glyphs[i].glyph
                if glyph != TextLayout.emptyGlyph && glyph & TextLayout.unknownGlyphFlag != 0 && glyph != TextLayout.invalidGlyph {
                    found.append(glyph & ~TextLayout.unknownGlyphFlag)
                }
            }
        }
        return found
    }

    /// Draws the text with its top-left corner at (`x`, `y`), and notes on the canvas any character no font
    /// could draw (`Canvas.unknownCharacters`).
    ///
    /// Each run of glyphs goes to Cairo (`cairo_show_text_glyphs`) in visual order, left to right, with the
    /// characters each cluster of glyphs stands for, as PDF readers expect it: Pango's own renderer hands a
    /// right-to-left run over in logical order, from right to left, and a reader that puts text in reading
    /// order by reversing right-to-left runs (pypdf) then read an Arabic or Hebrew name backwards. The
    /// ellipsis Pango draws for text cut short stands for "…" in the text layer, not for the text it hides.
    func draw(on canvas: Canvas, x: Double, y: Double) {
        canvas.unknownCharacters += unknownCharacters
        canvas.withContext { cr in
            cairo_save(cr)
            defer { cairo_restore(cr) }
            cairo_set_source_rgb(cr, color.r, color.g, color.b)
            guard let text = pango_layout_get_text(layout) else { return }
            forEachRun { run, runX, baseline in
                TextLayout.show(run, text: text, x: x + runX, y: y + baseline, on: cr)
            }
        }
    }

    /// Calls `body` with each run of glyphs, its left edge and its baseline in points from the layout's
    /// top-left corner, line by line, runs left to right (as Pango's renderer places them).
    private func forEachRun(_ body: (UnsafeMutablePointer<PangoGlyphItem>, Double, Double) -> Void) {
        guard let iter = pango_layout_get_iter(layout) else { return }
        defer { pango_layout_iter_free(iter) }
        repeat {
            guard let line = pango_layout_iter_get_line_readonly(iter) else { continue }
            var logical = PangoRectangle()
            pango_layout_iter_get_line_extents(iter, nil, &logical)
            let baseline = Double(pango_layout_iter_get_baseline(iter)) / Double(PANGO_SCALE)
            var runX = Double(logical.x)
            var node = line.pointee.runs
            while let current = node {
                if let run = current.pointee.data?.assumingMemoryBound(to: PangoGlyphItem.self) {
                    body(
                        run, (runX + Double(run.pointee.start_x_offset)) / Double(PANGO_SCALE),
                        baseline - Double(run.pointee.y_offset) / Double(PANGO_SCALE))
                    runX += Double(pango_glyph_string_get_width(run.pointee.glyphs))
                }
                node = current.pointee.next
            }
        } while pango_layout_iter_next_line(iter) != 0
    }

    /// The ISO 15924 code of the script of a Unicode scalar value (`Arab`, `Hani`, `Zyyy` for common
    /// characters, `Zzzz` when unknown), from GLib's Unicode tables.
    static func scriptCode(_ value: UInt32) -> String {
        let tag = g_unicode_script_to_iso15924(g_unichar_get_script(value))
        guard tag != 0 else { return "Zzzz" }
        return String(decoding: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: tag >> $0) }, as: UTF8.self)
    }

    static let emptyGlyph: UInt32 = 0x0FFF_FFFF
    static let invalidGlyph: UInt32 = 0xFFFF_FFFF
    static let unknownGlyphFlag: UInt32 = 0x1000_0000
    static let ellipsisFlag: UInt8 = 1 << 1

    /// Shows one run of glyphs at (`x`, baseline `y`) with its text clusters, left to right.
    private static func show(_ run: UnsafeMutablePointer<PangoGlyphItem>, text: UnsafePointer<CChar>, x: Double, y: Double, on cr: OpaquePointer) {
        let item = run.pointee.item.pointee
        let glyphString = run.pointee.glyphs.pointee
        let count = Int(glyphString.num_glyphs)
        guard count > 0, let font = item.analysis.font,
            let scaled = pango_cairo_font_get_scaled_font(OpaquePointer(font))
        else { return }
        let itemText = UnsafeRawBufferPointer(
            start: UnsafeRawPointer(text) + Int(item.offset), count: Int(item.length))
        let isEllipsis = item.analysis.flags & ellipsisFlag != 0
        // An odd embedding level is a right-to-left run (an Arabic or Hebrew name), drawn in visual order.
        let isRightToLeft = item.analysis.level % 2 == 1
        // The byte offsets (in the item) where clusters start, to find where each ends.
        var starts = Set<Int>()
        for i in 0..<count { starts.insert(Int(glyphString.log_clusters[i])) }
        let sortedStarts = starts.sorted()
        func clusterEnd(_ start: Int) -> Int {
            var low = 0
            var high = sortedStarts.count
            while low < high {
                let mid = (low + high) / 2
                if sortedStarts[mid] <= start { low = mid + 1 } else { high = mid }
            }
            return low < sortedStarts.count ? sortedStarts[low] : itemText.count
        }
        var glyphs: [cairo_glyph_t] = []
        var clusters: [cairo_text_cluster_t] = []
        var utf8: [UInt8] = []
        glyphs.reserveCapacity(count)
        var penX = x
        var i = 0
        while i < count {
            let start = Int(glyphString.log_clusters[i])
            var clusterGlyphs: Int32 = 0
            while i < count && Int(glyphString.log_clusters[i]) == start {
                let info = glyphString.glyphs[i]
                let glyph = info.glyph
                if glyph != emptyGlyph && glyph != invalidGlyph && glyph & unknownGlyphFlag == 0 {
                    glyphs.append(
                        cairo_glyph_t(
                            index: UInt(glyph), x: penX + Double(info.geometry.x_offset) / Double(PANGO_SCALE),
                            y: y + Double(info.geometry.y_offset) / Double(PANGO_SCALE)))
                    clusterGlyphs += 1
                }
                penX += Double(info.geometry.width) / Double(PANGO_SCALE)
                i += 1
            }
            var bytes: ArraySlice<UInt8>
            if isEllipsis {
                bytes = clusters.isEmpty ? Array("…".utf8)[...] : []
            } else {
                let end = max(start, min(clusterEnd(start), itemText.count))
                bytes = Array(itemText[min(start, itemText.count)..<end])[...]
                if isRightToLeft { bytes = visualOrder(bytes) }
            }
            // A line separator (between a name and its other script's form) is the line break itself, no text.
            if bytes.elementsEqual([0xE2, 0x80, 0xA8]) { bytes = [] }
            utf8 += bytes
            // Cairo refuses a cluster of no bytes and no glyphs (an empty glyph of an ellipsis).
            if !bytes.isEmpty || clusterGlyphs > 0 {
                clusters.append(cairo_text_cluster_t(num_bytes: Int32(bytes.count), num_glyphs: clusterGlyphs))
            }
        }
        guard !glyphs.isEmpty else { return }
        cairo_set_scaled_font(cr, scaled)
        utf8.withUnsafeBufferPointer { text in
            text.withMemoryRebound(to: CChar.self) { chars in
                cairo_show_text_glyphs(
                    cr, chars.baseAddress, Int32(chars.count), glyphs, Int32(glyphs.count), clusters,
                    Int32(clusters.count), cairo_text_cluster_flags_t(0))
            }
        }
    }

    /// The characters of one cluster of a right-to-left run in visual order, last letter first: what the PDF's
    /// text holds for a glyph that stands for several letters (a required ligature, lam with alef maksura `لى`,
    /// lam-alef `لا`; a letter and its vowel mark). PDF readers put a right-to-left run into reading order by
    /// reversing its characters one by one (poppler's pdftotext, pypdf, pdf.js), the characters of such a glyph
    /// included: given in reading order, its letters came out swapped (`ليلى` as `ليىل`). Given in visual order,
    /// like the glyphs around it, the reversal gives the name as written. A cluster of one character is as it is.
    static func visualOrder(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.unicodeScalars.count > 1 else { return bytes }
        return Array(String(String.UnicodeScalarView(text.unicodeScalars.reversed())).utf8)[...]
    }

    /// The text with C0, DEL and C1 control characters (a line break inside a name, an escape
    /// sequence) shown as spaces: a printed card shows a person's data, never a control effect.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            return text
        }
        return String(
            String.UnicodeScalarView(
                text.unicodeScalars.map {
                    $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? " " : $0
                }))
    }
}

/// A Pango font map and context: resolution 72 (so Pango sizes are points) and unhinted metrics, as
/// print needs. Each `CardPrinter` has its own, so worker threads never share Pango objects (a
/// Pango font map is not thread-safe; Pango's default map is per thread, and a printer may be made on
/// one thread and used on another).
package final class TextContext {
    private let fontMap: UnsafeMutablePointer<PangoFontMap>
    fileprivate let context: OpaquePointer

    /// - Throws: `HealthCardError(.pdf)` when Pango cannot make a font map or context.
    init(canvas: Canvas) throws {
        guard let fontMap = pango_cairo_font_map_new() else {
            throw HealthCardError(.pdf, "Pango could not make a font map")
        }
        guard let context = pango_font_map_create_context(fontMap) else {
            g_object_unref(UnsafeMutableRawPointer(fontMap))
            throw HealthCardError(.pdf, "Pango could not make a context")
        }
        self.fontMap = fontMap
        self.context = context
        pango_cairo_context_set_resolution(context, 72)
        canvas.withPrintFontOptions { pango_cairo_context_set_font_options(context, $0) }
        pango_context_set_round_glyph_positions(context, 0)
    }

    deinit {
        g_object_unref(UnsafeMutableRawPointer(context))
        g_object_unref(UnsafeMutableRawPointer(fontMap))
    }
}

extension TextContext {
    /// The version of the Pango this process runs with, as Pango reports it (e.g. "1.50.12").
    package static var pangoRuntimeVersion: String { String(cString: pango_version_string()) }
}
