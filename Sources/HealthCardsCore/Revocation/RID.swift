/// Revocation identifiers (`vc.rid`) and revocation lists (digest section 8; spec "Revocation").
public enum RID {
    /// Largest `rid` length, in characters.
    public static let maxLength = 24

    /// The spec's recommended rid: base64url of the first 8 bytes of HMAC-SHA-256 keyed by the UTF-8
    /// of `secret + kid` (the base64url texts concatenated, not decoded, as the spec generator does),
    /// over the UTF-8 patient id. 11 characters.
    /// - Parameters:
    ///   - secret: the issuer-wide 256-bit secret (`RIDSecret`); the key is made in a `SecretBytes`
    ///     buffer and wiped after the HMAC.
    ///   - kid: the signing key's kid.
    ///   - patientID: the issuer's stable id of the person.
    /// - Throws: `HealthCardError(.crypto)` when the HMAC fails: a rid is never empty or made up.
    public static func derive(secret: RIDSecret, kid: String, patientID: String) throws(HealthCardError) -> String {
        let key = secret.text.appending(kid.utf8)
        let mac = try key.withUnsafeBytes { k in
            Result { () throws(HealthCardError) in try Digest.hmacSHA256(key: k, message: Array(patientID.utf8)) }
        }.get()
        return Base64URL.encode(mac.prefix(8))
    }

    /// True for a valid rid: 1 to 24 base64url characters.
    public static func isValid(_ rid: String) -> Bool {
        !rid.isEmpty && rid.utf8.count <= maxLength && rid.utf8.allSatisfy(isBase64URLCharacter)
    }

