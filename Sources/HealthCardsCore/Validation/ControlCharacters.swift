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
        // Every scalar below U+0020 is one UTF-8 byte below 0x20, and no other scalar has such a byte:
        // text without one has nothing to find (the common case, without decoding a scalar).
        guard text.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else { return nil }
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

    /// True for the invisible characters that change how text around them is shown or read: the Unicode
    /// `Bidi_Control` characters (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069: a U+202E
    /// reverses what follows) and the other `Default_Ignorable_Code_Point` characters (U+00AD, U+034F, U+115F,
    /// U+1160, U+17B4, U+17B5, U+180B to U+180F, U+200B to U+200F, U+2060 to U+206F, U+3164, U+FE00 to U+FE0F,
    /// U+FEFF, U+FFA0, U+FFF0 to U+FFF8, U+1BCA0 to U+1BCA3, U+1D173 to U+1D17A, U+E0000 to U+E0FFF; Unicode
    /// 15 `DerivedCoreProperties.txt`): a name or message holding one may not read as it is.
    public static func isInvisibleFormat(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B...0x180F, 0x200B...0x200F, 0x202A...0x202E,
            0x2060...0x206F, 0x3164, 0xFE00...0xFE0F, 0xFEFF, 0xFFA0, 0xFFF0...0xFFF8, 0x1BCA0...0x1BCA3, 0x1D173...0x1D17A,
            0xE0000...0xE0FFF:
            return true
        default:
            return false
        }
    }

    /// True for the space characters that look like an ordinary space (U+0020) but are not one: the no-break
    /// space U+00A0 (what spreadsheets and EHR exports leave after a value), U+2000 to U+200A (spaces of fixed
    /// widths), the narrow no-break space U+202F and the medium mathematical space U+205F. A value holding one
    /// reads like another value that holds a space, or none.
    public static func isLookalikeSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00A0, 0x2000...0x200A, 0x202F, 0x205F: return true
        default: return false
        }
    }

    /// The first character inside `value` that no one sees and that is not part of its script's spelling: a
    /// lookalike space, or an invisible format character other than a joiner or variation selector after a
    /// letter outside ASCII. Nil when there is none.
    public static func hiddenCharacter(in value: String) -> Unicode.Scalar? {
        // Every character it looks for is outside ASCII: ASCII text (most of a card) has none to find.
        guard value.utf8.contains(where: { $0 >= 0x80 }) else { return nil }
        var previous: Unicode.Scalar?
        for scalar in value.unicodeScalars {
            defer { previous = scalar }
            guard scalar.value >= 0x80 else { continue }
            if isLookalikeSpace(scalar) { return scalar }
            guard isInvisibleFormat(scalar) else { continue }
            if isSpelling(scalar), let previous, previous.value >= 0x80, !isInvisibleFormat(previous),
                !isLookalikeSpace(previous)
            {
                continue
            }
            return scalar
        }
        return nil
    }

    /// Joiners and variation selectors, which some scripts and emoji spell with.
    private static func isSpelling(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x200C, 0x200D, 0xFE00...0xFE0F, 0x180B...0x180D, 0x180F, 0xE0100...0xE01EF: return true
        default: return false
        }
    }

    /// What a hidden character is, for messages: `U+00A0 (a no-break space), which looks like a space but is not one`.
    public static func describeHidden(_ scalar: Unicode.Scalar) -> String {
        let name: String
        switch scalar.value {
        case 0x00A0: name = "a no-break space"
        case 0x202F: name = "a narrow no-break space"
        case 0x2000...0x200A, 0x205F: name = "a space of another width"
        case 0x200B: name = "a zero-width space"
        case 0x200C: name = "a zero-width non-joiner"
        case 0x200D: name = "a zero-width joiner"
        case 0xFEFF: name = "a byte order mark (zero-width no-break space)"
        case 0x00AD: name = "a soft hyphen"
        case 0x2060: name = "a word joiner"
        case 0x200E: name = "LEFT-TO-RIGHT MARK, a text direction control"
        case 0x200F: name = "RIGHT-TO-LEFT MARK, a text direction control"
        case 0x061C: name = "ARABIC LETTER MARK, a text direction control"
        case 0x202A: name = "LEFT-TO-RIGHT EMBEDDING, a text direction control"
        case 0x202B: name = "RIGHT-TO-LEFT EMBEDDING, a text direction control"
        case 0x202C: name = "POP DIRECTIONAL FORMATTING, a text direction control"
        case 0x202D: name = "LEFT-TO-RIGHT OVERRIDE, a text direction control"
        case 0x202E: name = "RIGHT-TO-LEFT OVERRIDE, a text direction control"
        case 0x2066: name = "LEFT-TO-RIGHT ISOLATE, a text direction control"
        case 0x2067: name = "RIGHT-TO-LEFT ISOLATE, a text direction control"
        case 0x2068: name = "FIRST STRONG ISOLATE, a text direction control"
        case 0x2069: name = "POP DIRECTIONAL ISOLATE, a text direction control"
        default: name = "an invisible format character"
        }
        let seen: String
        switch scalar.value {
        case 0x202E:
            seen = "which no one sees, and which reverses how the text after it is shown (right to left, letter by letter), "
                + "so what is read is not what is stored"
        case 0x202D:
            seen = "which no one sees, and which forces the text after it to be shown left to right whatever its script, "
                + "so what is read may not be what is stored"
        case 0x202A, 0x202B, 0x2066...0x2068:
            seen = "which no one sees, and which changes the direction the text after it is shown in"
        default:
            seen = isLookalikeSpace(scalar) ? "which looks like a space but is not one" : "which no one sees"
        }
        return "\(codePoint(scalar)) (\(name)), \(seen)"
    }

    /// True for what `escaped` writes as an escape: terminal controls (`isTerminalControl`), invisible
    /// format characters (`isInvisibleFormat`) and spaces that look like U+0020 (`isLookalikeSpace`).
    public static func mustEscape(_ scalar: Unicode.Scalar) -> Bool {
        isTerminalControl(scalar) || isInvisibleFormat(scalar) || isLookalikeSpace(scalar)
    }

    /// `escaped`, and also the private-use characters U+E000 and U+E001 (which once delimited tokens in
    /// messages and may still do so in a program's own text), so that a quoted value (`Quote.text`) is plain.
    public static func escapedValue(_ text: String) -> String {
        let escapedText = escaped(text)
        guard escapedText.unicodeScalars.contains(where: { $0.value == 0xE000 || $0.value == 0xE001 }) else {
            return escapedText
        }
        var out = String.UnicodeScalarView()
        for scalar in escapedText.unicodeScalars {
            if scalar.value == 0xE000 || scalar.value == 0xE001 {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `text` with every character `mustEscape` names (controls, invisible format characters, lookalike spaces)
    /// written as a Swift escape, `\u{1B}`, `\u{202E}`, `\u{A0}`; everything else unchanged. Use it on anything from a card or file
    /// before printing it for a person.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: mustEscape) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if mustEscape(scalar) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}
