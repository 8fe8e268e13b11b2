/// A setting a program passes to the library: an issuer URL, an output folder, a key set, a revocation
/// secret. Messages name a setting as a token (`"\(Setting.issuer) must be https"`) that each program
/// renders its own way (`MessageStyle`): the library by its name (`issuer`), the command-line program as its
/// option (`--issuer`). So no library message is tied to one program's options.
public struct Setting: Hashable, Sendable, CustomStringConvertible {
    /// The setting's stable name (lowercase words joined by `-`), e.g. `issuer`, `rid-secret`.
    public let name: String

    /// - Parameter name: lowercase ASCII letters, digits and `-`.
    public init(_ name: String) { self.name = name }

    /// The token that stands for the setting inside a message.
    public var description: String { MessageStyle.token(kind: "s", name) }
}

/// A command of the toolkit that a message suggests as a next step (make a key, lay out a site, revoke a
/// card), as a token rendered by `MessageStyle`: by its name (`keygen`) or as the program's command line
/// (`healthcards keygen`).
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

    /// The library's own words: each setting and command by its name (`issuer`, `rid-secret`, `keygen`), so a
    /// sentence written for a program's options reads as one about the library's settings ("issuer 'x' ends with
    /// '/'", "make one with `keygen out FILE`").
    public static let words = MessageStyle(setting: { $0.name }, command: { $0.name })

    /// Keeps the tokens as they are: for text that a program renders later in its own style.
    package static let tokens = MessageStyle(setting: { $0.description }, command: { $0.description })

    /// The two private-use characters that open and close a token. A value quoted in a message (`Quote.text`)
    /// has them escaped (`ControlCharacters.escapedValue`), so no quoted value can pose as a token.
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

/// The settings the library's messages name (each program says them its own way: `MessageStyle`).
extension Setting {
    /// the base URL of a static site's SMART Health Links.
    public static let baseUrl = Setting("base-url")
    /// a revocation's time: only cards issued before it are revoked.
    public static let before = Setting("before")
    /// split cards too long for one QR into chunked QRs.
    public static let chunk = Setting("chunk")
    /// deterministic (RFC 6979) signatures.
    public static let deterministic = Setting("deterministic")
    /// a published key to retire.
    public static let dropKid = Setting("drop-kid")
    /// do it although a safety check refused.
    public static let force = Setting("force")
    /// a patient id.
    public static let id = Setting("id")
    /// the issuer URL (`iss`).
    public static let issuer = Setting("issuer")
    /// a key set, bound to its issuer or not.
    public static let jwks = Setting("jwks")
    /// the age a directory's keys may have, in days.
    public static let maxKeyAge = Setting("max-key-age")
    /// the signing key (a PEM file or a PKCS#11 URI).
    public static let key = Setting("key")
    /// a SMART Health Link.
    public static let link = Setting("link")
    /// narrow an existing revocation to cards issued before a time.
    public static let narrow = Setting("narrow")
    /// the issuance time (`nbf`).
    public static let nbf = Setting("nbf")
    /// print without the card's link.
    public static let noLink = Setting("no-link")
    /// the time cards are judged at.
    public static let now = Setting("now")
    /// the output file or folder.
    public static let out = Setting("out")
    /// the `Patient.identifier` system naming the person.
    public static let patientIdSystem = Setting("patient-id-system")
    /// one PDF holding every printed card.
    public static let pdfCombined = Setting("pdf-combined")
    /// a person whose withdrawn link is made anew.
    public static let renew = Setting("renew")
    /// an issue run's report.ndjson.
    public static let report = Setting("report")
    /// the revocation secret (`vc.rid`).
    public static let ridSecret = Setting("rid-secret")
    /// the fixtures' seed.
    public static let seed = Setting("seed")
    /// sharing the outputs with a group or everyone.
    public static let share = Setting("share")
    /// the base URL of SMART Health Links made while issuing.
    public static let shl = Setting("shl")
    /// the label of SMART Health Links.
    public static let shlLabel = Setting("shl-label")
    /// a person whose withdrawn link is made anew while issuing.
    public static let shlRenew = Setting("shl-renew")
    /// a site folder holding SMART Health Link files, read offline.
    public static let shlSite = Setting("shl-site")
    /// the issuer's site folder.
    public static let site = Setting("site")
    /// the part of a batch spread over several machines that a run issues (`K/N`).
    public static let shard = Setting("shard")
    /// a viewer URL put before each link.
    public static let viewer = Setting("viewer")
}

/// The toolkit's commands the library's messages suggest as next steps.
extension Command {
    /// The command that writes the test-card catalogue.
    public static let fixtures = Command("fixtures")
    /// The command that issues cards.
    public static let issue = Command("issue")
    /// The command that writes a key set.
    public static let jwks = Command("jwks")
    /// The command that makes a key or a revocation secret.
    public static let keygen = Command("keygen")
    /// The command that prints cards as PDF.
    public static let print = Command("print")
    /// The command that revokes cards or withdraws links.
    public static let revoke = Command("revoke")
    /// The command that makes SMART Health Links.
    public static let shl = Command("shl")
    /// The command that lays out the issuer's site.
    public static let site = Command("site")
    /// The command that checks cards, key sets and links.
    public static let verify = Command("verify")
}
