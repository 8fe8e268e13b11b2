/// Control characters in card content: which ones FHIR forbids in a `string` (FHIR R4 datatypes,
/// `string` regex `[ \r\n\t\S]+`: nothing below U+0020 except tab, CR and LF), and how to print text taken
/// from a card or file so that it cannot drive the terminal (escape sequences, carriage returns that
/// overwrite a line, bells).
public enum ControlCharacters {
    /// True for the characters a FHIR `string` (and a JSON member name in a FHIR resource) may not hold:
    /// U+0000 to U+001F except tab (U+0009), LF (U+000A) and CR (U+000D).
    public static func isForbiddenInFHIRString(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 && scalar.value != 0x09 && scalar.value != 0x0A && scalar.value != 0x0D
    }

    /// True for C0 controls (U+0000 to U+001F, tab, CR and LF included), DEL (U+007F) and the C1 range
    /// (U+0080 to U+009F): what a terminal may act on instead of showing.
    public static func isTerminalControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The first character FHIR forbids in `text`, with its 0-based position in Unicode scalars.
    public static func firstForbidden(in text: String) -> (scalar: Unicode.Scalar, offset: Int)? {
        for (i, scalar) in text.unicodeScalars.enumerated() where isForbiddenInFHIRString(scalar) {
            return (scalar, i)
        }
        return nil
    }

    /// `U+001B`: the code point in the Unicode notation, at least 4 hex digits.
    public static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// `text` with every terminal control character (see `isTerminalControl`) written as a Swift
    /// escape, `\u{1B}`; everything else unchanged. Use it on anything from a card or file before
    /// printing it for a person.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isTerminalControl) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isTerminalControl(scalar) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}
