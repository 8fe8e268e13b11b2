import HealthCardsCore

/// A public key `verify` trusts for signatures, read from a key set.
public struct TrustedKey: Sendable {
    /// The `kid` the key set publishes (may differ from `thumbprint` in a broken key set).
    public var kid: String
    /// The RFC 7638 thumbprint of the key: the kid it should have.
    public var thumbprint: String
    public var key: P256PublicKey
    /// `crlVersion` as published, when present.
    public var crlVersion: Int?
    /// The revocation list found beside the key set for this kid, with its file.
    public var crl: (list: CRL, file: String)?
    /// The key set file.
    public var source: String
    /// The key's `x5c` chain, when it has one that OpenSSL verified.
    public var x5c: X509Chain?
    /// The errors of the key set and revocation list that a card verified by this key depends on: the
    /// key set as a whole, this key's entry, and this key's CRL. Empty when they are sound.
    public var problems: [Finding] = []

    public init(kid: String, thumbprint: String, key: P256PublicKey, crlVersion: Int? = nil, crl: (list: CRL, file: String)? = nil,
                source: String, x5c: X509Chain? = nil) {
        self.kid = kid
        self.thumbprint = thumbprint
        self.key = key
        self.crlVersion = crlVersion
        self.crl = crl
        self.source = source
        self.x5c = x5c
    }
}

/// Checks a JWK Set as published at `<iss>/.well-known/jwks.json` (digest section 7) and the revocation
/// lists beside it at `.well-known/crl/<kid>.json` (digest section 8).
public enum KeySetCheck {
    /// What a key set check found.
    public struct Result: Sendable {
        /// The usable keys, each with the errors it depends on (`TrustedKey.problems`).
        public var keys: [TrustedKey] = []
        public var findings: [Finding] = []
        /// Sentences about what was checked that are not findings (x5c chains verified, and what could
        /// not be checked without a card).
        public var notes: [String] = []
    }

