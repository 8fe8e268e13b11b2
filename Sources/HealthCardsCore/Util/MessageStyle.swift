/// A setting a program passes to the library: an issuer URL, an output folder, a key set, a revocation
/// secret. Messages name a setting as a token (`"\(Setting.issuer) must be https"`) that each program
/// renders its own way (`MessageStyle`): the library in words ("the `issuer` setting"), the command-line
/// program as its option (`--issuer`). So no library message is tied to one program's options.
public struct Setting: Hashable, Sendable, CustomStringConvertible {
    /// The setting's stable name (lowercase words joined by `-`), e.g. `issuer`, `rid-secret`.
    public let name: String

    /// - Parameter name: lowercase ASCII letters, digits and `-`.
    public init(_ name: String) { self.name = name }

    /// The token that stands for the setting inside a message.
    public var description: String { MessageStyle.token(kind: "s", name) }
}

/// A command of the toolkit that a message suggests as a next step (make a key, lay out a site, revoke a
/// card), as a token rendered by `MessageStyle`: in words ("the `keygen` command") or as the program's
/// command line (`healthcards keygen`).
public struct Command: Hashable, Sendable, CustomStringConvertible {
    /// The command's name, e.g. `keygen`, `site`, `revoke`.
    public let name: String

    public init(_ name: String) { self.name = name }

    public var description: String { MessageStyle.token(kind: "c", name) }
}

/// How a program says the settings and commands that messages name (`Setting`, `Command`).
public struct MessageStyle: Sendable {
    /// How a setting is said.
    public let setting: @Sendable (Setting) -> String
    /// How a command is said.
    public let command: @Sendable (Command) -> String

    public init(setting: @escaping @Sendable (Setting) -> String, command: @escaping @Sendable (Command) -> String) {
        self.setting = setting
        self.command = command
    }

    /// The library's own words: the `issuer` setting, the `keygen` command.
    public static let words = MessageStyle(
        setting: { "the `\($0.name)` setting" }, command: { "the `\($0.name)` command" })

    /// The two private-use characters that open and close a token. User data that holds them is escaped when
    /// quoted in a message (`ControlCharacters.escaped`), so no value can pose as a token.
    static let open: Character = "\u{E000}"
    static let close: Character = "\u{E001}"

    static func token(kind: Character, _ name: String) -> String { "\(open)\(kind)\(name)\(close)" }

    /// `text` with every token said this style's way; other text is left as it is.
    public func render(_ text: String) -> String {
        guard text.contains(Self.open) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        var rest = Substring(text)
        while let start = rest.firstIndex(of: Self.open) {
            out += rest[..<start]
            let body = rest[rest.index(after: start)...]
            guard let end = body.firstIndex(of: Self.close), let kind = body.first else {
                out += rest[start...]
                return out
            }
            let name = String(body[body.index(after: body.startIndex)..<end])
            switch kind {
            case "s": out += setting(Setting(name))
            case "c": out += command(Command(name))
            default: out += rest[start...end]
            }
            rest = body[body.index(after: end)...]
        }
        out += rest
        return out
    }
}
