/// Revocation identifiers (`vc.rid`) and revocation lists (digest section 8; spec "Revocation").
public enum RID {
    /// Largest `rid` length, in characters.
    public static let maxLength = 24

    /// The spec's recommended rid: base64url of the first 8 bytes of HMAC-SHA-256 keyed by the UTF-8
    /// of `secret + kid` (the base64url texts concatenated, not decoded, as the spec generator does),
    /// over the UTF-8 patient id. 11 characters.
    /// - Parameters:
    ///   - secret: the issuer-wide 256-bit secret as base64url text (43 characters).
    ///   - kid: the signing key's kid.
    ///   - patientID: the issuer's stable id of the person.
    public static func derive(secret: String, kid: String, patientID: String) -> String {
        let mac = Digest.hmacSHA256(key: Array((secret + kid).utf8), message: Array(patientID.utf8))
        return Base64URL.encode(mac.prefix(8))
    }

    /// True for a valid rid: 1 to 24 base64url characters.
    public static func isValid(_ rid: String) -> Bool {
        !rid.isEmpty && rid.utf8.count <= maxLength && rid.utf8.allSatisfy(isBase64URLCharacter)
    }

    static func isBase64URLCharacter(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
    }
}

/// A revocation list for one key, `<iss>/.well-known/crl/<kid>.json`:
/// `{"kid":…,"method":"rid","ctr":N,"rids":["<rid>","<rid>.<seconds>",…]}` (digest section 8).
public struct CRL: Sendable, Equatable {
    /// One revoked rid, optionally only for cards whose `nbf` is before `before` (seconds).
    public struct Entry: Sendable, Equatable {
        public var rid: String
        public var before: Int64?
        public init(rid: String, before: Int64? = nil) {
            self.rid = rid
            self.before = before
        }
        /// `rid` or `rid.seconds`.
        public var text: String { before.map { "\(rid).\($0)" } ?? rid }
    }

    public var kid: String
    /// Starts at 1; increases with every change. The key's JWK carries the same value as `crlVersion`.
    public var ctr: Int
    public var entries: [Entry]

    public init(kid: String, ctr: Int = 1, entries: [Entry] = []) {
        self.kid = kid
        self.ctr = ctr
        self.entries = entries
    }

    /// The entry that revokes a card with `rid` and `nbf` (seconds), or nil when the list does not revoke it.
    public func entry(revoking rid: String, nbf: Int64) -> Entry? {
        entries.first { $0.rid == rid && ($0.before.map { nbf < $0 } ?? true) }
    }

    /// True when a card with `rid` and `nbf` (seconds) is revoked by this list.
    public func revokes(rid: String, nbf: Double) -> Bool {
        entries.contains { $0.rid == rid && ($0.before.map { nbf < Double($0) } ?? true) }
    }

    /// The list as pretty JSON with a final newline.
    public var fileBytes: [UInt8] {
        let object: JSONObject = [
            "kid": .string(kid), "method": "rid", "ctr": .integer(Int64(ctr)), "rids": .array(entries.map { .string($0.text) }),
        ]
        return JSONWriter.pretty(.object(object)) + [0x0A]
    }

    /// Parses a CRL file.
    /// - Throws: `HealthCardError(.validation)` naming what is malformed.
    public init(bytes: [UInt8], source: String) throws {
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch { throw HealthCardError(.validation, "\(source) is not JSON: \(error)") }
        guard let kid = json["kid"]?.stringValue else { throw HealthCardError(.validation, "\(source) has no kid") }
        guard json["method"]?.stringValue == "rid" else {
            throw HealthCardError(.validation, "\(source): method must be \"rid\", found \(quoted(json["method"]))")
        }
        guard let ctr = json["ctr"]?.numberLexeme.flatMap({ Int($0) }), ctr >= 1 else {
            throw HealthCardError(.validation, "\(source): ctr must be a positive integer")
        }
        guard let rids = json["rids"]?.arrayValue else { throw HealthCardError(.validation, "\(source): rids must be an array") }
        var entries: [Entry] = []
        for item in rids {
            guard let text = item.stringValue else { throw HealthCardError(.validation, "\(source): rids holds a non-string") }
            let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            let rid = String(parts[0])
            guard RID.isValid(rid) else { throw HealthCardError(.validation, "\(source): \(Quote.text(text)) is not a rid (1 to 24 base64url characters)") }
            var before: Int64?
            if parts.count == 2 {
                guard let seconds = Int64(parts[1]) else {
                    throw HealthCardError(.validation, "\(source): \(Quote.text(text)) has a timestamp suffix that is not integer seconds")
                }
                before = seconds
            }
            entries.append(Entry(rid: rid, before: before))
        }
        self.init(kid: kid, ctr: ctr, entries: entries)
    }
}

/// The issuer-wide revocation secret file: 32 random bytes as base64url text (43 characters) and a
/// final newline, mode 0600.
public enum RIDSecretFile {
    /// Makes a new 256-bit secret and writes it, only ever to a new regular file (mode 0600; a missing
    /// folder is created 0700). Refuses to overwrite anything: every rid depends on the secret.
    /// - Throws: `HealthCardError(.key)` when the path exists or is `-`, `.io`/`.crypto` on failure.
    public static func create(at path: String) throws {
        let secret = Base64URL.encode(try Digest.randomBytes(32))
        try FileIO.writeNewPrivateFile(Array((secret + "\n").utf8), to: path, what: "revocation secret")
    }

    /// Reads a secret file: base64url text, surrounding whitespace ignored.
    /// - Throws: `HealthCardError(.key)` for a missing file, a file readable by group or others (with the
    ///   `chmod` to run), or content that is not base64url of at least 16 bytes. Never quotes the secret.
    public static func read(_ path: String) throws -> String {
        guard FileIO.exists(path) else {
            throw HealthCardError(.key, "revocation secret \(path) does not exist; make one with `healthcards keygen --rid-secret \(path)`")
        }
        // What the path is comes first: `chmod 600` is no advice for /dev/null or a folder.
        try FileIO.requireRegularFile(path, role: "revocation secret", kind: .key,
                                      fix: "give the file `healthcards keygen --rid-secret FILE` made")
        if let mode = FileIO.mode(path), mode & 0o077 != 0 {
            throw HealthCardError(.key, "revocation secret \(path) can be read by group or others (mode \(String(mode, radix: 8))); run `chmod 600 \(path)`")
        }
        let text = String(decoding: try FileIO.read(path), as: UTF8.self).trimmingCharacters(in: " \t\r\n")
        guard let bytes = Base64URL.decode(text), bytes.count >= 16 else {
            throw HealthCardError(.key, "revocation secret \(path) is not base64url text of at least 16 bytes (a 256-bit secret is 43 characters)")
        }
        return text
    }
}
