/// A SMART Health Link file: a compact JWE with `alg` `dir` and `enc` `A256GCM` (links-specification
/// "Encrypting and Decrypting Files"; RFC 7516 section 7.1):
///
///     BASE64URL(header) . (empty: no encrypted key with dir) . BASE64URL(96-bit IV) . BASE64URL(ciphertext) . BASE64URL(128-bit tag)
///
/// The protected header is `{"alg":"dir","enc":"A256GCM","cty":"<content type>"}` (plus `"zip":"DEF"` when the
/// plaintext was raw-DEFLATEd first); the additional authenticated data is the ASCII of the first part.
public struct JWE: Sendable, Equatable {
    /// The compact serialization: ASCII `A–Z a–z 0–9 - _ .`.
    public let compact: String

    public init(compact: String) { self.compact = compact }

    /// The content type of a `.smart-health-card` file (links-specification "what to share").
    public static let smartHealthCard = "application/smart-health-card"

    /// Whether the media type `value` (a `cty`, a `Content-Type`) is `expected` (`type/subtype`, lower case):
    /// compared case-insensitively and without parameters, as RFC 9110 section 8.3.1 says
    /// (`Application/Smart-Health-Card; charset=utf-8` is `application/smart-health-card`).
    public static func mediaType(_ value: String, is expected: String) -> Bool {
        let essence = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = essence.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        return String(trimmed).lowercased() == expected.lowercased()
    }

    /// Largest compact JWE read, in bytes. A link file holds one card (a few kB); the limit keeps a
    /// hostile file from costing memory (base64 text, then ciphertext, then plaintext).
    public static let maxCompactBytes = 4 * 1024 * 1024

    /// Why a JWE cannot be read or opened: what the package's readers switch on (`partsFailing`,
    /// `decryptFailing`). A client gets it as `HealthCardError` of kind `.link` with the failure's code.
    package enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not five `.`-separated base64url parts with an empty second part, a 12-byte IV and a 16-byte tag.
        case form(String)
        /// The protected header is not JSON, or not `alg` `dir` / `enc` `A256GCM` (or an unknown `zip`).
        case header(String)
        /// The tag did not verify: a wrong key, or an altered header, IV, ciphertext or tag.
        case authentication
        /// `zip` `DEF`, but the plaintext does not inflate as raw DEFLATE.
        case inflate(String)

        package var description: String {
            switch self {
            case .form(let why), .header(let why), .inflate(let why): return why
            case .authentication:
                return
                    "the file does not decrypt with the link's key: the key is wrong, or the file (header, IV, ciphertext or tag) was altered"
            }
        }

