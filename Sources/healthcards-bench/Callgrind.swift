#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore

/// A callgrind profile (`valgrind --tool=callgrind`, format version 1, one event: `Ir`, instructions executed),
/// read into the instructions of each function by name: its own (self) and with everything it calls
/// (inclusive).
///
/// Functions are taken by name. The same name can appear in several files (code inlined from another file),
/// so a call between two entries of one name is not counted twice. Callgrind writes a recursive call's
/// deeper levels as another name (`f'2`): a call from `f` to `f'2` is part of `f`'s inclusive count, and the
/// `'N` names themselves are never matched by a stage (they are inside their base function).
struct CallgrindProfile {
    /// Instructions of the whole run (`totals:` or `summary:`).
    var total: Int = 0
    /// Per function name: instructions executed in the function itself.
    var selfCost: [String: Int] = [:]
    /// Per function name: instructions of the function and everything it called.
    var inclusive: [String: Int] = [:]

    /// Reads a callgrind output file, each function under the name `rename` gives it (a call between two
    /// functions of one name counts once, inside that name).
    /// - Throws: `BenchError` when the file holds no total.
    init(bytes: [UInt8], rename: [String: String] = [:]) throws {
        var names: [Int: String] = [:]  // fn/cfn name compression: "(id) name" defines, "(id)" refers
        var objects: [Int: String] = [:]  // ob/cob compression, the same way
        var object = ""  // the object (library) of the current function
        var calleeObject: String?  // of the next call's function, when another (cob=)
        /// A function's name; a function without a symbol (`0x…`) gets its library's file name after it.
        func name(_ text: Substring, in library: String) -> String {
            func readable(_ raw: Substring) -> String {
                let plain = String(raw)
                if plain.hasPrefix("0x") { return "\(plain) [\(library.split(separator: "/").last.map(String.init) ?? library)]" }
                return rename[plain] ?? plain
            }
            guard text.hasPrefix("("), let close = text.firstIndex(of: ")") else { return readable(text) }
            let id = Int(text[text.index(after: text.startIndex)..<close]) ?? -1
            let rest = text[text.index(after: close)...].drop(while: { $0 == " " })
            if !rest.isEmpty { names[id] = readable(rest) }
            return names[id] ?? String(text)
        }
        func objectName(_ text: Substring) -> String {
            guard text.hasPrefix("("), let close = text.firstIndex(of: ")") else { return String(text) }
            let id = Int(text[text.index(after: text.startIndex)..<close]) ?? -1
            let rest = text[text.index(after: close)...].drop(while: { $0 == " " })
            if !rest.isEmpty { objects[id] = String(rest) }
            return objects[id] ?? String(text)
        }
        var function = ""
        var callee = ""
        var callPending = false
        var selfCost: [String: Int] = [:]
        var callCost: [String: Int] = [:]  // caller → instructions of its calls to other names
        var total: Int?
        var summary: Int?
        for lineBytes in bytes.split(separator: 0x0A, omittingEmptySubsequences: true) {
            let line = Substring(String(decoding: lineBytes, as: UTF8.self))
            guard let first = line.utf8.first else { continue }
            let isCost = (first >= 0x30 && first <= 0x39) || first == UInt8(ascii: "+") || first == UInt8(ascii: "-")
                || first == UInt8(ascii: "*")
            if isCost {
                // "<position> <Ir>": the last field is the instruction count.
                let cost = line.split(separator: " ").last.flatMap { Int($0) } ?? 0
                if callPending {
                    if callee != function { callCost[function, default: 0] += cost }
                    callPending = false
                    calleeObject = nil
                } else {
                    selfCost[function, default: 0] += cost
                }
                continue
            }
            if line.hasPrefix("ob=") {
                object = objectName(line.dropFirst(3))
            } else if line.hasPrefix("cob=") {
                calleeObject = objectName(line.dropFirst(4))
            } else if line.hasPrefix("fn=") {
                function = name(line.dropFirst(3), in: object)
            } else if line.hasPrefix("cfn=") {
                callee = name(line.dropFirst(4), in: calleeObject ?? object)
            } else if line.hasPrefix("calls=") {
                callPending = true
            } else if line.hasPrefix("totals:") {
                total = Int(line.dropFirst(7).trimmingCharacters(in: " "))
            } else if line.hasPrefix("summary:") {
                summary = Int(line.dropFirst(8).trimmingCharacters(in: " "))
            }
        }
        guard let all = total ?? summary else { throw BenchError("not a callgrind profile with a total") }
        self.total = all
        self.selfCost = selfCost
        var inclusive = selfCost
        for (caller, cost) in callCost { inclusive[caller, default: 0] += cost }
        self.inclusive = inclusive
    }

