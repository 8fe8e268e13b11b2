import HealthCardsCore

/// Where a verifier gets the file of a `U` link: the caller's way to fetch it (an offline site folder, an
/// HTTP client, a test's dictionary). Verify never fetches a URL itself.
public protocol SHLFileSource: Sendable {
    /// The encrypted file (compact JWE bytes) at `url`, or why there is none.
    func file(at url: String) -> SHLFileLookup
}

/// What an `SHLFileSource` found at a link's URL.
public enum SHLFileLookup: Sendable {
    /// The file's bytes (at most `JWE.maxCompactBytes` are read), a name for messages (a path or the URL), and
    /// an identity: two URLs that reach the same file give the same identity (an IV met twice in one file is no reuse).
    case found(bytes: [UInt8], name: String, identity: String)
    /// The file is larger than `JWE.maxCompactBytes` (its name and size in bytes); it was not read.
    case tooLarge(name: String, bytes: Int)
    /// The source stands for the URL's host, but the file is not there (or not one a web server serves): why.
    case missing(String)
    /// The source does not stand for the URL's host: the file was not checked; the sentence says what would
    /// let it be.
    case notResolved(String)
}

/// No file source: every `U` link's file is left unchecked (`SHL_NOT_RESOLVED`).
public struct NoSHLFiles: SHLFileSource {
    public init() {}
    public func file(at url: String) -> SHLFileLookup {
        .notResolved("no source of link files was given; verify never fetches a URL")
    }
}

/// The QR symbol a link was read from: its version and error correction level, and the smallest version
/// its text fits at that level (nil when not known).
package struct LinkSymbol: Sendable {
    package var version: Int?
    package var errorCorrection: QRErrorCorrection?
    package var smallestVersion: Int?

    package init(version: Int?, errorCorrection: QRErrorCorrection?, smallestVersion: Int?) {
        self.version = version
        self.errorCorrection = errorCorrection
        self.smallestVersion = smallestVersion
    }
}