        /// The failure as the library's error: kind `.link`, code `SHL_JWE_FORM`, `SHL_JWE_HEADER`,
        /// `SHL_DECRYPT_FAILED` or `SHL_CONTENT` (a `zip` `DEF` plaintext that does not inflate), the same text.
        package var healthCardError: HealthCardError {
            let code: RuleCode
            switch self {
            case .form: code = .shlJWEForm
            case .header: code = .shlJWEHeader
            case .authentication: code = .shlDecryptFailed
            case .inflate: code = .shlContent
            }
            return HealthCardError(.link, code: code, description)
        }
    }

    /// The protected header bytes, members in the IG example's order.
    public static func headerBytes(contentType: String, deflated: Bool) -> [UInt8] {
        var header: JSONObject = ["alg": "dir", "enc": "A256GCM", "cty": .string(contentType)]
        if deflated { header["zip"] = "DEF" }
        return JSONWriter.minified(.object(header))
    }

    /// Encrypts `plaintext` with a fresh random IV.
    /// - Parameters:
    ///   - contentType: the `cty` header, e.g. `application/smart-health-card`.
    ///   - deflate: raw-DEFLATE the plaintext first and say `"zip":"DEF"`.
    /// - Throws: `HealthCardError(.crypto)` from OpenSSL, `.compression` from zlib.
    public static func encrypt(
        _ plaintext: [UInt8], key: AES256Key, contentType: String = smartHealthCard,
        deflate: Bool = false
    ) throws(HealthCardError) -> JWE {
        let body = deflate ? try RawDeflater(level: 9).deflate(plaintext) : plaintext
        let protected = Base64URL.encodeBytes(headerBytes(contentType: contentType, deflated: deflate))
        let iv = try AESGCM.randomIV()
        let sealed = try AESGCM.seal(body, key: key, iv: iv, aad: protected)
        var out = protected
        out.append(contentsOf: Array("..".utf8))
        out.append(contentsOf: Base64URL.encodeBytes(iv))
        out.append(UInt8(ascii: "."))
        out.append(contentsOf: Base64URL.encodeBytes(sealed.ciphertext))
        out.append(UInt8(ascii: "."))
        out.append(contentsOf: Base64URL.encodeBytes(sealed.tag))
        return JWE(compact: String(decoding: out, as: UTF8.self))
    }

    /// The decoded parts of a compact JWE.
    public struct Parts: Sendable {
        /// The protected header, parsed.
        public var header: JSONValue
        /// ASCII of the first part as written: the additional authenticated data.
        public var aad: [UInt8]
        public var iv: [UInt8]
        public var ciphertext: [UInt8]
        public var tag: [UInt8]
        /// `cty`, when the header has one.
        public var contentType: String? { header["cty"]?.stringValue }
        /// True for `"zip":"DEF"`.
        public var deflated: Bool { header["zip"]?.stringValue == "DEF" }
    }

    /// Splits, decodes and checks the parts and the header (nothing is decrypted).
    /// - Throws: `HealthCardError` of kind `.link` with code `SHL_JWE_FORM` (not five parts, an IV or tag of the
    ///   wrong size, too large) or `SHL_JWE_HEADER`, saying what was found and what is expected.
    public func parts() throws(HealthCardError) -> Parts {
        do { return try partsFailing() } catch { throw error.healthCardError }
    }

    /// `parts()`, throwing the `Failure` itself (for the package's readers, which report each as a finding).
    package func partsFailing() throws(Failure) -> Parts {
        let bytes = Array(compact.utf8)
        guard bytes.count <= Self.maxCompactBytes else {
            throw .form(
                "the file is \(bytes.count) bytes; a link file holding one card is a few kB (at most \(Self.maxCompactBytes) are read)"
            )
        }
        let pieces = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard pieces.count == 5 else {
            throw .form(
                "a compact JWE has 5 parts separated by '.' (header..iv.ciphertext.tag with alg dir), found \(pieces.count)"
            )
        }
        guard pieces[1].isEmpty else {
            throw .form("the JWE's second part (the encrypted key) is not empty; with alg dir it must be")
        }
        let names = ["header", "", "IV", "ciphertext", "tag"]
        var decoded: [[UInt8]] = []
        for i in [0, 2, 3, 4] {
            guard !pieces[i].isEmpty || i == 3, let part = Base64URL.decode(Array(pieces[i])) else {
                throw .form("the JWE \(names[i]) is \(pieces[i].isEmpty ? "empty" : "not base64url without padding")")
            }
            decoded.append(part)
        }
        guard decoded[1].count == AESGCM.ivByteCount else {
            throw .form("the JWE IV is \(decoded[1].count) bytes; A256GCM takes a 96-bit (12-byte) IV")
        }
        guard decoded[3].count == AESGCM.tagByteCount else {
            throw .form("the JWE tag is \(decoded[3].count) bytes; A256GCM gives a 128-bit (16-byte) tag")
        }
        guard let header = try? JSONParser.parse(decoded[0]), header.objectValue != nil else {
            throw .header("the JWE header does not decode to a JSON object")
        }
        let expected =
            #"a SMART Health Link file's header is {"alg":"dir","enc":"A256GCM","cty":"…"} (and "zip":"DEF" when compressed)"#
        guard header["alg"]?.stringValue == "dir" else {
            throw .header("the JWE header's alg is \(Self.describe(header["alg"])), not \"dir\"; \(expected)")
        }
        guard header["enc"]?.stringValue == "A256GCM" else {
            throw .header("the JWE header's enc is \(Self.describe(header["enc"])), not \"A256GCM\"; \(expected)")
        }
        if let zip = header["zip"], zip.stringValue != "DEF" {
            throw .header("the JWE header's zip is \(Self.describe(zip)); the only value is \"DEF\" (raw DEFLATE)")
        }
        if let crit = header["crit"] {
            // RFC 7516 section 4.1.13: a recipient that does not understand an extension crit names must refuse
            // the JWE; this reader implements none.
            throw .header(
                "the JWE header has crit \(Self.describe(crit)), naming extension(s) this reader does not implement; a "
                    + "JWE whose crit names an extension the recipient does not understand is invalid (RFC 7516 section "
                    + "4.1.13). \(expected)")
        }
        if let cty = header["cty"], cty.stringValue == nil {
            throw .header("the JWE header's cty is \(Self.describe(cty)), not a content type string")
        }
        return Parts(header: header, aad: Array(pieces[0]), iv: decoded[1], ciphertext: decoded[2], tag: decoded[3])
    }

    /// Opens the file: checks the parts, verifies the tag, decrypts, and inflates when `zip` is `DEF`.
    /// - Returns: the parts (header, IV) and the plaintext.
    /// - Throws: `HealthCardError` of kind `.link`: `SHL_JWE_FORM` or `SHL_JWE_HEADER` as `parts()` does,
    ///   `SHL_DECRYPT_FAILED` when the tag does not verify (a wrong key, or an altered header, IV, ciphertext or
    ///   tag), `SHL_CONTENT` when `zip` is `DEF` and the plaintext does not inflate; `.crypto` only when OpenSSL
    ///   itself fails.
    public func decrypt(key: AES256Key) throws(HealthCardError) -> (parts: Parts, plaintext: [UInt8]) {
        do {
            return try decryptFailing(key: key)
        } catch let failure as Failure {
            throw failure.healthCardError
        } catch let error as HealthCardError {
            throw error
        } catch {
            throw HealthCardError(.crypto, "\(error)")
        }
    }

    /// `decrypt(key:)`, throwing `Failure` itself (or `HealthCardError(.crypto)` when OpenSSL fails).
    package func decryptFailing(key: AES256Key) throws -> (parts: Parts, plaintext: [UInt8]) {
        let parts = try self.partsFailing()
        guard let body = try AESGCM.open(parts.ciphertext, tag: parts.tag, key: key, iv: parts.iv, aad: parts.aad)
        else {
            throw Failure.authentication
        }
        guard parts.deflated else { return (parts, body) }
        do { return (parts, try RawInflate.inflateFailing(body)) } catch {
            throw Failure.inflate("the JWE says zip DEF, but its plaintext is not raw DEFLATE (\(error))")
        }
    }

    /// A short, safe rendering of a header value for messages.
    package static func describe(_ value: JSONValue?) -> String {
        guard let value else { return "missing" }
        if let text = value.stringValue { return Quote.text(text, limit: 40) }
        return Quote.text(String(decoding: JSONWriter.minified(value), as: UTF8.self), limit: 40)
    }
}
