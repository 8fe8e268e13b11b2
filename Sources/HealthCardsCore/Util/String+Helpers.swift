/// Small text helpers the library needs without Foundation.

extension StringProtocol {
    /// The string without leading and trailing Unicode scalars from `set` (compared scalar by scalar,
    /// so "\r\n" in `set` means CR and LF).
    package func trimmingCharacters(in set: String) -> String {
        let scalars = Set(set.unicodeScalars)
        let view = Substring(self).unicodeScalars
        guard let first = view.firstIndex(where: { !scalars.contains($0) }),
            let last = view.lastIndex(where: { !scalars.contains($0) })
        else { return "" }
        return String(view[first...last])
    }
}

extension String {
    /// `contains(needle)` (characters compared, as the standard library does), answered by the bytes when they
    /// cannot match: the characters of `needle` in a row need its UTF-8 bytes in a row, so a string without them
    /// does not contain it, and only one with them is searched character by character.
    package func containsCharacters(_ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard let head = pattern.first else { return contains(needle) }
        let bytes = utf8
        var i = bytes.startIndex
        while let found = bytes[i...].firstIndex(of: head) {
            if bytes[found...].starts(with: pattern) { return contains(needle) }
            i = bytes.index(after: found)
        }
        return false
    }

    /// The string with the first occurrence of `target` replaced.
    package func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = Substring(self).range(of: target) else { return self }
        return String(self[..<range.lowerBound]) + replacement + String(self[range.upperBound...])
    }

    /// The string without any trailing `suffix` characters.
    package func trimmingSuffix(_ suffix: Character) -> String {
        var s = self
        while s.last == suffix { s.removeLast() }
        return s
    }
}

extension Substring {
    /// The range of the first occurrence of `needle` (compared as UTF-8), or nil.
    package func range(of needle: String) -> Range<Substring.Index>? {
        let n = Array(needle.utf8)
        var i = startIndex
        while i < endIndex {
            if self[i...].utf8.starts(with: n) {
                return i..<(utf8.index(i, offsetBy: n.count))
            }
            i = index(after: i)
        }
        return nil
    }
}