    package static func isBase64URLCharacter(_ c: UInt8) -> Bool {
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

        /// True when this entry revokes a card of its rid whose `nbf` is `nbf` seconds: always without a
        /// timestamp; with one (`rid.T`), when `nbf` is before `T` (a card issued at `T` or later is not revoked;
        /// digest section 8). The one revocation predicate: every check of a card against a list calls it.
        public func revokes(nbfSeconds nbf: Int64) -> Bool { before.map { nbf < $0 } ?? true }

        /// As `revokes(nbfSeconds:)` for an `nbf` read from a card's JSON, which may have a fraction: exactly
        /// `nbf < T` (for a whole `T` that is `⌊nbf⌋ < T`), with no rounding of `T` to a Double. A NaN is before
        /// no timestamp; an infinite or huge value is clamped (it never traps).
        public func revokes(nbf: Double) -> Bool { revokes(nbfSeconds: Self.wholeSeconds(nbf)) }

        /// `nbf` rounded down to whole seconds, clamped to Int64 (NaN: `Int64.max`, before no timestamp).
        static func wholeSeconds(_ nbf: Double) -> Int64 {
            guard !nbf.isNaN else { return .max }
            let down = nbf.rounded(.down)
            // -2^63 is an Int64; 2^63 is not.
            if down >= 9_223_372_036_854_775_808.0 { return .max }
            if down < -9_223_372_036_854_775_808.0 { return .min }
            return Int64(down)
        }
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

    /// True when a card with `rid` and `nbf` (seconds, as a card's JSON has it) is revoked by this list
    /// (`Entry.revokes(nbf:)`).
    public func revokes(rid: String, nbf: Double) -> Bool { entry(revoking: rid, nbf: nbf) != nil }

    /// True when a card with `rid` and `nbf` (whole seconds) is revoked by this list (`Entry.revokes(nbfSeconds:)`).
    public func revokes(rid: String, nbfSeconds nbf: Int64) -> Bool {
        entries.contains { $0.rid == rid && $0.revokes(nbfSeconds: nbf) }
    }

    /// The first entry that revokes a card with `rid` and `nbf` (seconds, as a card's JSON has it), or nil.
    public func entry(revoking rid: String, nbf: Double) -> Entry? {
        entries.first { $0.rid == rid && $0.revokes(nbf: nbf) }
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
        do { json = try JSONParser.parseFailing(bytes) } catch { throw HealthCardError(.validation, "\(source) is not JSON: \(error)") }
        guard let kid = json["kid"]?.stringValue else { throw HealthCardError(.validation, "\(source) has no kid") }
        guard json["method"]?.stringValue == "rid" else {
            throw HealthCardError(.validation, "\(source): method must be \"rid\", found \(quoted(json["method"]))")
        }
        // Below 2^53, the largest integer every JSON reader (JavaScript's included) holds exactly; this also
        // leaves room for `revoke` to add one.
        guard let ctr = json["ctr"]?.numberLexeme.flatMap({ Int($0) }), ctr >= 1, ctr < 1 << 53 else {
            throw HealthCardError(.validation, "\(source): ctr must be a positive integer below 2^53")
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
                // Digits only: Int64 also reads "-1" and "+5", which checkers that take a suffix of anything but
                // digits for no suffix read as "every card of the rid" (this one read "none").
                guard parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let seconds = Int64(parts[1]) else {
                    throw HealthCardError(
                        .validation,
                        "\(source): \(Quote.text(text)) has a timestamp suffix that is not integer seconds since 1970 (digits "
                            + "only, e.g. rid.1700000000)")
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
package enum RIDSecretFile {
    /// Makes a new 256-bit secret and writes it, only ever to a new regular file (mode 0600; a missing
    /// folder is created 0700). Refuses to overwrite anything: every rid depends on the secret.
    /// - Throws: `HealthCardError(.key)` when the path exists or is `-`, `.io`/`.crypto` on failure.
    public static func create(at path: String) throws {
        // The random bytes and their text stay in byte arrays (never a String), wiped once written.
        var random = try Digest.randomBytes(32)
        defer { random.wipe() }
        var text = Base64URL.encodeBytes(random)
        text.append(0x0A)
        defer { text.wipe() }
        try FileIO.writeNewPrivateFile(text, to: path, what: "revocation secret")
    }

    /// Reads a secret file: base64url text, surrounding whitespace ignored, into a `RIDSecret` (never a
    /// `String`).
    /// - Throws: `HealthCardError(.key)` for a missing file, a file readable by group or others (with the
    ///   `chmod` to run), or content that is not base64url of at least 16 bytes. Never quotes the secret.
    public static func read(_ path: String) throws -> RIDSecret {
        guard FileIO.exists(path) else {
            throw HealthCardError(
                .key, code: .ridSecretMissing,
                "revocation secret \(path) does not exist; give the file a revocation secret was written to (RIDSecret.generate), or write a new one there")
        }
        // What the path is comes first: `chmod 600` is no advice for /dev/null or a folder.
        try FileIO.requireRegularFile(path, role: "revocation secret", kind: .key,
                                      fix: "give the file a revocation secret was written to")
        if let mode = FileIO.mode(path), mode & 0o077 != 0 {
            throw HealthCardError(.key, "revocation secret \(path) can be read by group or others (mode \(String(mode, radix: 8))); run `chmod 600 \(path)`")
        }
        let file: SecretBytes
        do { file = try SecretBytes.read(path: path) } catch let error as HealthCardError {
            throw HealthCardError(.key, "revocation secret: \(error.text)")
        }
        do { return try RIDSecret(text: file.trimmingWhitespace()) } catch {
            throw HealthCardError(.key, "revocation secret \(path) is not base64url text of at least 16 bytes (a 256-bit secret is 43 characters)")
        }
    }
}

/// The issuer-wide revocation secret: its base64url text (as in the secret file, 43 characters for 256
/// bits) in a `SecretBytes` buffer, wiped when the last reference goes.
public final class RIDSecret: Sendable {
    /// The base64url text; the HMAC key is this text followed by the kid (`RID.derive`).
    let text: SecretBytes

    /// - Throws: `HealthCardError(.key)` unless `text` is base64url of at least 16 bytes.
    init(text: SecretBytes) throws {
        let valid = text.withUnsafeBytes { bytes in
            // Base64url of at least 16 bytes: 22 characters or more, each of the alphabet, a length not 1 mod 4.
            bytes.count >= 22 && bytes.count % 4 != 1 && bytes.allSatisfy(RID.isBase64URLCharacter)
        }
        guard valid else { throw HealthCardError(.key, "a revocation secret is base64url text of at least 16 bytes") }
        self.text = text
    }

    /// A secret given as text (tests, or a caller that holds it already).
    /// - Throws: `HealthCardError(.key)` unless `text` is base64url of at least 16 bytes.
    public convenience init(text: String) throws {
        var bytes = Array(text.utf8)
        defer { bytes.wipe() }
        try self.init(text: bytes.withUnsafeBytes { SecretBytes(copying: $0) })
    }
}
