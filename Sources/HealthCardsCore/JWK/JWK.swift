/// A public EC P-256 signing key as published in an issuer's `jwks.json` (digest section 7):
/// `kty`, `crv`, `x`, `y`, `kid`, `use: "sig"`, `alg: "ES256"`, optional `x5c` and `crlVersion`.
///
/// This type has no private members at all, so a JWK Set written from it cannot leak `d`.
public struct JWK: Equatable, Sendable {
    /// The public point's x and y: 32 bytes each, big-endian.
    public let x: [UInt8]
    public let y: [UInt8]
    /// X.509 chain as standard base64 DER strings, leaf first (optional).
    public var x5c: [String]?
    /// The CRL counter published with this key when it supports revocation (digest section 8).
    public var crlVersion: Int?

    /// - Parameters: x, y: the point's coordinates, 32 bytes each, big-endian.
    /// - Throws: `HealthCardError(.key)` when a coordinate is not 32 bytes (the point itself is checked
    ///   where a key is made from it: `P256PublicKey(x:y:)`).
    public init(x: [UInt8], y: [UInt8], x5c: [String]? = nil, crlVersion: Int? = nil) throws(HealthCardError) {
        guard x.count == 32, y.count == 32 else {
            throw HealthCardError(
                .key, "a P-256 JWK has 32-byte coordinates; found x of \(x.count) and y of \(y.count) bytes")
        }
        self.init(checkedX: x, y: y, x5c: x5c, crlVersion: crlVersion)
    }

    /// Coordinates already known to be 32 bytes each (a key's, a certificate's).
    package init(checkedX x: [UInt8], y: [UInt8], x5c: [String]? = nil, crlVersion: Int? = nil) {
        self.x = x
        self.y = y
        self.x5c = x5c
        self.crlVersion = crlVersion
    }

    /// The public JWK of `key`.
    public init(key: P256PublicKey) { self.init(key: key.storage) }

    /// The public JWK of `key` (its coordinates are 32 bytes each).
    package init(key: P256Key) { self.init(checkedX: key.x, y: key.y) }

    /// The RFC 7638 thumbprint input: `{"crv":"P-256","kty":"EC","x":"…","y":"…"}`, members sorted,
    /// no whitespace.
    public var thumbprintInput: String {
        #"{"crv":"P-256","kty":"EC","x":""# + Base64URL.encode(x) + #"","y":""# + Base64URL.encode(y) + #""}"#
    }

    /// The `kid`: base64url (no padding) of the SHA-256 JWK thumbprint (RFC 7638), 43 characters
    /// (digest section 1).
    public var kid: String { Base64URL.encode(Digest.sha256(Array(thumbprintInput.utf8))) }

    /// The JWK as a JSON object in the order `kty, kid, use, alg, crv, x, y[, x5c][, crlVersion]`.
    public var json: JSONValue {
        var object: JSONObject = [
            "kty": "EC", "kid": .string(kid), "use": "sig", "alg": "ES256", "crv": "P-256",
            "x": .string(Base64URL.encode(x)), "y": .string(Base64URL.encode(y)),
        ]
        if let x5c { object["x5c"] = .array(x5c.map { .string($0) }) }
        if let crlVersion { object["crlVersion"] = .integer(Int64(crlVersion)) }
        return .object(object)
    }

    /// Members that only private keys carry (RFC 7518 sections 6.2.2, 6.3.2, 6.4). Never published.
    public static let privateMembers: Set<String> = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// Reads a published JWK, refusing private members.
    /// - Throws: `HealthCardError(.key)` for a key that is not an EC P-256 key with 32-byte x and y, or
    ///   that carries a private member such as `d` (it is never copied into the result).
    public init(json: JSONValue, source: String = "JWK") throws(HealthCardError) {
        guard let object = json.objectValue else { throw HealthCardError(.key, "\(source) is not a JSON object") }
        let leaked = object.keys.filter { JWK.privateMembers.contains($0) }
        if !leaked.isEmpty {
            throw HealthCardError(
                .key,
                "\(source) carries private member(s) \(leaked.sorted().joined(separator: ", ")); "
                    + "a JWK Set publishes public keys only, so it will not be written")
        }
        guard object["kty"]?.stringValue == "EC", object["crv"]?.stringValue == "P-256" else {
            throw HealthCardError(
                .key,
                "\(source) is not an EC P-256 key (kty \(object["kty"]?.stringValue ?? "absent"), crv \(object["crv"]?.stringValue ?? "absent"))"
            )
        }
        guard let x = object["x"]?.stringValue.flatMap(Base64URL.decode),
            let y = object["y"]?.stringValue.flatMap(Base64URL.decode),
            x.count == 32, y.count == 32
        else {
            func found(_ name: String) -> String {
                guard let member = object[name] else { return "\(name) is absent" }
                guard let text = member.stringValue else { return "\(name) is not a string" }
                guard let bytes = Base64URL.decode(text) else {
                    return "\(name) is not base64url without padding (\(text.utf8.count) characters)"
                }
                return "\(name) holds \(bytes.count) bytes"
            }
            throw HealthCardError(
                .key, "\(source) x and y must be base64url of 32 bytes each, but \(found("x")) and \(found("y"))")
        }
        self.init(checkedX: x, y: y)
        if let chain = object["x5c"]?.arrayValue { x5c = chain.compactMap(\.stringValue) }
        if let version = object["crlVersion"]?.numberLexeme.flatMap({ Int($0) }) { crlVersion = version }
    }
}

