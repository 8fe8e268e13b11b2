internal import CPango
import HealthCardsCore
import HealthCardsVerify
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

    /// Lays out `text`.
    /// - Parameters:
    ///   - width: wrap to this many points (nil: one line, unlimited).
    ///   - maxLines: at most this many lines; the last shown ends in "…" when the text is longer.
    init(_ text: String, style: TextStyle, width: Double?, maxLines: Int? = nil, on context: TextContext) {
        layout = pango_layout_new(context.context)
        boxWidth = width
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

    /// Draws the text with its top-left corner at (`x`, `y`).
    func draw(on canvas: Canvas, x: Double, y: Double) {
        canvas.move(to: x, y)
        canvas.withContext { pango_cairo_show_layout($0, layout) }
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
