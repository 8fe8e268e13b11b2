import HealthCardsCore
import HealthCardsVerify

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

    /// What a file that is not text at all is, from its first bytes: an image, a PDF, a spreadsheet workbook, an
    /// archive (by their signatures), or any binary file (NUL or other control bytes in its first block); nil for
    /// text. Read as text such a file would be called a Latin-1 export, which it is not.
    static func binaryKind(_ start: ArraySlice<UInt8>) -> (name: String, advice: String)? {
        let b = Array(start.prefix(4096))
        let export = "give the CSV file the export wrote (a text file of rows)"
        func starts(_ signature: [UInt8]) -> Bool { b.starts(with: signature) }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return ("a PNG image", export) }
        if starts([0xFF, 0xD8, 0xFF]) { return ("a JPEG image", export) }
        if starts(Array("GIF8".utf8)) { return ("a GIF image", export) }
        if starts(Array("%PDF-".utf8)) { return ("a PDF document", export) }
        if starts([0x50, 0x4B, 0x03, 0x04]) {
            return ("a ZIP archive (an Excel .xlsx workbook is one)", "save the sheet as \"CSV UTF-8\" and give that file")
        }
        if starts([0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
            return ("an Excel 97-2003 workbook (.xls)", "save the sheet as \"CSV UTF-8\" and give that file")
        }
        if starts([0x1F, 0x8B]) { return ("a gzip-compressed file", "decompress it first (gunzip)") }
        guard !b.isEmpty else { return nil }
        // Text has no NUL and few control bytes besides tab and line ends (UTF-16 is recognised before this).
        let controls = b.filter { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }.count
        if b.contains(0) || controls * 20 > b.count { return ("a binary file, not text", export) }
        return nil
    }

    /// The message for a file in such an encoding: what it is, that nothing is issued from it, and how
    /// to re-save or convert it.
    static func message(path: String, encoding: (name: String, iconv: String)) -> String {
        "\(path) is \(encoding.name), not UTF-8; no card is issued from it. Re-save it as UTF-8 (in Excel: \"CSV UTF-8\"), "
            + "or convert it: iconv -f \(encoding.iconv) -t UTF-8 IN > OUT"
    }
}
