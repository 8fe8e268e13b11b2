import HealthCardsCore

/// The claims of an access token that passed `AccessTokens.verify`.
public struct AccessGrant: Sendable, Equatable {
    /// The `patient` claim (SMART App Launch "launch/patient" context), normalized as the batch normalizes ids.
    public var patient: String?
    /// The `scope` claim's scopes.
    public var scopes: [String]

    /// Whether the scopes allow reading resources of `type` (`Immunization`, `Observation`) for the token's
    /// patient: `patient/<type>.read` or `patient/*.read` (SMART v1), or `patient/<type>.<perms>` with `r` among
    /// `cruds` in order (SMART v2: `.rs`, `.r`, `.cruds`), or `patient/*.<perms>`. A scope with a query
    /// (`?category=…`, SMART v2 fine-grained) covers nothing here: the server cannot judge it on a card.
    public func allowsReading(_ type: String) -> Bool {
        scopes.contains { scope in
            guard scope.hasPrefix("patient/"), !scope.contains("?") else { return false }
            let rest = scope.dropFirst("patient/".count)
            guard let dot = rest.lastIndex(of: ".") else { return false }
            let resource = rest[..<dot]
            let permissions = rest[rest.index(after: dot)...]
            guard resource == "*" || resource == type else { return false }
            if permissions == "read" || permissions == "*" { return true }
            // SMART v2: a subsequence of "cruds", in that order, holding r.
            var order = "cruds"[...]
            for c in permissions {
                guard let at = order.firstIndex(of: c) else { return false }
                order = order[order.index(after: at)...]
            }
            return !permissions.isEmpty && permissions.contains("r")
        }
    }
}

/// Why a token was refused: the status (401: no usable token; 403: a good token that does not allow this)
/// and what to say, which never holds the token. A value the server answers with (`AccessCheck.refused`), not
/// an error a client catches.
public struct AccessRefusal: Sendable, Equatable {
    public var status: Int
    /// RFC 6750 section 3.1: `invalid_token`, `insufficient_scope`, or nil (no token was sent).
    public var bearerError: String?
    public var message: String

    public init(status: Int, bearerError: String?, message: String) {
        self.status = status
        self.bearerError = bearerError
        self.message = message
    }
}

/// What checking a bearer token found: the grant it carries, or why it was refused.
public enum AccessCheck: Sendable {
    case granted(AccessGrant)
    case refused(AccessRefusal)
}

/// `AccessRefusal` thrown inside this module, on its way to the `AccessCheck` or answer that carries it.
struct Refused: Error {
    var refusal: AccessRefusal
    var message: String { refusal.message }

    init(_ refusal: AccessRefusal) { self.refusal = refusal }

    init(status: Int, bearerError: String?, message: String) {
        refusal = AccessRefusal(status: status, bearerError: bearerError, message: message)
    }
}

/// Verifies the bearer access tokens an authorization server issued for this resource server (SMART App
/// Launch; RFC 9068 JWT access tokens, RFC 7519 and RFC 7515).
///
/// A token passes only when all hold: a compact JWS of three base64url parts; `alg` ES256 or RS256 (`none`, HMAC
/// and every other algorithm are refused: an HS256 token "signed" with a public key as its secret is never
/// checked as one); a signature that verifies with a key of the configured key set (its `kid`, or the set's
/// only key of that type); `iss` equal to the configured issuer; `aud` (a string or a list) holding the
/// configured audience; `exp` present and not passed, and `nbf` and `iat` not in the future, each with
/// `skewSeconds` of allowance.
public struct AccessTokens: Sendable {
    public struct Key: Sendable {
        public var kid: String?
        public var p256: P256PublicKey?
        public var rsa: RSAPublicKey?
    }

    public var issuer: String
    public var audience: String
    public var keys: [Key]
    /// Seconds a clock may be off (exp, nbf, iat).
    public var skewSeconds: Int64
    /// The most characters of a token read.
    public static let maxTokenLength = 16 * 1024

    /// - Parameters:
    ///   - keySet: the authorization server's JWK Set (`{"keys":[…]}`): EC P-256 (`kty: EC`) and RSA (`kty: RSA`,
    ///     `n`, `e`) keys; keys of other kinds, and keys whose `use` is not `sig`, are skipped.
    /// - Throws: `HealthCardError(.key)` for a set that is not JSON with a `keys` list, or holds no usable key.
    public init(issuer: String, audience: String, keySet: [UInt8], source: String, skewSeconds: Int64 = 60) throws {
        self.issuer = issuer
        self.audience = audience
        self.skewSeconds = skewSeconds
        guard let json = try? JSONParser.parse(keySet), let list = json["keys"]?.arrayValue else {
            throw HealthCardError(.key, "\(source) is not a JWK Set ({\"keys\": [...]})")
        }
        var keys: [Key] = []
        for item in list {
            if let use = item["use"]?.stringValue, use != "sig" { continue }
            let kid = item["kid"]?.stringValue
            switch item["kty"]?.stringValue {
            case "EC":
                guard item["crv"]?.stringValue == "P-256", let x = item["x"]?.stringValue.flatMap(Base64URL.decode),
                    let y = item["y"]?.stringValue.flatMap(Base64URL.decode)
                else { continue }
                keys.append(Key(kid: kid, p256: try P256PublicKey(x: x, y: y), rsa: nil))
            case "RSA":
                guard let n = item["n"]?.stringValue.flatMap(Base64URL.decode),
                    let e = item["e"]?.stringValue.flatMap(Base64URL.decode)
                else { continue }
                keys.append(Key(kid: kid, p256: nil, rsa: try RSAPublicKey(n: n, e: e)))
            default: continue
            }
        }
        guard !keys.isEmpty else {
            throw HealthCardError(.key, "\(source) holds no EC P-256 or RSA signing key")
        }
        self.keys = keys
    }

