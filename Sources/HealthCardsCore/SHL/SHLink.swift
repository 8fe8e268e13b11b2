/// A SMART Health Link (links-specification "Construct a SMART Health Link Payload"): a minified JSON
/// payload, base64url-encoded, prefixed `shlink:/`, optionally prefixed by a viewer URL ending in `#`:
///
///     https://viewer.example.org#shlink:/eyJ1cmwiOi…
///
/// Payload members, in the order written here: `url` (at most 128 characters; with flag `U` the URL of the
/// one encrypted file, fetched with GET), `key` (43 base64url characters: 32 random bytes, the AES-256-GCM
/// key), `exp` (optional, seconds since 1970: a staleness hint), `flag` (single letters in alphabetical
/// order: `L`, `P`, `U`; `U` never with `P`), `label` (optional, at most 80 characters). `v` is left out
/// (default 1).
public struct SHLink: Sendable, Equatable {
    /// The scheme and the slash before the payload.
    public static let scheme = "shlink:/"
    /// Most characters in `url` (links-specification: the manifest URL "SHALL NOT exceed 128 characters").
    public static let maxURLCharacters = 128
    /// Most characters in `label`: "no longer than 80 characters", a FHIR `string` in the IG's logical model
    /// (`ShlPayload.label`), whose characters are Unicode characters: counted as code points (an emoji with a
    /// skin tone is 2, an accented letter written as letter and combining mark is 2).
    public static let maxLabelCharacters = 80
    /// The protocol version this toolkit writes and reads.
    public static let version = 1

    public var url: String
    /// The key as 43 base64url characters.
    public var key: String
    /// Seconds since 1970, or nil.
    public var exp: Int64?
    /// Flag letters in alphabetical order (e.g. `U`), or nil for none.
    public var flag: String?
    public var label: String?
    /// A viewer URL ending in `#` put in front of the link, or nil.
    public var viewer: String?

    public init(
        url: String, key: String, exp: Int64? = nil, flag: String? = nil, label: String? = nil, viewer: String? = nil
    ) {
        self.url = url
        self.key = key
        self.exp = exp
        self.flag = flag
        self.label = label
        self.viewer = viewer
    }

    /// The payload object: `url`, `key`, then `exp`, `flag`, `label` when set.
    public var payload: JSONValue {
        var object: JSONObject = ["url": .string(url), "key": .string(key)]
        if let exp { object["exp"] = .integer(exp) }
        if let flag { object["flag"] = .string(flag) }
        if let label { object["label"] = .string(label) }
        return .object(object)
    }

    /// `shlink:/` and the base64url of the minified payload, without a viewer.
    public var bare: String { Self.scheme + Base64URL.encode(JSONWriter.minified(payload)) }

    /// The link as handed out: the viewer URL (when set) followed by `bare`.
    public var text: String { (viewer ?? "") + bare }

    /// The length rule for labels this toolkit writes: at most 80 Unicode characters (code points), as the IG
    /// counts, and at most 80 UTF-16 code units, as a JavaScript receiver counts (`label.length`): a label of
    /// emoji or rare CJK characters within 80 code points can be over 80 for such a receiver, which may refuse it.
    public static func labelFits(_ label: String) -> Bool {
        label.unicodeScalars.count <= maxLabelCharacters && label.utf16.count <= maxLabelCharacters
    }

    /// Why a label within 80 code points is still over 80 UTF-16 code units (nil when it is not): what `verify`
    /// warns about in someone else's link (`SHL_LABEL_UTF16`).
    public static func labelUTF16Problem(_ label: String) -> String? {
        let units = label.utf16.count
        guard units > maxLabelCharacters, label.unicodeScalars.count <= maxLabelCharacters else { return nil }
        return "label is \(label.unicodeScalars.count) Unicode characters (code points), within the 80 the links "
            + "specification allows, but \(units) UTF-16 code units, which is how a JavaScript receiver counts it "
            + "(label.length: a character beyond U+FFFF, such as an emoji, is two): such a receiver may refuse a label over "
            + "80. Shorten it to 80 UTF-16 code units"
    }

