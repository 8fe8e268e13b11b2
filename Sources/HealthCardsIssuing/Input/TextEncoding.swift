import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint

/// Recognizes input files that are Unicode text but not UTF-8: UTF-16 (Excel's "Unicode Text", some
/// database exports) and UTF-32, with or without a byte order mark. Read as UTF-8 they look like text
/// with a NUL byte between letters; they are named for what they are instead (never "Windows-1252"),
/// and no byte of them is echoed into a message.
enum TextEncoding {
    /// The encoding of `start` (a file's first bytes, a few hundred are enough) when it is UTF-16 or
    /// UTF-32, e.g. `UTF-16 little-endian, with a byte order mark`; nil for anything else.
    static func nonUTF8Unicode(_ start: ArraySlice<UInt8>) -> (name: String, iconv: String)? {
        let b = Array(start.prefix(512))
        if b.starts(with: [0xFF, 0xFE, 0x00, 0x00]) {
            return ("UTF-32 little-endian, with a byte order mark", "UTF-32")
        }
        if b.starts(with: [0x00, 0x00, 0xFE, 0xFF]) { return ("UTF-32 big-endian, with a byte order mark", "UTF-32") }
        if b.starts(with: [0xFF, 0xFE]) { return ("UTF-16 little-endian, with a byte order mark", "UTF-16") }
        if b.starts(with: [0xFE, 0xFF]) { return ("UTF-16 big-endian, with a byte order mark", "UTF-16") }
        // Without a mark: text that is mostly ASCII has a NUL in every other byte, on one side only.
        let pairs = b.count / 2
        guard pairs >= 2 else { return nil }
        var even = 0
        var odd = 0
        for i in 0..<pairs {
            if b[2 * i] == 0 { even += 1 }
            if b[2 * i + 1] == 0 { odd += 1 }
        }
        if odd * 2 >= pairs && even == 0 { return ("UTF-16 little-endian, without a byte order mark", "UTF-16LE") }
        if even * 2 >= pairs && odd == 0 { return ("UTF-16 big-endian, without a byte order mark", "UTF-16BE") }
        return nil
    }

    /// The message for a file in such an encoding: what it is, that nothing is issued from it, and how
    /// to re-save or convert it.
    static func message(path: String, encoding: (name: String, iconv: String)) -> String {
        "\(path) is \(encoding.name), not UTF-8; no card is issued from it. Re-save it as UTF-8 (in Excel: \"CSV UTF-8\"), "
            + "or convert it: iconv -f \(encoding.iconv) -t UTF-8 IN > OUT"
    }
}
