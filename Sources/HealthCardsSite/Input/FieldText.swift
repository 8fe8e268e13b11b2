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

    /// The first character inside `value` that no one sees and that is not part of its script's spelling
    /// (`ControlCharacters.hiddenCharacter`).
    static func hiddenCharacter(in value: String) -> Unicode.Scalar? { ControlCharacters.hiddenCharacter(in: value) }

    /// What a hidden character is, for messages (`ControlCharacters.describeHidden`).
    static func describe(_ scalar: Unicode.Scalar) -> String { ControlCharacters.describeHidden(scalar) }
}
