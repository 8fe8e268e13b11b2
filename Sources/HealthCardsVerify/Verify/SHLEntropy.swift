import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// Whether a link's `url` (and so its file name) and key look random: the links specification asks for a
/// `url` that carries at least 256 bits of entropy and a key of 32 random bytes. A text cannot prove it is
/// random; these tests only find what is plainly not: too short, readable, sequential, zero-padded, too few
/// kinds of characters. A base64url string of 32 random bytes fails one of them with a probability of about
/// one in a million (measured on millions of random strings; `randomFileNamesPass` checks 2,000 more).
package enum SHLEntropy {
    /// Base64url characters a segment needs: 43 carry 258 bits.
    static let minimumCharacters = 43

    /// Why `url` does not carry the entropy the links specification asks for, or nil when one of its path
    /// segments or query values looks like 256 random bits.
    package static func problem(url: String) -> String? {
        let separators: Set<Character> = ["/", "?", "&", "=", "#", "."]
        let parts = url.split(whereSeparator: { separators.contains($0) }).filter { part in
            part.utf8.allSatisfy(RID.isBase64URLCharacter)
        }
        let long = parts.filter { $0.utf8.count >= minimumCharacters }
        guard !long.isEmpty else {
            return
                "url has no path segment or query value of \(minimumCharacters) or more base64url characters; it must carry "
                + "at least 256 bits of entropy (e.g. 32 random bytes, base64url, as a path segment)"
        }
        var reasons: [String] = []
        for part in long {
            guard let why = weakness(Array(part.utf8)) else { return nil }
            reasons.append("\(Quote.text(String(part), limit: 60)) \(why)")
        }
        return
            "url has no path segment or query value that looks random: \(reasons.prefix(3).joined(separator: "; ")). The "
            + "links specification asks for at least 256 bits of entropy (e.g. 32 random bytes, base64url): a guessable "
            + "name lets anyone fetch the file"
    }

    /// Why a base64url segment (43 or more characters) is plainly not random, or nil. Says what was found (the
    /// characters it uses, how many bits they can hold at most); the caller says what is expected.
    static func weakness(_ s: [UInt8]) -> String? {
        let upper = s.contains { (0x41...0x5A).contains($0) }
        let lower = s.contains { (0x61...0x7A).contains($0) }
        let digits = s.filter { (0x30...0x39).contains($0) }.count
        let distinct = Set(s)
        if distinct.count == 1, let only = s.first {
            return "is one character, '\(Character(Unicode.Scalar(only)))', repeated \(s.count) times: it holds no entropy at all"
        }
        if !upper || !lower {
            // Without one of the two cases, the alphabet is at most 38 characters (hex: 16, digits: 10).
            let hex = s.allSatisfy {
                (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0)
            }
            let dashes = s.contains(where: { $0 == 0x2D || $0 == 0x5F })
            var alphabet = hex ? 16 : 0
            if !hex {
                if digits > 0 { alphabet += 10 }
                if upper || lower { alphabet += 26 }
                if dashes { alphabet += 2 }
            }
            let bits = Double(s.count) * log2(Double(max(alphabet, 2)))
            if bits < 256 {
                var kinds: [String] = []
                if upper { kinds.append("upper-case letters") }
                if lower { kinds.append("lower-case letters") }
                if digits > 0 { kinds.append("digits") }
                if dashes { kinds.append("'-' or '_'") }
                let drawn =
                    hex
                    ? "hex digits only (0-9, A-F or a-f), an alphabet of 16"
                    : "no \(upper ? "lower" : "upper")-case letter, so an alphabet of at most \(alphabet)"
                return
                    "uses \(distinct.count) different characters (\(kinds.joined(separator: ", "))): \(drawn), in which its "
                    + "\(s.count) characters hold at most \(Int(bits)) bits"
            }
        }
        // 7 in a row: a random 43-character base64url name has 5 in about 1 of 430,000 (which warned on real links),
        // 7 in about 1 of 2 billion.
        if let run = longestRun(s, step: 0), run >= 7 {
            return "repeats one character \(run) times in a row (zero-padded?)"
        }
        if let run = longestRun(s, step: 1), run >= 6 { return "has \(run) characters in sequence (a counter?)" }
        if let run = longestRun(s, step: -1), run >= 6 { return "has \(run) characters in sequence (a counter?)" }
        if Set(s).count < 20 { return "uses only \(Set(s).count) different characters" }
        let lowerShare = Double(s.filter { (0x61...0x7A).contains($0) }.count) / Double(s.count)
        if lowerShare > 0.75 { return "is mostly lower-case letters (readable words?)" }
        if readsAsWords(s) { return "reads as words (a name, a description)" }
        if Double(digits) / Double(s.count) > 0.6 { return "is mostly digits (a number?)" }
        return nil
    }

    /// True when at least 4 words (a capital or not, then 3 or more lower-case letters) make up 65% of the
    /// segment's letters and digits, and with runs of 2 or more digits 85%: `vaccination-card-of-Ada-1960`,
    /// `AdaLovelaceVaccinationCard2024`. Random base64url reads so with a probability under one in a million
    /// (measured on 3,000,000 random strings of 43 characters: 2 did).
    static func readsAsWords(_ s: [UInt8]) -> Bool {
        func isLower(_ b: UInt8) -> Bool { (0x61...0x7A).contains(b) }
        func isUpper(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) }
        func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }
        let body = s.filter { $0 != 0x2D && $0 != 0x5F }.count
        var (words, wordCharacters, digitCharacters) = (0, 0, 0)
        var i = 0
        while i < s.count {
            let start = isUpper(s[i]) && i + 1 < s.count && isLower(s[i + 1]) ? i + 1 : i
            var end = start
            while end < s.count && isLower(s[end]) { end += 1 }
            if end - start >= 3 {
                words += 1
                wordCharacters += end - i
                i = end
                continue
            }
            var digitsEnd = i
            while digitsEnd < s.count && isDigit(s[digitsEnd]) { digitsEnd += 1 }
            if digitsEnd - i >= 2 {
                digitCharacters += digitsEnd - i
                i = digitsEnd
                continue
            }
            i = max(i + 1, end)
        }
        return words >= 4 && Double(wordCharacters) >= 0.65 * Double(body)
            && Double(wordCharacters + digitCharacters) >= 0.85 * Double(body)
    }

    /// The longest run of characters each `step` above the one before (0: the same character).
    private static func longestRun(_ s: [UInt8], step: Int) -> Int? {
        guard !s.isEmpty else { return nil }
        var best = 1
        var current = 1
        for (a, b) in zip(s, s.dropFirst()) {
            current = Int(b) - Int(a) == step ? current + 1 : 1
            best = max(best, current)
        }
        return best
    }

    /// True when every byte of a 32-byte key is a printable ASCII character: a passphrase or hex digits
    /// taken for the key's bytes (random bytes are all printable with probability (95/256)^32, about 10^-14).
    package static func isText(_ key: [UInt8]) -> Bool {
        !key.isEmpty && key.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
    }
}
