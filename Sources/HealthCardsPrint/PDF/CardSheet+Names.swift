import HealthCardsCore

/// A person's name in a second script, for the printed card: a traveller whose passport gives the name in
/// Latin letters and whose card holds it in Arabic, Chinese or Cyrillic too needs both on the page.
extension CardSheet {
    /// Which letters a name is written in, as far as the printed card cares: Latin letters, or another
    /// script.
    enum ScriptClass: Equatable { case latin, other }

    /// The name of the person written in the other script class than `shown` (the `HumanName.display` form),
    /// or nil when the card has none. Looked for, in order:
    /// 1. the chosen name's parts (`prefix given family suffix`) when it is shown by its `text` (the IG's
    ///    `vc-name-invariant` allows a name as `text`, as parts, or both: `"text": "ليلى حداد", "family":
    ///    "Haddad", "given": ["Layla"]`);
    /// 2. the other names of `Patient.name` whose `period` includes `today`, of `use` `usual`, `official` or
    ///    none (an `old`, `maiden`, `nickname`, `temp` or `anonymous` name is not the person's name in another
    ///    script), in their order.
    /// The first form in another script class than `shown` (Latin against any other) is it; two spellings in
    /// one script (two Latin forms) give none.
    /// - Parameter today: `YYYY-MM-DD`, for `period`.
    static func otherScriptName(_ names: JSONValue?, shown: String?, today: String) -> String? {
        guard let shown, let shownClass = scriptClass(shown), let chosen = HumanName.choose(names, today: today)
        else { return nil }
        var candidates: [String] = []
        if chosen["text"]?.stringValue != nil, var object = chosen.objectValue {
            object["text"] = nil
            if let parts = HumanName.format(.object(object)) { candidates.append(parts) }
        }
        for name in names?.arrayValue ?? [] where name != chosen {
            guard HumanName.isCurrent(name["period"], today: today) else { continue }
            switch name["use"]?.stringValue {
            case nil, "usual", "official":
                if let form = HumanName.format(name) { candidates.append(form) }
            default: continue
            }
        }
        return candidates.first { $0 != shown && scriptClass($0).map { $0 != shownClass } == true }
    }

    /// `.latin` when every letter of `text` is a Latin letter, `.other` when one is not; nil with no letter.
    static func scriptClass(_ text: String) -> ScriptClass? {
        var sawLetter = false
        for scalar in text.unicodeScalars where scalar.properties.isAlphabetic {
            // Combining marks (a decomposed accent) belong to the letter before them.
            if (0x300...0x36F).contains(scalar.value) { continue }
            sawLetter = true
            if !isLatin(scalar.value) { return .other }
        }
        return sawLetter ? .latin : nil
    }

    /// The Latin letters' blocks: Basic Latin, Latin-1 Supplement, Latin Extended-A/B, IPA, Latin Extended
    /// Additional, Extended-C/D/E, and the fullwidth forms.
    static func isLatin(_ value: UInt32) -> Bool {
        switch value {
        case 0x41...0x5A, 0x61...0x7A, 0xAA, 0xBA, 0xC0...0x2AF, 0x1D00...0x1DBF, 0x1E00...0x1EFF, 0x2071, 0x207F,
            0x2090...0x209C, 0x2C60...0x2C7F, 0xA720...0xA7FF, 0xAB30...0xAB6F, 0xFB00...0xFB06, 0xFF21...0xFF3A,
            0xFF41...0xFF5A:
            return true
        default: return false
        }
    }
}
