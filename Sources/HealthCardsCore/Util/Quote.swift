/// A value from outside (a command-line argument, a CSV field, text from a card, a file or a link) quoted
/// in a message: in single quotes, control and invisible characters escaped (`ControlCharacters.escapedValue`), and cut to
/// a length that fits a line, with an ellipsis and the full length so a cut is never mistaken for the value.
///
/// Every message that quotes such a value goes through `Quote.text`, so a 5,000-character `--rid` or a
/// 200 MB CSV field is never echoed back whole, and a shortened value always says it was shortened.
package enum Quote {
    /// The most characters of a value a message shows: enough to recognise it, short enough for one line.
    public static let maxCharacters = 60

    /// `'value'`, or `'first 60 characters…' (5000 characters, cut)` when longer than `limit` (a value of
    /// 100,000 bytes or more gives its size in bytes).
    /// - Parameter limit: the most characters shown (at least 1).
    public static func text<S: StringProtocol>(_ value: S, limit: Int = maxCharacters) -> String {
        let limit = max(1, limit)
        let shown = value.prefix(limit)
        guard shown.endIndex < value.endIndex else { return "'\(ControlCharacters.escapedValue(String(value)))'" }
        // Counting characters walks the whole value: a huge one is measured in bytes (UTF-8), at once.
        let size = value.utf8.count < 100_000 ? "\(value.count) characters" : "\(value.utf8.count) bytes"
        return "'\(ControlCharacters.escapedValue(String(shown)))…' (\(size), cut)"
    }
}
