import HealthCardsCore

/// The operator's side of server links: makes and updates links **on the operator's machine**. Each file is
/// encrypted here with the link's key (a fresh 32-byte key per link, a fresh IV per encryption), and only the
/// JWEs, the flags, limits and the passcode's slow hash go to the store: the server never holds a key, so a
/// stolen database gives ciphertext and passcode hashes only. The key leaves this type only inside the link
/// text returned to the caller.
public struct LinkPublisher: Sendable {
    public let store: LinkStore
    public let baseURL: BaseURL

    public init(store: LinkStore, baseURL: BaseURL) {
        self.store = store
        self.baseURL = baseURL
    }

    /// Most wrong passcodes a link may allow.
    public static let maxAttemptsLimit = 1000
    /// Wrong passcodes allowed when none is said.
    public static let defaultMaxAttempts = 10

    /// What a new link is.
    public struct Options: Sendable {
        /// Flag `L`: the content may be updated (`update`), receivers may poll.
        public var longTerm = false
        /// Flag `U`: the URL is the one file, fetched with GET (no manifest, no passcode).
        public var direct = false
        /// Seconds since 1970 after which the link answers 404 (and the payload's `exp`).
        public var exp: Int64?
        /// At most 80 characters (UTF-16), shown to receivers; public to whoever sees the link.
        public var label: String?
        /// The passcode (flag `P`), and the cost of its hash.
        public var passcode: SecretBytes?
        public var passcodeFunction = PasscodeHash.Function.standard
        /// Wrong passcodes allowed in the link's lifetime (with a passcode).
        public var maxAttempts = LinkPublisher.defaultMaxAttempts
        /// A viewer URL ending in `#` put in front of the link text.
        public var viewer: String?

        public init() {}

        var flags: String {
            (longTerm ? "L" : "") + (passcode != nil ? "P" : "") + (direct ? "U" : "")
        }
    }

    /// A link made.
    public struct Created: Sendable {
        /// The link; its `text` holds the key: hand it to the person, never log it.
        public var link: SHLink
        public var id: String
        /// The passcode hash's function and the seconds one derivation took here (a server pays the same for
        /// each passcode it checks).
        public var passcodeCost: (function: PasscodeHash.Function, seconds: Double)?
    }