    /// Checks key set bytes and returns the usable keys with every finding.
    /// - Parameters:
    ///   - file: the key set's path, for locations and for finding `crl/<kid>.json` beside it.
    ///   - issuer: the issuer the key set is bound to (its `iss`), when known: an `x5c` leaf must name it.
    ///   - now: the time an `x5c` leaf's validity is judged at, in seconds since 1970.
    public static func check(bytes: [UInt8], file: String, issuer: String? = nil, now: Int64) -> Result {
        var result = Result()
        func add(_ code: RuleCode, _ path: String?, _ message: String, _ severity: Finding.Severity? = nil) {
            result.findings.append(Finding(code, message, at: .init(file: file, path: path), severity: severity))
        }
        if let pem = pemLabel(bytes) {
            let privateNote = pem.contains("PRIVATE") ? " It holds a private key: never publish it or pass it around" : ""
            add(.jwksNotJSON, nil, "the key set is a PEM file (\(pem)), not a JWK Set {\"keys\":[...]}. "
                + "Make the key set from the key with `\(Command.jwks) KEY \(Setting.out) jwks.json` and give that to \(Setting.jwks).\(privateNote)")
            return result
        }
        let json: JSONValue
        do { json = try JSONParser.parse(bytes) } catch {
            add(.jwksNotJSON, nil, #"the key set is not JSON (a JWK Set is {"keys":[...]}): \#(error)"#)
            return result
        }
        guard let list = json["keys"]?.arrayValue else {
            let found = json["keys"].map { "\"keys\" is \(quoted($0)), not an array" } ?? "there is no \"keys\" member"
            add(.jwksNotJSON, "keys", #"a JWK Set is {"keys":[...]} with "keys" an array of JWKs; "# + found)
            return result
        }
        var keys: [(index: Int, key: TrustedKey)] = []
        for (i, item) in list.enumerated() {
            let path = "keys[\(i)]"
            guard let object = item.objectValue else {
                add(.jwkNotSHCKey, path, "the key is not a JSON object", .error)
                continue
            }
            let leaked = object.keys.filter { JWK.privateMembers.contains($0) }
            if !leaked.isEmpty {
                add(.jwkPrivateMember, path, "the key carries private member(s) \(leaked.sorted().joined(separator: ", ")); "
                    + "a published key set holds public keys only. Remove them now and treat the private key as exposed")
            }
            let kty = object["kty"]?.stringValue
            let use = object["use"]?.stringValue
            guard kty == "EC" else {
                add(.jwkNotSHCKey, path + ".kty", "kty \(quoted(object["kty"])) is not an SMART Health Cards key (EC P-256); verifiers ignore it")
                continue
            }
            if use == "enc" {
                add(.jwkNotSHCKey, path + ".use", "an encryption key (use \"enc\"); verifiers ignore it for health cards")
                continue
            }
            if object["crv"]?.stringValue != "P-256" {
                add(.jwkCurve, path + ".crv", "crv must be \"P-256\", found \(quoted(object["crv"]))")
                continue
            }
            if use != "sig" { add(.jwkUse, path + ".use", "use must be \"sig\", found \(quoted(object["use"]))") }
            if object["alg"]?.stringValue != "ES256" { add(.jwkAlg, path + ".alg", "alg must be \"ES256\", found \(quoted(object["alg"]))") }
            guard let x = object["x"]?.stringValue.flatMap(Base64URL.decode), let y = object["y"]?.stringValue.flatMap(Base64URL.decode),
                x.count == 32, y.count == 32
            else {
                add(.jwkCoordinates, path, "x and y must be base64url (no padding) of 32 bytes each")
                continue
            }
            guard let key = try? P256PublicKey(x: x, y: y) else {
                add(.jwkCoordinates, path, "x and y are not a point on the P-256 curve")
                continue
            }
            let thumbprint = JWK(key: key).kid
            let kid = object["kid"]?.stringValue
            if kid == nil {
                add(.jwkKidMissing, path + ".kid", "the key has no kid; it must be the RFC 7638 thumbprint \(thumbprint)")
            } else if kid != thumbprint {
                add(.jwkKidMismatch, path + ".kid", "kid \(Quote.text(kid ?? "")) is not the key's RFC 7638 SHA-256 thumbprint; expected \(thumbprint)")
            }
            var chain: X509Chain?
            if let x5c = object["x5c"] {
                var found: [Finding] = []
                chain = X5CCheck(path: path + ".x5c", issuer: issuer, now: now)
                    .check(x5c, key: JWK(key: key), findings: &found, notes: &result.notes, file: file)
                result.findings += found
            }
            var crlVersion: Int?
            if let value = object["crlVersion"] {
                crlVersion = positiveInteger(value)
                if crlVersion == nil {
                    add(.jwkCRLVersion, path + ".crlVersion", "crlVersion must be a positive integer (the ctr of the key's CRL, from 1), found \(quoted(value))")
                }
            }
            var trusted = TrustedKey(kid: kid ?? thumbprint, thumbprint: thumbprint, key: key,
                                     crlVersion: crlVersion, crl: nil, source: file, x5c: chain)
            trusted.crl = loadCRL(for: trusted, keySetFile: file, keyPath: path, findings: &result.findings)
            keys.append((i, trusted))
        }
        if keys.isEmpty {
            add(.jwksNoKeys, "keys", "the key set has no usable EC P-256 signing key (kty EC, crv P-256, use sig, alg ES256)")
        }
        result.keys = keys.map { index, key in
            var key = key
            let crlFile = "\(FileIO.parent(of: file))/crl/\(key.kid).json"
            key.problems = result.findings.filter { finding in
                guard finding.isError else { return false }
                if finding.location.file == crlFile { return true }
                guard finding.location.file == file else { return false }
                guard let path = finding.location.path, path.hasPrefix("keys[") else { return true }
                return path.hasPrefix("keys[\(index)]")
            }
            return key
        }
        return result
    }

    /// A JSON number written as a whole decimal number from 1 (no sign, fraction or exponent), or nil.
    static func positiveInteger(_ value: JSONValue) -> Int? {
        guard let lexeme = value.numberLexeme, lexeme.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(lexeme), n > 0
        else { return nil }
        return n
    }

    /// The label of a PEM file (`PRIVATE KEY`, `PUBLIC KEY`, `CERTIFICATE`…) when `bytes` start with
    /// `-----BEGIN ` after an optional BOM and whitespace.
    static func pemLabel(_ bytes: [UInt8]) -> String? {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        body = body.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let begin = Array("-----BEGIN ".utf8)
        guard body.starts(with: begin) else { return nil }
        let label = body.dropFirst(begin.count).prefix(40).prefix { $0 != 0x2D && $0 != 0x0A && $0 != 0x0D }
        return String(decoding: label, as: UTF8.self)
    }

    /// Reads `crl/<kid>.json` beside the key set, if there is one.
    static func loadCRL(for key: TrustedKey, keySetFile: String, keyPath: String, findings: inout [Finding]) -> (CRL, String)? {
        // A kid names a file here: only base64url kids do, so a hostile kid cannot point elsewhere.
        guard !key.kid.isEmpty, key.kid.utf8.allSatisfy(RID.isBase64URLCharacter) else { return nil }
        let file = "\(FileIO.parent(of: keySetFile))/crl/\(key.kid).json"
        guard FileIO.exists(file) else { return nil }
        func add(_ code: RuleCode, _ path: String?, _ message: String) {
            findings.append(Finding(code, message, at: .init(file: file, path: path)))
        }
        let bytes: [UInt8]
        do { bytes = try FileIO.read(file, maxBytes: InputBudget.crlFileBytes) } catch {
            // A list that cannot be read revokes nothing, so say so rather than pass over it.
            add(.crlInvalid, nil, "the revocation list cannot be read: \(error)")
            return nil
        }
        let crl: CRL
        do { crl = try CRL(bytes: bytes, source: FileIO.basename(file)) } catch {
            add(.crlInvalid, nil, "\(error); a CRL is {\"kid\":…,\"method\":\"rid\",\"ctr\":N,\"rids\":[…]} with rids of at most 24 base64url characters")
            return nil
        }
        if crl.kid != key.kid { add(.crlKidMismatch, "kid", "the CRL's kid \(Quote.text(crl.kid)) is not the key's kid \(key.kid) from its file name") }
        if key.crlVersion != crl.ctr {
            let published = key.crlVersion.map(String.init) ?? "no crlVersion"
            add(.crlVersionMismatch, "ctr", "the CRL's ctr is \(crl.ctr) but the key set publishes \(published) for this key (\(keyPath).crlVersion); they must be equal, or verifiers keep a stale list")
        }
        var seen: Set<String> = []
        for entry in crl.entries where !seen.insert(entry.rid).inserted {
            add(.crlDuplicateRID, "rids", "rid \(Quote.text(entry.rid)) is listed more than once")
        }
        return (crl, file)
    }
}