    /// Checks the `Authorization` header's bearer token at `now` (seconds since 1970).
    /// - Returns: `.granted` with what the token allows, or `.refused` with status 401 and what to say.
    public func check(authorization: String?, now: Int64) -> AccessCheck {
        do { return .granted(try verify(authorization: authorization, now: now)) } catch { return .refused(error.refusal) }
    }

    private func verify(authorization: String?, now: Int64) throws(Refused) -> AccessGrant {
        func refuse(_ message: String) -> Refused {
            Refused(status: 401, bearerError: "invalid_token", message: message)
        }
        guard let authorization, !authorization.isEmpty else {
            throw Refused(
                status: 401, bearerError: nil, message: "this operation needs an access token: Authorization: Bearer <token>")
        }
        let scheme = authorization.prefix { $0 != " " }
        guard scheme.lowercased() == "bearer" else {
            throw Refused(status: 401, bearerError: nil, message: "the Authorization header is not a Bearer token")
        }
        let token = authorization.dropFirst(scheme.count).drop { $0 == " " }
        guard token.utf8.count <= Self.maxTokenLength else { throw refuse("the access token is too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])),
            let payloadBytes = Base64URL.decode(String(parts[1])), let signature = Base64URL.decode(String(parts[2])),
            let header = try? JSONParser.parse(headerBytes), let claims = try? JSONParser.parse(payloadBytes),
            claims.objectValue != nil
        else { throw refuse("the access token is not a signed JWT (three base64url parts, JSON header and claims)") }
        guard let alg = header["alg"]?.stringValue, alg == "ES256" || alg == "RS256" else {
            throw refuse("the access token's alg is \(header["alg"]?.stringValue ?? "absent"); ES256 or RS256 is required")
        }
        if header["crit"] != nil { throw refuse("the access token's header has crit, which this server does not support") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let kid = header["kid"]?.stringValue
        let candidates = keys.filter { key in
            (alg == "ES256" ? key.p256 != nil : key.rsa != nil) && (kid == nil || key.kid == kid)
        }
        guard kid != nil || candidates.count == 1 else {
            throw refuse("the access token has no kid and the key set has \(candidates.count) keys for \(alg)")
        }
        let verified = candidates.contains { key in
            if let p256 = key.p256 { return ES256.verify(signature: signature, message: signingInput, key: p256) }
            if let rsa = key.rsa { return rsa.verifyRS256(signature: signature, message: signingInput) }
            return false
        }
        guard verified else {
            throw refuse(
                candidates.isEmpty
                    ? "the access token's key (kid \(kid ?? "absent")) is not in the authorization server's key set"
                    : "the access token's signature does not verify")
        }
        guard claims["iss"]?.stringValue == issuer else { throw refuse("the access token's issuer is not the one trusted") }
        let audiences = claims["aud"]?.stringValue.map { [$0] } ?? (claims["aud"]?.arrayValue ?? []).compactMap(\.stringValue)
        guard audiences.contains(audience) else { throw refuse("the access token is not for this server (aud)") }
        guard let exp = Self.seconds(claims["exp"]) else { throw refuse("the access token has no exp") }
        guard now < exp + skewSeconds else { throw refuse("the access token has expired") }
        if let nbf = claims["nbf"] {
            guard let nbf = Self.seconds(nbf), now + skewSeconds >= nbf else { throw refuse("the access token is not valid yet (nbf)") }
        }
        if let iat = claims["iat"] {
            guard let iat = Self.seconds(iat), iat <= now + skewSeconds else { throw refuse("the access token was issued in the future (iat)") }
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init)
        return AccessGrant(patient: claims["patient"]?.stringValue.map(PatientIdentity.normalize), scopes: scopes)
    }

    /// A NumericDate (RFC 7519 section 2) as whole seconds, or nil for a value that is not a finite number.
    static func seconds(_ value: JSONValue?) -> Int64? {
        guard let number = value?.doubleValue, number.isFinite, abs(number) < 1e15 else { return nil }
        return Int64(number.rounded(.down))
    }
}
