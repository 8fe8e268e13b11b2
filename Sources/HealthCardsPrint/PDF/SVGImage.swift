internal import CRsvg
import HealthCardsCore
import HealthCardsQR

/// An SVG image parsed by librsvg (Debian `librsvg2-2`): the one owner of librsvg objects in the
/// toolkit, used for an issuer's logo. The SVG is loaded from bytes without a base URL, so it cannot
/// pull in other files or URLs. A handle is used by one thread at a time (each `CardPrinter` parses its
/// own).
package final class SVGImage {
    private let handle: UnsafeMutablePointer<RsvgHandle>
    /// Where the SVG came from, for messages.
    private let source: String
    /// The SVG's own aspect ratio, width / height (1 when it states no size or view box).
    let aspectRatio: Double

    /// - Throws: `HealthCardError(.pdf)` with librsvg's message when the bytes are not an SVG it can read.
    init(svg bytes: [UInt8], source: String) throws {
        var error: UnsafeMutablePointer<GError>?
        let handle = bytes.withUnsafeBufferPointer {
            rsvg_handle_new_from_data($0.baseAddress, gsize($0.count), &error)
        }
        guard let handle else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            throw HealthCardError(
                .pdf, "\(source) starts like XML but is not an SVG image that can be read (librsvg: \(message)); expected "
                    + "an SVG file or a PNG file")
        }
        self.handle = handle
        self.source = source
        var width = 0.0
        var height = 0.0
        if rsvg_handle_get_intrinsic_size_in_pixels(handle, &width, &height) != 0, width > 0, height > 0 {
            aspectRatio = width / height
        } else {
            var hasViewBox: gboolean = 0
            var viewBox = RsvgRectangle()
            rsvg_handle_get_intrinsic_dimensions(handle, nil, nil, nil, nil, &hasViewBox, &viewBox)
            aspectRatio =
                hasViewBox != 0 && viewBox.width > 0 && viewBox.height > 0 ? viewBox.width / viewBox.height : 1
        }
        guard aspectRatio.isFinite, aspectRatio > 0.01, aspectRatio < 100 else {
            g_object_unref(UnsafeMutableRawPointer(handle))
            throw HealthCardError(
                .pdf, "\(source) has an aspect ratio of \(aspectRatio); a logo must be between 1:100 and 100:1")
        }
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(handle)) }

    /// Draws the SVG into the box (`x`, `y`, `width`, `height`, points) of the canvas, aspect kept.
    /// - Throws: `HealthCardError(.pdf)` with librsvg's message when rendering fails.
    func draw(on canvas: Canvas, x: Double, y: Double, width: Double, height: Double) throws {
        var viewport = RsvgRectangle(x: x, y: y, width: width, height: height)
        var error: UnsafeMutablePointer<GError>?
        let ok = canvas.withContext { rsvg_handle_render_document(handle, $0, &viewport, &error) }
        if ok == 0 {
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            if let error { g_error_free(error) }
            throw HealthCardError(.pdf, "\(source) is an SVG image librsvg cannot draw: \(message)")
        }
    }
}

extension SVGImage {
    /// The version of the librsvg this process runs with, as librsvg reports it (e.g. "2.54.7").
    package static var librsvgRuntimeVersion: String { "\(rsvg_major_version).\(rsvg_minor_version).\(rsvg_micro_version)" }
}
