import HealthCardsCore

/// A public key a check trusts for signatures, read from a key set.
package struct TrustedKey: Sendable {
    /// The `kid` the key set publishes (may differ from `thumbprint` in a broken key set).
    package var kid: String
    /// The RFC 7638 thumbprint of the key: the kid it should have.
    package var thumbprint: String
    package var key: P256PublicKey
    /// `crlVersion` as published, when present.
    package var crlVersion: Int?
    /// The revocation list given for this kid, with its name.
    package var crl: (list: CRL, file: String)?
    /// A revocation list given for this kid that could not be used (`crl` is then nil): its name and why.
    package var crlRefused: (file: String, reason: String)?
    /// The key set's name (file).
    package var source: String
    /// The key's `x5c` chain, when it has one that OpenSSL verified.
    package var x5c: X509Chain?
    /// The errors of the key set and revocation list that a card verified by this key depends on: the
    /// key set as a whole, this key's entry, and this key's CRL. Empty when they are sound.
    package var problems: [Finding] = []
    /// The CRL entries whose `rid.<timestamp>` is suspect (`CRL_RID_TIMESTAMP`), with what was probably
    /// meant: a card these revoke says so.
    package var suspectEntries: [String: SuspectEntry] = [:]

    /// A CRL entry `rid.<timestamp>` whose timestamp is after now: why, and the time in seconds probably
    /// meant when it can only be milliseconds.
    package struct SuspectEntry: Sendable {
        package var why: String
        package var meant: Int64?
    }

    package init(kid: String, thumbprint: String, key: P256PublicKey, crlVersion: Int? = nil, crl: (list: CRL, file: String)? = nil,
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

/// A revocation list given for a kid: its bytes (and name), or why it could not be read.
package enum CRLInput: Sendable {
    case bytes([UInt8], name: String)
    /// The list exists but could not be read (the reason): it revokes nothing, and that is an error.
    case unreadable(name: String, reason: String)

    package var name: String {
        switch self {
        case .bytes(_, let name), .unreadable(let name, _): return name
        }
    }
}

/// Checks a JWK Set as published at `<iss>/.well-known/jwks.json` (digest section 7) and the revocation
/// lists given for its keys, as published at `.well-known/crl/<kid>.json` (digest section 8). Bytes in: the
/// caller reads the files (`FileVerifier` reads `crl/<kid>.json` beside a key set file).
package enum KeySetCheck {
    /// What a key set check found.
    package struct Result: Sendable {
        /// The usable keys, each with the errors it depends on (`TrustedKey.problems`).
        package var keys: [TrustedKey] = []
        package var findings: [Finding] = []
        /// Sentences about what was checked that are not findings (x5c chains verified, and what could
        /// not be checked without a card).
        package var notes: [String] = []
    }

    /// The kids a key set names that can name a file (`crl/<kid>.json`): base64url only, so a hostile kid
    /// cannot point elsewhere. Empty when the bytes are not a key set.
    package static func fileKids(_ bytes: [UInt8]) -> [String] {
        guard let list = (try? JSONParser.parse(bytes))?["keys"]?.arrayValue else { return [] }
        return list.compactMap { $0["kid"]?.stringValue }.filter { !$0.isEmpty && $0.utf8.allSatisfy(RID.isBase64URLCharacter) }
    }

    /// Checks key set bytes and returns the usable keys with every finding.
    /// - Parameters:
    ///   - file: the key set's name (its path), for locations.
    ///   - issuer: the issuer the key set is bound to (its `iss`), when known: an `x5c` leaf must name it.
    ///   - crls: the revocation list of each kid, as given.
    ///   - now: the time an `x5c` leaf's validity and CRL timestamps are judged at, in seconds since 1970.
    package static func check(
        bytes: [UInt8], file: String, issuer: String? = nil, crls: [String: CRLInput] = [:], now: Int64,
        limits: VerifyLimits = VerifyLimits()
    ) -> Result {
        var result = Result()
        func add(_ code: RuleCode, _ path: String?, _ message: String, _ severity: Finding.Severity? = nil) {
            result.findings.append(Finding(code, message, at: .init(file: file, path: path), severity: severity))
        }
        guard bytes.count <= limits.fileBytes else {
            add(.fileTooLarge, nil, "the key set is \(bytes.count) bytes; at most \(InputBudget.describe(bytes: limits.fileBytes)) are read (a key set of a few keys is a few kB)")
            add(.jwksNoKeys, "keys", "the key set was not read, so it gives no usable key")
            return result
        }
        if let pem = pemLabel(bytes) {
            let privateNote = pem.contains("PRIVATE") ? " It holds a private key: never publish it or pass it around" : ""
            add(.jwksNotJSON, nil, "the key set is a PEM file (\(pem)), not a JWK Set {\"keys\":[...]}. "
                + "Make the JWK Set of the key's public half and give that as the key set.\(privateNote)")
            return result
        }
        let json: JSONValue
        do { json = try JSONParser.parseFailing(bytes) } catch {
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
            if let input = crls[trusted.kid] {
                let before = result.findings.count
                (trusted.crl, trusted.suspectEntries) = readCRL(input, for: trusted, keyPath: path, now: now, limits: limits,
                                                                findings: &result.findings)
                if trusted.crl == nil {
                    let reason = result.findings[before...].first(where: { $0.code == .crlInvalid })?.message ?? "it is not a revocation list"
                    trusted.crlRefused = (input.name, reason)
                }
            }
            keys.append((i, trusted))
        }
        if keys.isEmpty {
            add(.jwksNoKeys, "keys", "the key set has no usable EC P-256 signing key (kty EC, crv P-256, use sig, alg ES256)")
        }
        let kids = Set(keys.map(\.key.kid))
        for (kid, input) in crls.sorted(by: { $0.key < $1.key }) where !kids.contains(kid) {
            result.findings.append(Finding(
                .crlKidMismatch, "a revocation list was given for kid \(Quote.text(kid)), but the key set has no usable key with that "
                    + "kid, so it revokes nothing", at: .init(file: input.name, path: "kid"), severity: .warning))
        }
        result.keys = keys.map { index, key in
            var key = key
            let crlFile = crls[key.kid]?.name
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
        var body = UTF8BOM.strip(bytes)
        body = body.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let begin = Array("-----BEGIN ".utf8)
        guard body.starts(with: begin) else { return nil }
        let label = body.dropFirst(begin.count).prefix(40).prefix { $0 != 0x2D && $0 != 0x0A && $0 != 0x0D }
        return String(decoding: label, as: UTF8.self)
    }

    /// Reads the revocation list given for `key`: form, kid, ctr against `crlVersion`, duplicate rids, and
    /// `rid.<timestamp>` entries whose timestamp is after `now` or can only be milliseconds.
    /// - Returns: the list (nil when it cannot be used) and its suspect entries with what was probably meant.
    static func readCRL(
        _ input: CRLInput, for key: TrustedKey, keyPath: String, now: Int64, limits: VerifyLimits, findings: inout [Finding]
    ) -> ((CRL, String)?, [String: TrustedKey.SuspectEntry]) {
        let file = input.name
        func add(_ code: RuleCode, _ path: String?, _ message: String) {
            findings.append(Finding(code, message, at: .init(file: file, path: path)))
        }
        let bytes: [UInt8]
        switch input {
        case .unreadable(_, let reason):
            // A list that cannot be read revokes nothing, so say so rather than pass over it.
            add(.crlInvalid, nil, "the revocation list cannot be read: \(reason)")
            return (nil, [:])
        case .bytes(let given, _):
            bytes = given
        }
        guard bytes.count <= limits.crlBytes else {
            add(.crlInvalid, nil, "the revocation list is \(bytes.count) bytes; at most \(InputBudget.describe(bytes: limits.crlBytes)) are read")
            return (nil, [:])
        }
        let crl: CRL
        do { crl = try CRL(bytes: bytes, source: FileIO.basename(file)) } catch {
            add(.crlInvalid, nil, "\(error); a CRL is {\"kid\":…,\"method\":\"rid\",\"ctr\":N,\"rids\":[…]} with rids of at most 24 base64url characters")
            return (nil, [:])
        }
        if crl.kid != key.kid { add(.crlKidMismatch, "kid", "the CRL's kid \(Quote.text(crl.kid)) is not the key's kid \(key.kid)") }
        if key.crlVersion != crl.ctr {
            let published = key.crlVersion.map(String.init) ?? "no crlVersion"
            add(.crlVersionMismatch, "ctr", "the CRL's ctr is \(crl.ctr) but the key set publishes \(published) for this key (\(keyPath).crlVersion); they must be equal, or verifiers keep a stale list")
        }
        var seen: Set<String> = []
        var suspect: [String: TrustedKey.SuspectEntry] = [:]
        for (i, entry) in crl.entries.enumerated() {
            if !seen.insert(entry.rid).inserted {
                add(.crlDuplicateRID, "rids[\(i)]", "rid \(Quote.text(entry.rid)) is listed more than once")
            }
            guard let before = entry.before, let problem = Self.timestampProblem(before, now: now) else { continue }
            suspect[entry.text] = problem
            add(.crlRIDTimestamp, "rids[\(i)]", "\(Quote.text(entry.text)): \(problem.why)")
        }
        return ((crl, file), suspect)
    }

    /// What is wrong with the timestamp `before` of a CRL entry `rid.<before>` (seconds since 1970, digest
    /// section 8), judged at `now`, and what was probably meant; nil when it is a time up to `now`.
    static func timestampProblem(_ before: Int64, now: Int64) -> TrustedKey.SuspectEntry? {
        guard before > now else { return nil }
        let literal = "as seconds (what the spec says it is) it revokes every card with this rid issued before "
            + "\(Clock.describe(before)), that is every card with this rid, also one issued after the revocation"
        if Double(before) >= NumericDate.millisecondsThreshold {
            let seconds = before / 1000
            return .init(
                why: "the timestamp \(before) is after now (\(Clock.describe(now))) and can only be milliseconds: \(literal). "
                    + "Probably meant: \(seconds) (\(Clock.describe(seconds))), in seconds", meant: seconds)
        }
        return .init(
            why: "the timestamp \(before) (\(Clock.describe(before))) is after now (\(Clock.describe(now))): \(literal). A "
                + "revocation's timestamp is when it was made (cards issued before it are revoked); write that time, or the bare rid",
            meant: nil)
    }
}