/// Checks a SMART Health Link (links-specification): the link text and payload, and, for a `U` link, the
/// encrypted file the caller's `SHLFileSource` gives for its URL, then the card inside as usual.
///
/// Where the IG says SHALL, an error; where it says SHOULD or calls a value a hint, a warning. The link's key
/// is never put in a finding, a note or the report's payload.
package struct SHLCheck {
    /// Where the files of `U` links come from.
    package let files: any SHLFileSource
    package let now: Int64
    package let checker: JWSCheck
    /// Judge links against the Kill the Clipboard profile too (`SHL_KTC`).
    package var ktc = false

    package init(files: any SHLFileSource, now: Int64, checker: JWSCheck, ktc: Bool = false) {
        self.files = files
        self.now = now
        self.checker = checker
        self.ktc = ktc
    }

    /// The IVs of the link files read in one check or run, to find an IV used twice under one key: that
    /// breaks AES-GCM (the XOR of the two plaintexts leaks and tags can be forged). The same IV under two
    /// different keys is no weakness (GCM's nonce rule is per key), so it is not a finding.
    package final class IVRegister {
        private var seen: [[UInt8]: [(file: String, identity: String, key: [UInt8])]] = [:]

        package init() {}

        /// Registers the IV of the file `file` (`identity`: the same file reached by two links is not a reuse)
        /// opened with the key named by `key` (a fingerprint); returns the earlier file with that IV and key.
        package func register(iv: [UInt8], file: String, identity: String, key: [UInt8]) -> String? {
            let earlier = seen[iv, default: []]
            if earlier.contains(where: { $0.identity == identity && $0.key == key }) { return nil }
            let reuse = earlier.first(where: { $0.key == key && $0.identity != identity })?.file
            seen[iv, default: []].append((file, identity, key))
            return reuse
        }
    }

    /// Checks link text read from `file` (a text file, a QR symbol, or a command-line argument).
    /// - Parameters:
    ///   - symbol: the QR symbol the text came from, when it came from an image (the links specification asks
    ///     for error correction M; a symbol larger than its text needs is warned).
    /// - Returns: the link's report, then the reports of the card(s) in its file when it was opened.
    package func check(
        text: String, file: String?, symbol: LinkSymbol? = nil, findings initial: [Finding] = [], ivs: IVRegister
    ) -> [CredentialReport] {
        var report = CredentialReport(source: .shlink, file: file)
        report.findings = initial
        func add(_ code: RuleCode, _ message: String, path: String? = nil, severity: Finding.Severity? = nil) {
            report.findings.append(Finding(code, message, at: .init(file: file, path: path), severity: severity))
        }
        if let level = symbol?.errorCorrection, level != .M {
            add(.shlQRECC, "the link's QR uses error correction \(level.rawValue); the links specification asks for M")
        }
        if let version = symbol?.version, let smallest = symbol?.smallestVersion, version > smallest {
            add(
                .shlQRNotMinimal,
                "the link's QR is version \(version), but its text fits version \(smallest) at ECC "
                    + "\(symbol?.errorCorrection?.rawValue ?? "?"): a larger symbol has smaller modules and is harder to scan "
                    + "from paper or a screen; let the encoder pick the smallest version")
        }
        guard text.utf8.count <= SHLinkText.maxCharacters else {
            add(
                .shlPayloadEncoding,
                "the link text is \(text.utf8.count) characters; a SMART Health Link is a few hundred")
            return [report]
        }
        var text = text
        // Surrounding spaces, tabs and line ends are what a link picks up when it is pasted (from a mail, a chat, a
        // terminal): trimmed with a warning. Inside the link they stay, and the payload then is not base64url.
        let trimmed = Self.trimmingPasteWhitespace(text)
        if trimmed.count != text.count, !trimmed.isEmpty {
            let leading = text.prefix { SHLinkText.isPasteWhitespace($0) }
            let trailing = text.reversed().prefix { SHLinkText.isPasteWhitespace($0) }
            let sides = [leading.isEmpty ? nil : "before it (\(Self.describeWhitespace(leading)))",
                          trailing.isEmpty ? nil : "after it (\(Self.describeWhitespace(trailing.reversed())))"]
                .compactMap { $0 }.joined(separator: " and ")
            add(.shlTextWhitespace, "the link text has whitespace \(sides), as a pasted link picks up; it was trimmed "
                + "and the link read. Hand out the link alone: a receiver given it as it is may not open it")
            text = trimmed
        }
        if SHLinkText.split(text) == nil, let start = Self.schemeInOtherCase(text) {
            // RFC 3986 section 3.1: schemes are case-insensitive, so `SHLINK:/` is the same URI; the IG writes it in
            // lower case, and receivers that compare it exactly do not open it.
            let end = text.index(start, offsetBy: SHLink.scheme.count)
            add(.shlPrefix, "the link's scheme is \(Quote.text(String(text[start..<end]))); schemes are case-insensitive "
                + "(RFC 3986 section 3.1), so it is read, but the IG writes 'shlink:/' and receivers that compare it exactly "
                + "do not open it. Write 'shlink:/'", severity: .warning)
            text.replaceSubrange(start..<end, with: SHLink.scheme)
        }
        var split = SHLinkText.split(text)
        var hashMissing = false
        if split == nil, let missing = Self.viewerWithoutHash(text) {
            // `https://viewer.example/shlink:/…`: a viewer URL whose `#` is missing. The link would be the URL's
            // path, sent to the viewer's server with its key; read on to check the rest.
            add(
                .shlViewerURL,
                "the viewer URL \(Quote.text(String(missing.viewer), limit: 120)) is followed by 'shlink:/' without '#': "
                    + "the '#' is missing. Without it the link is part of the URL's path, so a browser sends it, key and all, "
                    + "to the viewer's server, and a viewer does not find it in the fragment. Write the viewer URL ending in "
                    + "'#', then 'shlink:/…'", severity: .error)
            split = (missing.viewer, missing.encoded)
            hashMissing = true
        }
        guard let (viewer, encoded) = split else {
            add(
                .shlPrefix,
                "the text \(Quote.text(text, limit: 20)) is not a SMART Health Link: expected 'shlink:/' and the payload, "
                    + "optionally after a viewer URL ending in '#'")
            return [report]
        }
        if let viewer {
            let hashes = viewer.filter { $0 == "#" }.count
            if hashMissing {
            } else if hashes != 1 {
                add(
                    .shlViewerURL,
                    "the viewer prefix \(Quote.text(String(viewer), limit: 120)) has \(hashes) '#'; it must be a URL that ends "
                        + "in exactly one '#' (links-specification), so the link starts right after the fragment's '#' and "
                        + "never reaches the viewer's server. Give the viewer URL without a fragment", severity: .error)
            } else if !viewer.hasPrefix("https://") {
                add(.shlViewerURL, "the viewer prefix \(Quote.text(String(viewer), limit: 120)) is not an https URL ending in '#'")
            }
            report.notes.append("viewer \(ControlCharacters.escaped(String(viewer.prefix(200))))")
        }
        var payloadText = Substring(encoded)
        if payloadText.hasSuffix("=") {
            let unpadded = payloadText.prefix { $0 != "=" }
            if payloadText[unpadded.endIndex...].allSatisfy({ $0 == "=" }), payloadText.count - unpadded.count <= 2 {
                add(
                    .shlPayloadForm,
                    "the payload after 'shlink:/' ends in '=' padding; base64url in a link has no padding (RFC 4648 "
                        + "section 5). It was read without it; receivers that decode strictly refuse it")
                payloadText = unpadded
            }
        }
        guard let bytes = Base64URL.decode(String(payloadText)) else {
            if let offset = payloadText.firstIndex(where: { $0.isWhitespace }) {
                let at = payloadText.distance(from: payloadText.startIndex, to: offset)
                let what = payloadText[offset].isNewline ? "a line break" : (payloadText[offset] == "\t" ? "a tab" : "a space")
                add(
                    .shlPayloadEncoding,
                    "the payload after 'shlink:/' has \(what) inside it, at character \(at): a link is one unbroken line "
                        + "(a mail or chat program may have wrapped it). Join it into one line; only whitespace around a "
                        + "link is trimmed")
            } else {
                add(
                    .shlPayloadEncoding,
                    "the payload after 'shlink:/' is not base64url without padding (RFC 4648 section 5)")
            }
            return [report]
        }
        guard let payload = try? JSONParser.parse(bytes), let object = payload.objectValue else {
            add(.shlPayloadNotJSON, "the payload after 'shlink:/' does not decode to a JSON object")
            return [report]
        }
        if let offset = JWSCheck.whitespaceOutsideStrings(bytes) {
            add(
                .shlPayloadForm,
                "the payload JSON has whitespace at byte \(offset) (pretty-printed); the links specification says it is "
                    + "minified, and each byte makes the QR denser")
        }
        var redacted = object
        if redacted["key"] != nil { redacted["key"] = "(not shown)" }
        report.payload = .object(redacted)

        var usable = true
        if let v = payload["v"], v.numberLexeme != "1" {
            add(
                .shlVersionUnknown,
                "the link says v \(JWE.describe(v)); this verifier knows version 1 only, and a receiver "
                    + "SHOULD NOT resolve a link of a newer version", path: "v")
            usable = false
        }
        let url = payload["url"]?.stringValue
        if let url {
            let length = url.unicodeScalars.count
            if length > SHLink.maxURLCharacters {
                add(
                    .shlURLTooLong, "url is \(length) characters; at most \(SHLink.maxURLCharacters) are allowed",
                    path: "url")
            }
            if !url.hasPrefix("https://") {
                add(
                    .shlURLNotHTTPS,
                    "url \(Quote.text(url)) is not https: the file travels unencrypted by TLS, and whoever is on the way "
                        + "sees the URL (the file itself stays encrypted with the link's key). Where its host publishes the "
                        + "site at https, the file is looked up there and still checked", path: "url")
            }
            if let problem = SHLEntropy.problem(url: url) {
                add(.shlURLEntropy, problem, path: "url")
            }
            report.notes.append("url \(url)")
        } else {
            add(.shlURLMissing, payload["url"] == nil ? "the payload has no url" : "url is not a string", path: "url")
            usable = false
        }
        var key: AES256Key?
        if let text = payload["key"]?.stringValue, let decoded = AES256Key.decode(base64url: text) {
            key = decoded
            if let bytes = Base64URL.decode(text), SHLEntropy.isText(bytes) {
                add(
                    .shlKeyText,
                    "the key's 32 bytes are all text characters (ASCII letters, digits, punctuation: a passphrase or hex "
                        + "digits, not random bytes), so it has far less than 256 bits of entropy; make the key from 32 "
                        + "random bytes", path: "key")
            } else if let bytes = Base64URL.decode(text), Set(bytes).count < 16 {
                // 32 random bytes take about 30 different values; fewer than 16 happens far under once in a billion.
                let values = Set(bytes).count
                add(
                    .shlKeyWeak,
                    "the key's 32 bytes take only \(values) different value\(values == 1 ? "" : "s")"
                        + (values == 1 ? " (the same byte 32 times)" : "")
                        + "; 32 random bytes take about 30, so this key was not made at random and may be guessed: make the "
                        + "key from 32 random bytes", path: "key")
            }
        } else {
            add(.shlKeyInvalid, Self.keyProblem(payload["key"]), path: "key")
            usable = false
        }
        if let exp = payload["exp"] {
            if let seconds = exp.doubleValue, seconds.isFinite, seconds >= 0, seconds < 1e11 {
                if seconds < Double(now) {
                    add(
                        .shlExpired,
                        "exp \(exp.numberLexeme ?? "") (\(Clock.describe(Int64(seconds)))) is before now "
                            + "(\(Clock.describe(now))): exp is a hint, so receivers may take the link as stale (the host may "
                            + "still serve its file)",
                        path: "exp")
                }
                report.notes.append("exp \(Clock.describe(Int64(seconds)))")
            } else {
                // Milliseconds of a real date are 1e11 to 1e14 (the years 1973 to 5138); anything larger, or not
                // finite, is no date at all.
                var hint = ""
                if let value = exp.doubleValue {
                    hint =
                        (1e11..<1e14).contains(value)
                        ? " (it looks like milliseconds)" : (value < 0 ? " (it is before 1970)" : " (it is far beyond any date)")
                }
                add(
                    .shlExpInvalid, "exp \(JWE.describe(exp)) is not a number of seconds since 1970\(hint)", path: "exp"
                )
            }
        }
        var flags = ""
        if let flag = payload["flag"] {
            if let text = flag.stringValue {
                flags = text
                let letters = Array(text.unicodeScalars)
                let ordered = zip(letters, letters.dropFirst()).allSatisfy { $0.value < $1.value }
                if !letters.allSatisfy({ ("A"..."Z").contains($0) }) || !ordered {
                    add(
                        .shlFlagInvalid,
                        "flag \(Quote.text(text, limit: 20)) is not single capital letters in alphabetical order, each once",
                        path: "flag")
                }
                if text.contains("U") && text.contains("P") {
                    add(
                        .shlFlagUWithP,
                        "flag has both U and P: a U link is one file fetched with GET, which cannot ask for "
                            + "a passcode (links-specification: U SHALL NOT be used with P)", path: "flag")
                    usable = false
                }
            } else {
                add(.shlFlagInvalid, "flag is not a string", path: "flag")
            }
            report.notes.append("flag \(flags.isEmpty ? "(none)" : flags)")
        }
        if let label = payload["label"] {
            if let text = label.stringValue {
                if text.unicodeScalars.count > SHLink.maxLabelCharacters {
                    add(.shlLabelInvalid, SHLink.labelLengthProblem(text), path: "label")
                } else if let problem = SHLink.labelUTF16Problem(text) {
                    add(.shlLabelUTF16, problem, path: "label")
                }
                report.notes.append("label \(Quote.text(text, limit: SHLink.maxLabelCharacters))")
            } else {
                add(.shlLabelInvalid, "label is not a string", path: "label")
            }
        }
        if ktc {
            let exp = payload["exp"]?.doubleValue.flatMap { $0.isFinite && abs($0) < 1e15 ? Int64($0) : nil }
            for problem in KTCProfile.problems(flag: flags, exp: exp, now: now) {
                add(.shlKTC, problem.message, severity: problem.severity)
            }
        }
        guard usable, let url, let key else { return [report] }
        guard flags.contains("U") else {
            add(
                .shlManifestNotChecked,
                "the link has no flag U, so its url is a manifest a receiver POSTs to; verify is offline and "
                    + "checked the payload only")
            return [report]
        }
        let path: String
        let fileBytes: [UInt8]
        let identity: String
        switch files.file(at: url) {
        case .notResolved(let hint):
            add(.shlNotResolved, "the link's file was not checked: \(hint)")
            return [report]
        case .missing(let why):
            report.notes.append("file \(url)")
            add(.shlFileMissing, why)
            return [report]
        case .tooLarge(let name, let size):
            report.notes.append("file \(name)")
            add(.shlJWEForm, "\(name) is \(size) bytes; a link file holding one card is a few kB")
            return [report]
        case .found(let found, let name, let id):
            (fileBytes, path, identity) = (found, name, id)
        }
        report.notes.append("file \(path)")
        guard fileBytes.count <= checker.limits.linkFileBytes else {
            add(.shlJWEForm, "\(path) is \(fileBytes.count) bytes; a link file holding one card is a few kB")
            return [report]
        }
        let cards = open(fileBytes, path: path, identity: identity, key: key, report: &report, ivs: ivs)
        return [report] + cards
    }

    /// `text` without the spaces, tabs and line ends around it.
    static func trimmingPasteWhitespace(_ text: String) -> String {
        var slice = Substring(text)
        while let first = slice.first, SHLinkText.isPasteWhitespace(first) { slice = slice.dropFirst() }
        while let last = slice.last, SHLinkText.isPasteWhitespace(last) { slice = slice.dropLast() }
        return String(slice)
    }

    /// "2 spaces, a line end" for the whitespace characters of `run`.
    static func describeWhitespace(_ run: some Collection<Character>) -> String {
        var counts: [(String, Int)] = []
        for c in run {
            let name = c == " " ? "space" : (c == "\t" ? "tab" : "line end")
            if let i = counts.firstIndex(where: { $0.0 == name }) { counts[i].1 += 1 } else { counts.append((name, 1)) }
        }
        return counts.map { $0.1 == 1 ? "a \($0.0)" : "\($0.1) \($0.0)s" }.joined(separator: ", ")
    }

    /// A viewer URL followed by `shlink:/` without the `#` between them (`https://viewer.example/shlink:/…`): the
    /// viewer part and the payload after `shlink:/`; nil for anything else.
    static func viewerWithoutHash(_ text: String) -> (viewer: Substring, encoded: Substring)? {
        guard text.hasPrefix("http"), let range = Substring(text).range(of: SHLink.scheme), range.lowerBound > text.startIndex,
            text[text.index(before: range.lowerBound)] != "#"
        else { return nil }
        return (text[..<range.lowerBound], text[range.upperBound...])
    }

    /// Where `shlink:/` starts in `text` written in another case (at the start, or right after a viewer's `#`).
    static func schemeInOtherCase(_ text: String) -> String.Index? {
        let scheme = SHLink.scheme
        if text.prefix(scheme.count).lowercased() == scheme { return text.startIndex }
        guard let hash = text.firstIndex(of: "#") else { return nil }
        let start = text.index(after: hash)
        return text[start...].prefix(scheme.count).lowercased() == scheme ? start : nil
    }

    /// Opens the link file `bytes` (named `path`): form, header, IV, tag, then the card inside.
    private func open(
        _ bytes: [UInt8], path: String, identity: String, key: AES256Key, report: inout CredentialReport, ivs: IVRegister
    ) -> [CredentialReport] {
        let file = report.locationFile
        func add(_ code: RuleCode, _ message: String) {
            report.findings.append(Finding(code, message, at: .init(file: file)))
        }
        // One final newline (LF or CRLF) is what an editor or `echo` leaves; it is not part of the JWE.
        var body = bytes[...]
        if body.last == 0x0A {
            body = body.dropLast()
            if body.last == 0x0D { body = body.dropLast() }
        }
        let jwe = JWE(compact: String(decoding: body, as: UTF8.self))
        let parts: JWE.Parts
        do { parts = try jwe.partsFailing() } catch {
            switch error {
            case .header(let why): add(.shlJWEHeader, "\(path): \(why)")
            default: add(.shlJWEForm, "\(path): \(error)")
            }
            return []
        }
        if let earlier = ivs.register(iv: parts.iv, file: path, identity: identity, key: key.fingerprint) {
            add(
                .shlIVReused,
                "\(path) has the IV of \(earlier) under the same key: AES-GCM with a repeated IV leaks the XOR of the two "
                    + "plaintexts and lets tags be forged. Encrypt every file with a fresh random IV")
        }
        if parts.header["kid"] != nil {
            add(
                .shlJWEKid,
                "\(path): the JWE header has a kid; with alg dir the key is the link's own, so a kid names nothing a "
                    + "receiver can use and tells a reader of the file which key opens it. Leave kid out")
        }
        guard let contentType = parts.contentType else {
            add(
                .shlJWEHeader,
                "\(path): the JWE header has no cty; a SMART Health Link file says its content type "
                    + "(application/smart-health-card)")
            return []
        }
        let plaintext: [UInt8]
        do { plaintext = try jwe.decryptFailing(key: key).plaintext } catch JWE.Failure.authentication {
            add(
                .shlDecryptFailed,
                "\(path) does not decrypt with the link's key: the key is wrong, or the file (its header, IV, "
                    + "ciphertext or tag) was altered; AES-GCM cannot tell which")
            return []
        } catch {
            add(.shlContent, "\(path): \(error)")
            return []
        }
        if ktc, !KTCProfile.contentTypes.contains(where: { JWE.mediaType(contentType, is: $0) }) {
            add(
                .shlKTC,
                "\(path) holds \(Quote.text(contentType, limit: 80)); the Kill the Clipboard profile's receivers read "
                    + KTCProfile.contentTypes.joined(separator: " or "))
        }
        if JWE.mediaType(contentType, is: SharedBundle.contentType) {
            // FHIR content (a shared Bundle, as the Kill the Clipboard profile sends): its shape is checked, and the
            // report says that a shape check is what it was.
            let checked = SharedBundleCheck.check(plaintext)
            report.notes.append(
                "content \(SharedBundle.contentType) (\(plaintext.count) bytes): \(checked.summary); checked as a FHIR R4 "
                    + "Bundle's shape (types, fullUrl and reference resolution, dates, PDF attachments), not against profiles")
            for problem in checked.problems { add(.shlBundle, "\(path): \(problem)") }
            return []
        }
        guard JWE.mediaType(contentType, is: JWE.smartHealthCard) else {
            report.notes.append("content \(Quote.text(contentType, limit: 80)) (\(plaintext.count) bytes)")
            add(
                .shlContentNotChecked,
                "\(path) decrypts to \(Quote.text(contentType, limit: 80)) content, which this verifier does not check (it "
                    + "checks \(JWE.smartHealthCard)): the link opens, but what it carries was not looked at")
            return []
        }
        let cards = CardFile.check(plaintext, file: "\(path) (from link \(file ?? "text"))", checker: checker)
        if cards.count == 1, cards[0].findings.contains(where: { $0.code == .fileNotJSON }) {
            add(
                .shlContent,
                "\(path) decrypts, but not to a .smart-health-card file (JSON {\"verifiableCredential\":[…]}), "
                    + "which its cty says it is")
        }
        return cards
    }
}