    /// Makes a link for `contents`, in manifest order.
    /// - Parameter now: seconds since 1970 (creation time, `lastUpdated`).
    /// - Throws: `HealthCardError(.configuration)` for options that do not go together (a `U` link with a passcode or
    ///   several files, attempts out of range, an `exp` not after `now`, a long label), `.crypto` from OpenSSL,
    ///   `.io` from the store.
    public func create(_ contents: [LinkContent], options: Options, now: Int64) throws -> Created {
        guard !contents.isEmpty else { throw HealthCardError(.configuration, "a link needs at least one file") }
        if options.direct {
            guard options.passcode == nil else {
                throw HealthCardError(
                    .configuration,
                    "a U link (one file fetched with GET) cannot have a passcode: the IG forbids U with P, since a GET carries no passcode"
                )
            }
            guard contents.count == 1 else {
                throw HealthCardError(
                    .configuration,
                    "a U link is one file; \(contents.count) were given (a manifest link can hold several)")
            }
        }
        if options.passcode != nil {
            guard (1...Self.maxAttemptsLimit).contains(options.maxAttempts) else {
                throw HealthCardError(
                    .configuration,
                    "wrong-passcode attempts must be 1 to \(Self.maxAttemptsLimit), not \(options.maxAttempts)")
            }
        }
        if let exp = options.exp, exp <= now {
            throw HealthCardError(.configuration, "the link's exp \(exp) (\(Clock.describe(exp))) is not in the future")
        }
        if let label = options.label {
            guard SHLink.labelFits(label) else {
                throw HealthCardError(
                    .configuration, "the label is \(label.utf16.count) characters; a link label has at most 80")
            }
            guard !label.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw HealthCardError(.configuration, "the label holds control characters")
            }
        }
        try checkBaseURL()
        var hash: PasscodeHash?
        var cost: (PasscodeHash.Function, Double)?
        if let passcode = options.passcode {
            let start = Clock.monotonicSeconds()
            hash = try passcode.withUnsafeBytes { bytes in
                try PasscodeHash.make(passcode: bytes, function: options.passcodeFunction)
            }
            cost = (options.passcodeFunction, Clock.monotonicSeconds() - start)
        }
        let key = try AES256Key.random()
        let id = try LinkID.random()
        let files = try Self.encrypt(contents, key: key, now: now)
        let attempts = options.passcode == nil ? nil : options.maxAttempts
        try store.create(
            StoredLink(
                id: id, flags: options.flags, label: options.label, exp: options.exp, createdAt: now, passcode: hash,
                maxAttempts: attempts, remainingAttempts: attempts, files: files))
        let link = SHLink(
            url: baseURL.link(id), key: key.base64url, exp: options.exp,
            flag: options.flags.isEmpty ? nil : options.flags,
            label: options.label, viewer: options.viewer)
        return Created(link: link, id: id, passcodeCost: cost)
    }

    /// Replaces the content of a long-term link under its own key (the key from the link text, a fresh IV for
    /// each file: links-specification "Update Shared Files"), with `lastUpdated` = `now`.
    /// - Parameter link: the link as handed out (its URL names it, its key encrypts).
    /// - Returns: the link as stored before the update.
    /// - Throws: `HealthCardError(.link)` when the link is not under this base URL, not in the store, deactivated,
    ///   not long-term (flag `L`), a `U` link given several files, or its key does not open the stored files;
    ///   `.crypto`, `.io` as `create`.
    @discardableResult
    public func update(link: SHLink, contents: [LinkContent], now: Int64) throws -> StoredLink {
        guard let id = baseURL.id(ofLink: link.url) else {
            throw HealthCardError(.link, "the link's URL \(link.url) is not a link of \(baseURL.text)/<id>")
        }
        guard let key = AES256Key.decode(base64url: link.key) else {
            throw HealthCardError(.link, "the link's key is not 43 base64url characters (32 bytes)")
        }
        guard !contents.isEmpty else { throw HealthCardError(.configuration, "an update needs at least one file") }
        guard let stored = try store.link(id: id, withFiles: true) else {
            throw HealthCardError(.link, "there is no link \(id) in the database")
        }
        guard stored.active else {
            throw HealthCardError(.link, "link \(id) was deactivated; a deactivated link stays closed")
        }
        guard stored.isLongTerm else {
            throw HealthCardError(
                .link,
                "link \(id) is not long-term (flag L): its receivers were told its content does not change. Make a new link"
            )
        }
        if stored.isDirect && contents.count != 1 {
            throw HealthCardError(.link, "link \(id) is a U link: one file, not \(contents.count)")
        }
        for file in stored.files {
            do {
                _ = try JWE(compact: file.jwe).decrypt(key: key)
            } catch {
                throw HealthCardError(
                    .link,
                    "the key in this link text does not open the stored file \(file.position + 1) of link \(id): "
                        + "it is not this link's text (nothing was changed)")
            }
        }
        let files = try Self.encrypt(contents, key: key, now: now)
        guard try store.replaceFiles(linkID: id, files: files, now: now) else {
            throw HealthCardError(.link, "link \(id) was deactivated meanwhile; nothing was changed")
        }
        return stored
    }

    /// Encrypts each file (fresh IV) and opens it again with the key before anything is stored.
    static func encrypt(_ contents: [LinkContent], key: AES256Key, now: Int64) throws -> [StoredFile] {
        try contents.enumerated().map { position, content in
            let jwe = try JWE.encrypt(content.bytes, key: key, contentType: content.contentType)
            guard let opened = try? jwe.decrypt(key: key), opened.plaintext == content.bytes else {
                throw HealthCardError(.crypto, "file \(position + 1) did not decrypt back to itself after encryption")
            }
            return StoredFile(
                position: position, contentType: content.contentType, fhirVersion: content.fhirVersion,
                jwe: jwe.compact,
                lastUpdated: now)
        }
    }

    /// Records the base URL in the database the first time, and refuses another one later: links made under one
    /// base URL are served under it, so a second one would make links the server does not answer.
    /// - Throws: `HealthCardError(.configuration)` naming both URLs.
    public func checkBaseURL() throws {
        let stored = try store.settingOnce("base_url", baseURL.text)
        guard stored == baseURL.text else {
            throw HealthCardError(
                .configuration,
                "this database's links are served at \(stored), not \(baseURL.text): give the base URL it was made with"
            )
        }
    }
}
