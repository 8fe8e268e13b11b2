import HealthCardsCore
import HealthCardsVerify

/// What a CSV field holds once the characters no one sees are dealt with: spreadsheets and EHR exports leave a
/// no-break space after a value, a zero-width space from a copy and paste, a byte order mark inside a field
/// (NHSDigital/manage-vaccinations-in-schools #3410, OpenRefine #5246). Signed as they are, a name or a lot
/// number would differ from the one everyone reads, and a date would be refused with a message in which the
/// cause is invisible.
///
/// - Around a value, they are trimmed (`trimmed`): ASCII whitespace, spaces that look like U+0020
///   (`ControlCharacters.isLookalikeSpace`) and invisible format characters (`ControlCharacters.isInvisibleFormat`).
/// - Inside a value, they are refused (`hiddenCharacter`): the row's patient gets no card, and the message shows
///   the character escaped (`\u{A0}`). The zero-width joiner and non-joiner (U+200C, U+200D) and variation
///   selectors are kept after a letter of a script that writes them (Persian, the Indic scripts, emoji): there
///   they are part of the spelling, not an accident of the export.
/// - The patient id column is normalized instead (`PatientIdentity.normalize`), the same way `revoke` takes an id.
enum FieldText {
    /// `value` without the whitespace and invisible characters around it.
    static func trimmed(_ value: String) -> String {
        let scalars = value.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, isEdge(first) || isEdge(last) else { return value }
        guard let start = scalars.firstIndex(where: { !isEdge($0) }),
            let end = scalars.lastIndex(where: { !isEdge($0) })
        else { return "" }
        return String(scalars[start...end])
    }

    /// Trimmed around a value: ASCII whitespace, lookalike spaces, invisible format characters.
    private static func isEdge(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D: return true
        case 0..<0x80: return false
        default: return ControlCharacters.isLookalikeSpace(scalar) || ControlCharacters.isInvisibleFormat(scalar)
        }
    }

    /// The first character inside `value` that no one sees and that is not part of its script's spelling: a
    /// lookalike space, or an invisible format character other than a joiner or variation selector after a
    /// letter outside ASCII. Nil when there is none.
    static func hiddenCharacter(in value: String) -> Unicode.Scalar? {
        var previous: Unicode.Scalar?
        for scalar in value.unicodeScalars {
            defer { previous = scalar }
            guard scalar.value >= 0x80 else { continue }
            if ControlCharacters.isLookalikeSpace(scalar) { return scalar }
            guard ControlCharacters.isInvisibleFormat(scalar) else { continue }
            if isSpelling(scalar), let previous, previous.value >= 0x80, !ControlCharacters.isInvisibleFormat(previous),
                !ControlCharacters.isLookalikeSpace(previous)
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
    static func describe(_ scalar: Unicode.Scalar) -> String {
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
            seen = ControlCharacters.isLookalikeSpace(scalar) ? "which looks like a space but is not one" : "which no one sees"
        }
        return "\(ControlCharacters.codePoint(scalar)) (\(name)), \(seen)"
    }
}
