/// The name to show for a person: the one FHIR `HumanName` (R4, datatypes section 2.24.0.10) a person
/// recognizes as theirs, written out for display. Used by `verify`'s summary and printed cards.
///
/// Which name, of `Patient.name`:
/// 1. Names whose `period` includes `today` (a name with an ended `period`, or one that starts later,
///    is not the current name); when none does, every name is considered.
/// 2. Of those, the best `use`: `usual` (what the person goes by), then `official`, then no `use` (the
///    IG says not to set `use` on a single name), then `temp`, `nickname`, `anonymous`, and last `old`
///    and `maiden`.
/// 3. The first in the list among equals.
///
/// How it is written: `text` when the name has it (the IG's `vc-name-invariant` gives a name as
/// `text` or as parts); otherwise `prefix`, `given`, `family` and `suffix`, in that order, separated by
/// spaces. A name written wholly in Han, Kana or Hangul is written family name first with no space
/// (王小明, 山田太郎, 김민준), as those names are written. Empty and blank parts are left out.
public enum HumanName {
    /// The display form of the chosen name of `names` (a `Patient.name` array), or nil when no name has
    /// any text.
    /// - Parameter today: the date to judge `period` by, `YYYY-MM-DD` (e.g. `Clock.todayUTC()`).
    public static func display(_ names: JSONValue?, today: String) -> String? {
        guard let chosen = choose(names, today: today) else { return nil }
        return format(chosen)
    }

    /// The display form of a Patient resource's name (see `display(_:today:)`).
    public static func display(patient: JSONValue?, today: String) -> String? {
        display(patient?["name"], today: today)
    }

    /// The chosen name object of `names` (see the type's rules), or nil when no name has any text.
    public static func choose(_ names: JSONValue?, today: String) -> JSONValue? {
        let all = (names?.arrayValue ?? []).filter { format($0) != nil }
        guard !all.isEmpty else { return nil }
        let current = all.filter { isCurrent($0["period"], today: today) }
        let candidates = current.isEmpty ? all : current
        // `min(by:)` keeps the first of equal ranks.
        return candidates.enumerated().min { a, b in
            (rank(a.element["use"]?.stringValue), a.offset) < (rank(b.element["use"]?.stringValue), b.offset)
        }?.element
    }

    /// The order of `HumanName.use` values: lower is shown first.
    static func rank(_ use: String?) -> Int {
        switch use {
        case "usual": return 0
        case "official": return 1
        case nil: return 2
        case "temp": return 3
        case "nickname": return 4
        case "anonymous": return 5
        case "old": return 7
        case "maiden": return 8
        default: return 6
        }
    }

    /// Whether `period` (a FHIR Period with `start` and `end` as date or dateTime, any precision) includes
    /// the day `today`. A missing period, start or end is open. Dates compare at their own precision: a
    /// period ending `2020` includes every day of 2020.
    package static func isCurrent(_ period: JSONValue?, today: String) -> Bool {
        guard let period, period.objectValue != nil else { return true }
        if let start = period["start"]?.stringValue.map(dayPrecision), !start.isEmpty {
            if String(today.prefix(start.count)) < start { return false }
        }
        if let end = period["end"]?.stringValue.map(dayPrecision), !end.isEmpty {
            if String(today.prefix(end.count)) > end { return false }
        }
        return true
    }

    /// `YYYY`, `YYYY-MM` or `YYYY-MM-DD` of a date or dateTime (the time and zone dropped).
    private static func dayPrecision(_ value: String) -> String { String(value.prefix(10)) }

    /// The written form of one HumanName object, or nil when it has no text.
    public static func format(_ name: JSONValue) -> String? {
        if let text = name["text"]?.stringValue.map(clean), !text.isEmpty { return text }
        func parts(_ key: String) -> [String] {
            if let list = name[key]?.arrayValue {
                return list.compactMap { $0.stringValue.map(clean) }.filter { !$0.isEmpty }
            }
            return name[key]?.stringValue.map { [clean($0)] }?.filter { !$0.isEmpty } ?? []
        }
        let prefix = parts("prefix")
        let given = parts("given")
        let suffix = parts("suffix")
        let family = name["family"]?.stringValue.map(clean).map { $0.isEmpty ? [] : [$0] } ?? []
        if prefix.isEmpty && suffix.isEmpty && !family.isEmpty && !given.isEmpty
            && (family + given).allSatisfy(isEastAsian)
        {
            return (family + given).joined()
        }
        let all = prefix + given + family + suffix
        return all.isEmpty ? nil : all.joined(separator: " ")
    }

    /// Whitespace runs (including line breaks) as one space, trimmed.
    private static func clean(_ s: String) -> String {
        s.split(whereSeparator: { $0.isWhitespace || $0.isNewline }).joined(separator: " ")
    }

    /// Every letter is Han, Hiragana, Katakana or Hangul.
    static func isEastAsian(_ s: String) -> Bool {
        !s.isEmpty
            && s.unicodeScalars.allSatisfy { scalar in
                switch scalar.value {
                case 0x1100...0x11FF, 0x3130...0x318F, 0xAC00...0xD7AF: return true  // Hangul
                case 0x3040...0x30FF, 0x31F0...0x31FF, 0xFF66...0xFF9F: return true  // Kana
                case 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x3134F: return true  // Han
                case 0x3005, 0x30FC: return true  // 々, ー
                default: return false
                }
            }
    }
}
