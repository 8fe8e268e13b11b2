import Foundation
import Testing

/// The library has no command-line knowledge (issue 31, point 4): no string literal in Sources/ outside the
/// command-line targets (`Sources/healthcards`, `Sources/healthcards-bench`) names one of the program's
/// options (`--issuer`), its command line (`healthcards keygen`) or a command as advice (`` `keygen` ``). The
/// options and commands are read from the program's own sources, so the check stays true as options are added.
@Suite struct NoCLIWordsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The targets that are the command line: the only ones that may say its options and commands.
    static let commandLineTargets: Set<String> = ["healthcards", "healthcards-bench"]

    /// Literals that hold a command's words as data, not advice: the catalogue's `generator` value, by which a
    /// later run recognises a folder it wrote, and the names of its test CA and keys (kept as they are: they
    /// are in the catalogue's bytes).
    static func isData(_ literal: String) -> Bool { literal.hasPrefix("healthcards fixtures") }

    @Test func noLibraryStringNamesACommandLineOptionOrCommand() throws {
        let (options, commands) = try Self.commandLineWords()
        #expect(options.count > 50, "options read from Sources/healthcards: \(options.sorted())")
        #expect(commands.isSuperset(of: ["keygen", "issue", "verify", "site", "revoke", "shl", "print"]), "\(commands.sorted())")
        var found: [String] = []
        for file in try Self.librarySources() {
            let source = try String(contentsOf: file, encoding: .utf8)
            for literal in SwiftLiterals.strings(in: source) where !Self.isData(literal.text) {
                for word in Self.cliWords(in: literal.text, options: options, commands: commands) {
                    found.append("\(file.path.dropFirst(Self.root.path.count + 1)):\(literal.line): \(word) in \"\(literal.text)\"")
                }
            }
        }
        #expect(found.isEmpty, "library strings that speak the command line's words:\n\(found.joined(separator: "\n"))")
    }

    /// The scanner finds each form it looks for (and not a PEM armour line or another program's words).
    @Test func theScannerFindsEachForm() {
        let options: Set<String> = ["issuer", "out", "jwks"]
        let commands: Set<String> = ["keygen", "site"]
        let source = #"""
            let a = "pass --issuer \(url) again"  // "--out" in a comment is no literal
            let b = "make one with `keygen`"; let c = #"healthcards site --out "x""#
            /* "--jwks" */ let d = "-----BEGIN PRIVATE KEY----- \("--jwks") pkcs11-tool --login"
            let e = """
                run `site` first
                """
            """#
        let literals = SwiftLiterals.strings(in: source)
        #expect(literals.map(\.text) == ["pass --issuer \u{FFFC} again", "make one with `keygen`", #"healthcards site --out "x""#,
                                         "-----BEGIN PRIVATE KEY----- \u{FFFC} pkcs11-tool --login", "--jwks", "run `site` first"])
        #expect(literals.map(\.line) == [1, 2, 2, 3, 3, 4])
        let words = literals.map { Self.cliWords(in: $0.text, options: options, commands: commands) }
        #expect(words == [["--issuer"], ["`keygen"], ["--out", "healthcards site"], [], ["--jwks"], ["`site"]])
    }

    /// Every `--option` the command-line target's strings list at the start of a line (its usage texts and
    /// option tables: "  --out DIR  …", "--issuer URL"), and the commands of its `commands` table. Another
    /// program's options in its advice (`pkcs11-tool --read-object`) are not at a line's start.
    static func commandLineWords() throws -> (options: Set<String>, commands: Set<String>) {
        var options: Set<String> = []
        let folder = root.appendingPathComponent("Sources/healthcards")
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasSuffix(".swift") {
            let source = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            for literal in SwiftLiterals.strings(in: source) {
                for line in literal.text.split(separator: "\n") {
                    let start = line.drop { $0 == " " }
                    guard start.hasPrefix("--"), let name = optionNames(in: String(start)).first else { continue }
                    options.insert(name)
                }
            }
        }
        options.remove("help")
        options.remove("version")
        let main = try String(contentsOf: folder.appendingPathComponent("main.swift"), encoding: .utf8)
        let table = try #require(main.range(of: "let commands:")).upperBound
        let end = try #require(main[table...].range(of: "\n]")).lowerBound
        var commands: Set<String> = []
        for line in main[table..<end].split(separator: "\n") {
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("(\""), let close = trimmed.dropFirst(2).firstIndex(of: "\"") else { continue }
            commands.insert(String(trimmed[trimmed.index(trimmed.startIndex, offsetBy: 2)..<close]))
        }
        return (options, commands)
    }

    /// The Swift files of every target below the command line.
    static func librarySources() throws -> [URL] {
        let sources = root.appendingPathComponent("Sources")
        var files: [URL] = []
        for target in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted()
        where !commandLineTargets.contains(target) {
            let enumerator = FileManager.default.enumerator(atPath: sources.appendingPathComponent(target).path)
            while let path = enumerator?.nextObject() as? String {
                if path.hasSuffix(".swift") { files.append(sources.appendingPathComponent(target).appendingPathComponent(path)) }
            }
        }
        #expect(files.count > 100, "library sources found: \(files.count)")
        return files
    }

    /// `--name` words in `text`: two dashes after a character that is not a dash, letter or digit, then a
    /// lowercase letter (so `-----BEGIN` and `a--b` are not options).
    static func optionNames(in text: String) -> [String] {
        let scalars = Array(text.unicodeScalars)
        var names: [String] = []
        var i = 0
        func isWord(_ s: Unicode.Scalar) -> Bool { ("a"..."z").contains(s) || ("0"..."9").contains(s) || s == "-" }
        while i + 2 < scalars.count {
            let before = i == 0 ? " " : scalars[i - 1]
            if scalars[i] == "-", scalars[i + 1] == "-", ("a"..."z").contains(scalars[i + 2]), !isWord(before),
                !("A"..."Z").contains(before)
            {
                var j = i + 2
                while j < scalars.count, isWord(scalars[j]) { j += 1 }
                names.append(String(String.UnicodeScalarView(scalars[(i + 2)..<j])))
                i = j
            } else {
                i += 1
            }
        }
        return names
    }

    /// The command line's words in a library string: its options, `healthcards COMMAND`, and a command in
    /// backquotes as advice (`` `keygen ``).
    static func cliWords(in text: String, options: Set<String>, commands: Set<String>) -> [String] {
        var words = optionNames(in: text).filter(options.contains).map { "--" + $0 }
        for command in commands.sorted() {
            if text.contains("healthcards \(command)") { words.append("healthcards \(command)") }
            for end in [" ", "`"] where text.contains("`\(command)\(end)") {
                words.append("`\(command)")
                break
            }
        }
        return words
    }
}

/// The string literals of Swift source: plain, multi-line and raw (`#"…"#`), each interpolation `\(…)` read as
/// code (its own literals found too) and left in its literal as U+FFFC; comments skipped.
enum SwiftLiterals {
    struct Literal: Equatable {
        var line: Int
        var text: String
    }

    static func strings(in source: String) -> [Literal] {
        var reader = Reader(Array(source.unicodeScalars))
        var found: [Literal] = []
        reader.code(until: nil, into: &found)
        return found
    }

    struct Reader {
        let s: [Unicode.Scalar]
        var i = 0
        var line = 1

        init(_ s: [Unicode.Scalar]) { self.s = s }

        func at(_ k: Int) -> Unicode.Scalar? { k < s.count ? s[k] : nil }

        func starts(_ text: String, at k: Int) -> Bool {
            var j = k
            for c in text.unicodeScalars {
                guard at(j) == c else { return false }
                j += 1
            }
            return true
        }

        mutating func advance() {
            if s[i] == "\n" { line += 1 }
            i += 1
        }

        /// Reads code up to the `)` that closes an interpolation (`until` ")") or to the end.
        mutating func code(until close: Unicode.Scalar?, into found: inout [Literal]) {
            var depth = 0
            while i < s.count {
                let c = s[i]
                if starts("//", at: i) {
                    while i < s.count, s[i] != "\n" { advance() }
                } else if starts("/*", at: i) {
                    var nesting = 0
                    repeat {
                        if starts("/*", at: i) { nesting += 1; advance() } else if starts("*/", at: i) { nesting -= 1; advance() }
                        advance()
                    } while i < s.count && nesting > 0
                } else if c == "\"" || (c == "#" && (at(i + 1) == "\"" || at(i + 1) == "#")) {
                    var hashes = 0
                    while at(i + hashes) == "#" { hashes += 1 }
                    guard at(i + hashes) == "\"" else { advance(); continue }
                    for _ in 0..<hashes { advance() }
                    string(hashes: hashes, into: &found)
                } else if c == "(" {
                    depth += 1
                    advance()
                } else if c == ")" {
                    if close != nil && depth == 0 { advance(); return }
                    depth -= 1
                    advance()
                } else {
                    advance()
                }
            }
        }

        /// Reads a literal from its opening quote(s).
        mutating func string(hashes: Int, into found: inout [Literal]) {
            let multiline = starts("\"\"\"", at: i)
            let start = line
            for _ in 0..<(multiline ? 3 : 1) { advance() }
            if multiline, at(i) == "\n" { advance() }
            let terminator = (multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)
            let escape = "\\" + String(repeating: "#", count: hashes)
            var text = ""
            var inner: [Literal] = []
            while i < s.count {
                if starts(terminator, at: i) {
                    for _ in 0..<terminator.unicodeScalars.count { advance() }
                    break
                }
                if starts(escape, at: i) {
                    let next = at(i + escape.unicodeScalars.count)
                    for _ in 0..<escape.unicodeScalars.count { advance() }
                    if next == "(" {
                        advance()
                        text.unicodeScalars.append("\u{FFFC}")
                        code(until: ")", into: &inner)
                    } else if let next {
                        let map: [Unicode.Scalar: String] = ["n": "\n", "t": "\t", "\"": "\"", "\\": "\\", "'": "'", "0": "\0", "r": "\r"]
                        text += map[next] ?? "\\\(next)"
                        advance()
                    }
                    continue
                }
                if !multiline, s[i] == "\n" { break }
                text.unicodeScalars.append(s[i])
                advance()
            }
            if multiline {
                // The closing delimiter's indentation is not part of the text: trim each line's leading spaces.
                text = text.split(separator: "\n", omittingEmptySubsequences: false)
                    .map { $0.drop { $0 == " " } }.joined(separator: "\n")
                if text.hasSuffix("\n") { text.removeLast() }
            }
            found.append(Literal(line: start, text: text))
            found.append(contentsOf: inner)
        }
    }
}