    /// Why `label` is too long, saying what was counted.
    public static func labelLengthProblem(_ label: String) -> String {
        let points = label.unicodeScalars.count
        let units = label.utf16.count
        let shown = label.count
        var counted = "\(points) Unicode characters (code points)"
        if shown != points || units != points {
            counted += "; \(shown) as a reader sees them, \(units) UTF-16 code units"
        }
        return "label is \(counted); the links specification allows at most \(maxLabelCharacters) characters, counted as "
            + "Unicode characters (code points), as FHIR counts a string's characters"
    }
}

/// Reading link text: the viewer prefix, the payload, and a structural parse.
public enum SHLinkText {
    /// Splits link text into its viewer prefix (everything up to and including the `#` before
    /// `shlink:/`, or nil for a bare link) and the base64url payload after `shlink:/`.
    /// - Returns: nil when the text holds no `shlink:/` at its start or right after a `#`.
    public static func split(_ text: String) -> (viewer: Substring?, encoded: Substring)? {
        if text.hasPrefix(SHLink.scheme) { return (nil, text.dropFirst(SHLink.scheme.count)) }
        guard let range = Substring(text).range(of: "#" + SHLink.scheme) else { return nil }
        return (text[..<text.index(after: range.lowerBound)], text[range.upperBound...])
    }

    /// True when `text` reads as a link: bare `shlink:/…`, or `…shlink:/…` after a viewer URL (with the `#` the
    /// viewer URL ends in, or without it: `verify` says the `#` is missing).
    public static func looksLikeLink(_ text: some StringProtocol) -> Bool {
        text.hasPrefix(SHLink.scheme) || (text.hasPrefix("http") && text.contains(SHLink.scheme))
    }

    /// The whitespace a pasted link picks up around it: spaces, tabs and line ends (CR, LF).
    public static func isPasteWhitespace(_ c: Character) -> Bool { c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\r\n" }

    /// Most characters of link text read (a link is a few hundred characters; this bounds hostile input).
    public static let maxCharacters = 8192

    /// Parses link text into a link, checking only what is needed to use it: the payload is base64url of
    /// a JSON object with string `url` and `key`; `exp` a number, `flag` and `label` strings when present.
    /// The full checks (lengths, flags, `v`, `exp` against a time) are `verify`'s (`SHLCheck`).
    /// - Throws: `HealthCardError(.validation)` saying what is wrong.
    public static func parse(_ text: String) throws(HealthCardError) -> SHLink {
        guard text.utf8.count <= maxCharacters else {
            throw HealthCardError(
                .validation, "the link text is \(text.utf8.count) characters; a SMART Health Link is a few hundred")
        }
        guard let (viewer, encoded) = split(text) else {
            throw HealthCardError(
                .validation,
                "the text is not a SMART Health Link: it does not start with 'shlink:/' (or a viewer URL ending in '#' and then 'shlink:/')"
            )
        }
        guard let bytes = Base64URL.decode(String(encoded)), let payload = try? JSONParser.parse(bytes),
            payload.objectValue != nil
        else {
            throw HealthCardError(.validation, "the link's payload after 'shlink:/' is not base64url of a JSON object")
        }
        guard let url = payload["url"]?.stringValue, let key = payload["key"]?.stringValue else {
            throw HealthCardError(.validation, "the link's payload has no url or key string")
        }
        var exp: Int64?
        if let value = payload["exp"] {
            guard let lexeme = value.numberLexeme, let seconds = Int64(lexeme) ?? Self.wholeSeconds(lexeme) else {
                throw HealthCardError(.validation, "the link's exp is not a number of seconds")
            }
            exp = seconds
        }
        if let value = payload["flag"], value.stringValue == nil {
            throw HealthCardError(.validation, "the link's flag is not a string")
        }
        if let value = payload["label"], value.stringValue == nil {
            throw HealthCardError(.validation, "the link's label is not a string")
        }
        return SHLink(
            url: url, key: key, exp: exp, flag: payload["flag"]?.stringValue, label: payload["label"]?.stringValue,
            viewer: viewer.map(String.init))
    }

    /// A JSON number lexeme with a fraction or exponent (`1.7e9`) as whole seconds, when it is one and in range.
    static func wholeSeconds(_ lexeme: String) -> Int64? {
        guard let value = Double(lexeme), value.isFinite, value.rounded() == value, abs(value) < 1e15 else {
            return nil
        }
        return Int64(value)
    }
}