/// A JWK Set `{"keys":[…]}` of public ES256 keys, as served at `<iss>/.well-known/jwks.json`
/// (digest section 7).
public struct JWKS: Equatable, Sendable {
    public var keys: [JWK]

    public init(keys: [JWK]) { self.keys = keys }

    /// The key with `kid`, if any.
    public func key(kid: String) -> JWK? { keys.first { $0.kid == kid } }

    /// `{"keys":[…]}` pretty-printed with 2-space indent and a final newline, for a static host.
    public var fileBytes: [UInt8] {
        JSONWriter.pretty(.object(["keys": .array(keys.map(\.json))])) + [0x0A]
    }

    /// Parses a JWK Set, reading only its EC P-256 keys. Other keys (RSA, `use: enc`) are skipped.
    /// - Throws: `HealthCardError(.key)` for malformed JSON, a missing `keys` array, or any key with a
    ///   private member.
    public init(bytes: [UInt8], source: String) throws(HealthCardError) {
        let json: JSONValue
        do { json = try JSONParser.parseFailing(bytes) } catch {
            throw HealthCardError(.key, "\(source) is not JSON: \(error)")
        }
        guard let list = json["keys"]?.arrayValue else {
            throw HealthCardError(.key, #"\#(source) is not a JWK Set: expected {"keys":[...]}"#)
        }
        var keys: [JWK] = []
        for (i, item) in list.enumerated() {
            let leaked = item.objectValue?.keys.filter { JWK.privateMembers.contains($0) } ?? []
            if !leaked.isEmpty {
                throw HealthCardError(
                    .key, "\(source) keys[\(i)] carries private member(s) \(leaked.sorted().joined(separator: ", "))")
            }
            if item["kty"]?.stringValue == "EC", item["crv"]?.stringValue == "P-256" {
                keys.append(try JWK(json: item, source: "\(source) keys[\(i)]"))
            }
        }
        self.keys = keys
    }
}

extension JWKS {
    /// Warnings for the keys of a `.json` file (one JWK or a JWK Set) whose own `kid` member is not their
    /// RFC 7638 thumbprint: a published key's kid is always its thumbprint (digest section 7), so the kid
    /// the file gave is dropped, and cards signed with it in their header find no key. Empty when every
    /// given kid is the thumbprint, or the file gives none (or is not a JWK file: `publicKeys` says why).
    public static func kidWarnings(jsonFile bytes: [UInt8], source: String) -> [String] {
        guard let json = try? JSONParser.parse(bytes) else { return [] }
        let items = json["keys"]?.arrayValue ?? [json]
        var warnings: [String] = []
        for (i, item) in items.enumerated() {
            guard let given = item["kid"]?.stringValue, let key = try? JWK(json: item, source: source),
                given != key.kid
            else { continue }
            let which = items.count > 1 ? " keys[\(i)]" : ""
            warnings.append(
                "\(source)\(which) says kid \(Quote.text(given)), which is not its thumbprint; it is "
                    + "published as kid \(key.kid), as the spec requires. Cards whose header says the other kid will "
                    + "not find this key")
        }
        return warnings
    }

    /// The public keys of a `.json` file holding one JWK or a JWK Set, for republishing.
    /// - Throws: `HealthCardError(.key)` when the file is not JSON, holds no EC P-256 key, any key
    ///   carries a private member (`d`, …): a JWK Set publishes public keys only, so nothing is taken
    ///   from such a file (the message names the members, never their values), or any key's x/y is not a
    ///   point on P-256 (no one can hold its private key, so it verifies nothing).
    public static func publicKeys(jsonFile bytes: [UInt8], source: String) throws(HealthCardError) -> [JWK] {
        let json: JSONValue
        do { json = try JSONParser.parseFailing(bytes) } catch {
            throw HealthCardError(.key, "\(source) is not JSON: \(error)")
        }
        let keys: [JWK]
        if json["keys"] != nil {
            keys = try JWKS(bytes: bytes, source: source).keys
        } else {
            keys = [try JWK(json: json, source: source)]
        }
        guard !keys.isEmpty else {
            throw HealthCardError(
                .key, "\(source) holds no EC P-256 key; expected a JWK or a JWK Set with kty EC, crv P-256")
        }
        for (i, key) in keys.enumerated() where !P256Key.isOnCurve(x: key.x, y: key.y) {
            throw HealthCardError(
                .key,
                "\(source)\(keys.count > 1 ? " key \(i + 1)" : ""): x/y is not a point on P-256, so it is no one's public key "
                    + "(a corrupted or made-up JWK) and verifies no card; it will not be published. Take the public key "
                    + "from the key file or token itself")
        }
        return keys
    }
}