    /// Every function name in a callgrind file (of `fn=` and `cfn=` lines).
    static func names(in bytes: [UInt8]) -> [String] {
        var out = Set<String>()
        for lineBytes in bytes.split(separator: 0x0A) where lineBytes.first == UInt8(ascii: "f") || lineBytes.first == UInt8(ascii: "c") {
            let line = Substring(String(decoding: lineBytes, as: UTF8.self))
            guard let body = line.hasPrefix("fn=") ? line.dropFirst(3) : line.hasPrefix("cfn=") ? line.dropFirst(4) : nil else { continue }
            if body.hasPrefix("("), let close = body.firstIndex(of: ")") {
                let rest = body[body.index(after: close)...].drop(while: { $0 == " " })
                if !rest.isEmpty { out.insert(String(rest)) }
            } else {
                out.insert(String(body))
            }
        }
        return out.sorted()
    }

    /// Reads a profile with its Swift names demangled (`Demangler`).
    static func read(_ path: String, work: String) throws -> CallgrindProfile {
        let bytes = try FileIO.read(path)
        return try CallgrindProfile(bytes: bytes, rename: Demangler.names(names(in: bytes), work: work))
    }

    /// True for callgrind's name of a deeper recursion level (`f'2`).
    static func isRecursionLevel(_ name: String) -> Bool {
        guard let quote = name.lastIndex(of: "'") else { return false }
        let digits = name[name.index(after: quote)...]
        return !digits.isEmpty && digits.allSatisfy(\.isNumber)
    }
}

/// Swift symbol names made readable with `swift-demangle --simplified` (found beside `swift` on PATH), with
/// the words that do not change what a function is dropped (`specialized`, `static`, `merged`, generic
/// parameters): `CardIssuer.checkRoundTrip(_:payload:)`. Without swift-demangle the names stay mangled.
enum Demangler {
    static func tool() -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = "\(folder)/swift-demangle"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Mangled name → readable name, for every name that demangles; `work` holds the temporary files.
    static func names(_ mangled: [String], work: String) -> [String: String] {
        guard let tool = tool(), !mangled.isEmpty else { return [:] }
        let input = "\(work)/demangle-in.txt", output = "\(work)/demangle-out.txt"
        // Callgrind's recursion suffix is not part of the symbol: demangled without it, put back after.
        let bare = mangled.map { name -> String in
            guard CallgrindProfile.isRecursionLevel(name), let quote = name.lastIndex(of: "'") else { return name }
            return String(name[..<quote])
        }
        guard (try? FileIO.writeAtomically(Array(bare.joined(separator: "\n").utf8) + [0x0A], to: input)) != nil,
            let status = try? Spawn.wait(Spawn.start(tool, ["--simplified"], stdin: input, stdout: output)), status == 0,
            let text = try? FileIO.read(output)
        else { return [:] }
        let lines = String(decoding: text, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= mangled.count else { return [:] }
        var map: [String: String] = [:]
        for (i, name) in mangled.enumerated() {
            var readable = normalized(String(lines[i]))
            if readable == bare[i] { continue }
            if bare[i] != name { readable += name[name.lastIndex(of: "'")!...] }
            map[name] = readable
        }
        unlink(input)
        unlink(output)
        return map
    }

    /// Drops `specialized `, `static `, `merged ` and generic parameter lists (`<A>`).
    static func normalized(_ name: String) -> String {
        var text = Substring(name)
        var changed = true
        while changed {
            changed = false
            for word in ["specialized ", "static ", "merged ", "generic specialization <", "function signature specialization <"]
            where text.hasPrefix(word) {
                if word.hasSuffix("<") {
                    // "generic specialization <…> of X": keep X.
                    guard let of = text.range(of: "> of ") else { break }
                    text = text[of.upperBound...]
                } else {
                    text = text.dropFirst(word.count)
                }
                changed = true
            }
        }
        var out = ""
        var depth = 0
        for c in text {
            if c == "<" { depth += 1; continue }
            if c == ">" && depth > 0 { depth -= 1; continue }
            if depth == 0 { out.append(c) }
        }
        return out
    }
}