extension SHLCheck {
    /// What is wrong with a link's `key` that does not decode to 32 bytes: missing, not a string, its length, a
    /// character that is not base64url (by position), or a 43rd character whose last two bits are not zero (not
    /// canonical: RFC 4648 section 3.5). Never the key's text.
    static func keyProblem(_ key: JSONValue?) -> String {
        guard let key else { return "the payload has no key" }
        guard let text = key.stringValue else { return "key is not a string; expected 43 base64url characters (32 bytes)" }
        let chars = Array(text.utf8)
        if let index = chars.firstIndex(where: { !RID.isBase64URLCharacter($0) }) {
            return "key has a character that is not base64url at position \(index + 1) (padding '=' and '+' '/' are not "
                + "base64url); expected 43 base64url characters (32 bytes)"
        }
        guard chars.count == 43 else {
            return "key is \(chars.count) base64url characters; expected 43 (32 bytes)"
        }
        return "key is 43 base64url characters but not canonical: its last character carries 6 bits, of which only the "
            + "first 4 belong to the 32 bytes, and the other 2 must be zero (RFC 4648 section 3.5: the last character is one "
            + "of A E I M Q U Y c g k o s w 0 4 8); a verifier that decodes strictly refuses it. Encode the 32 key bytes again"
    }
}
