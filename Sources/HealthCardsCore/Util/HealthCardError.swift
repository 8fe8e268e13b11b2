/// The one error type of the toolkit: a kind (which stage or concern failed), a sentence a person
/// understands (what was found, what was expected, what to do), and where it happened.
public struct HealthCardError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Which part of the pipeline or configuration failed.
    public enum Kind: String, Sendable, Codable {
        /// Bad command-line arguments or configuration (exit status 2).
        case usage
        /// A key file or key material that cannot be used.
        case key
        /// An input file that cannot be read or parsed (CSV, JSON, NDJSON).
        case input
        /// A template that is malformed, or a row value that does not fit its placeholder.
        case template
        /// A Bundle that cannot be minimized (e.g. a reference that resolves to nothing).
        case bundle
        /// Content that a verifier would reject.
        case validation
        /// A cryptographic operation failed in OpenSSL.
        case crypto
        /// DEFLATE or INFLATE failed.
        case compression
        /// A QR symbol cannot be made (too long, above version 22).
        case qr
        /// PNG encoding or decoding failed.
        case png
        /// An image other than a PNG (a JPEG) cannot be decoded, or bytes are no image format that is read.
        case image
        /// Reading or writing a file failed.
        case io
        /// A SMART Health Link could not be made, or an earlier one was replaced or updated.
        case link
        /// A printable card (PDF page) cannot be drawn: Cairo, Pango or a logo image failed.
        case pdf
    }

    public var kind: Kind
    /// What was found, what was expected, and what to do.
    public var message: String
    /// Where: a FHIR path (`Bundle.entry[1].resource.occurrenceDateTime`), a CSV column, a file.
    public var location: String?

    public init(_ kind: Kind, _ message: String, at location: String? = nil) {
        self.kind = kind
        self.message = message
        self.location = location
    }

    public var description: String {
        if let location { return "\(location): \(message)" }
        return message
    }
}
