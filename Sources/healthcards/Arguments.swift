import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// A small command-line option parser: `--name value`, `--name=value`, flags, and positionals.
struct Arguments {
    private(set) var options: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positionals: [String] = []
    /// Options that may be given more than once; any other option given twice is a usage error.
    static let repeatable: Set<String> = ["x5c", "id", "rid", "jwks", "report", "drop-kid", "shl-site", "link", "cards"]

    /// - Parameters:
    ///   - valued: options that take a value (without `--`).
    ///   - flagNames: options without a value.
    /// - Throws: `HealthCardError(.configuration)` for an unknown option or a missing value.
    init(_ args: [String], valued: Set<String>, flagNames: Set<String>, command: String) throws {
        var i = 0
        var onlyPositionals = false
        while i < args.count {
            let arg = args[i]
            i += 1
            if onlyPositionals || !arg.hasPrefix("-") || arg == "-" {
                positionals.append(arg)
                continue
            }
            if arg == "--" {
                onlyPositionals = true
                continue
            }
            if arg == "-h" || arg == "--help" {
                flags.insert("help")
                continue
            }
            var name = String(arg.drop(while: { $0 == "-" }))
            var value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if flagNames.contains(name) {
                guard value == nil else { throw HealthCardError(.configuration, "--\(name) takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                if value == nil {
                    guard i < args.count else { throw HealthCardError(.configuration, "--\(name) needs a value; see `healthcards \(command) --help`") }
                    // `--out --force`: an option of this command right after it is not its value (a value
                    // spelled like one is given as `--out=--force`). Other values, even `-5` or a rid that
                    // starts with `--`, are taken and judged later.
                    let next = args[i].drop(while: { $0 == "-" }).prefix { $0 != "=" }
                    if args[i].hasPrefix("--"), valued.contains(String(next)) || flagNames.contains(String(next)) || next == "help" {
                        throw HealthCardError(.configuration, "--\(name) lacks a value: it is followed by the option \(Quote.text(args[i])). "
                            + "Give the value right after --\(name) (or --\(name)=VALUE); see `healthcards \(command) --help`")
                    }
                    value = args[i]
                    i += 1
                }
                if options[name] != nil && !Arguments.repeatable.contains(name) {
                    throw HealthCardError(.configuration, "--\(name) is given more than once (\(Quote.text(options[name]![0])) and \(Quote.text(value!))); give it once")
                }
                options[name, default: []].append(value!)
            } else {
                throw HealthCardError(.configuration, "unknown option \(Quote.text(arg)) for `healthcards \(command)`; see `healthcards \(command) --help`")
            }
        }
    }

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    func required(_ name: String, command: String) throws -> String {
        guard let v = value(name) else {
            throw HealthCardError(.configuration, "`healthcards \(command)` needs --\(name); see `healthcards \(command) --help`")
        }
        guard !v.isEmpty else {
            throw HealthCardError(.configuration, "--\(name) is empty; see `healthcards \(command) --help`")
        }
        return v
    }
}
