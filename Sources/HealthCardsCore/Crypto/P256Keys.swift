/// Where a private key lives: in this process's memory, or in a PKCS#11 token that signs for it. A key's
/// location is data, told when the key is loaded, never guessed from what the key can do.
public enum KeyLocation: Sendable, Equatable {
    /// In this process's memory: generated, or read from a PKCS#8 or SEC 1 PEM (OpenSSL's secure heap holds the
    /// file's bytes while it is read).
    case software
    /// In a PKCS#11 token (an HSM, a smart card, SoftHSM2), named by its URI (PIN attributes never kept); the
    /// private scalar never leaves the token.
    case pkcs11(PKCS11URI)
}

/// An ECDSA P-256 public key (digest section 7): what verifies an ES256 signature and what a JWK publishes.
/// Equal keys have the same point.
public struct P256PublicKey: Sendable, Hashable, CustomStringConvertible {
    package let storage: P256Key

    package init(storage: P256Key) { self.storage = storage }

    /// The point's x coordinate: 32 bytes, big-endian, left-padded.
    public var x: [UInt8] { storage.x }
    /// The point's y coordinate: 32 bytes, big-endian, left-padded.
    public var y: [UInt8] { storage.y }

    /// The public key of JWK coordinates.
    /// - Parameters: x, y: 32 bytes each, big-endian.
    /// - Throws: `HealthCardError(.key)` when a coordinate is not 32 bytes or the point is not on P-256.
    public init(x: [UInt8], y: [UInt8]) throws {
        guard x.count == 32, y.count == 32 else {
            throw HealthCardError(.key, "a P-256 point has 32-byte coordinates; found x of \(x.count) and y of \(y.count) bytes")
        }
        storage = try P256Key.publicKey(x: x, y: y)
    }

    /// The public key in PEM text: an SPKI `BEGIN PUBLIC KEY`, or the public half of a PKCS#8 or SEC 1 private
    /// key (read, then only its public point kept).
    /// - Parameter source: a name for messages (a file name).
    /// - Throws: `HealthCardError(.key)` for text that is not such a PEM, another key type or curve, a point
    ///   not on the curve. Messages never quote key material.
    public init(pem: [UInt8], source: String) throws {
        let key = try P256Key.load(pem: pem, source: source, requirePrivate: false)
        storage = key.hasPrivateKey ? try P256Key.publicKey(x: key.x, y: key.y) : key
    }

    /// The public key in DER SubjectPublicKeyInfo (what `openssl pkey -pubout -outform DER` writes).
    /// - Throws: `HealthCardError(.key)` as `init(pem:source:)`.
    public init(der: [UInt8], source: String) throws {
        storage = try P256Key.load(der: der, source: source)
    }

    /// The SPKI PEM text (`-----BEGIN PUBLIC KEY-----`).
    /// - Throws: `HealthCardError(.crypto)` if OpenSSL fails.
    public func pem() throws -> [UInt8] { try storage.publicPEM() }

    /// The `kid`: the RFC 7638 SHA-256 thumbprint, base64url, 43 characters (digest section 1).
    public var kid: String { JWK(key: storage).kid }

    /// True when `signature` (64-byte raw `R‖S`, RFC 7518 section 3.4) is a valid ES256 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        ES256.verify(signature: signature, message: message, key: storage)
    }

    public static func == (a: P256PublicKey, b: P256PublicKey) -> Bool { a.x == b.x && a.y == b.y }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(x)
        hasher.combine(y)
    }

    /// `P-256 public key <kid>`.
    public var description: String { "P-256 public key \(kid)" }
}

/// An ECDSA P-256 private key (after swift-crypto's `P256.Signing.PrivateKey`): what signs a card (through
/// `ES256Signer`). Where it lives is `location`; in memory, its scalar never leaves OpenSSL except through
/// `pkcs8PEM()`.
public struct P256PrivateKey: Sendable, CustomStringConvertible {
    package let storage: P256Key
    /// Where the key lives.
    public let location: KeyLocation

    package init(storage: P256Key, location: KeyLocation) {
        self.storage = storage
        self.location = location
    }

    /// A new key pair from OpenSSL's default random generator.
    /// - Throws: `HealthCardError(.crypto)`.
    public static func generate() throws -> P256PrivateKey {
        P256PrivateKey(storage: try P256Key.generate(), location: .software)
    }

    /// A private key in PEM text: PKCS#8 (`BEGIN PRIVATE KEY`) or SEC 1 (`BEGIN EC PRIVATE KEY`). Never
    /// prompts for a passphrase.
    /// - Parameter source: a name for messages (a file name).
    /// - Throws: `HealthCardError(.key)` for an encrypted PEM, another key type or curve, a public key, or text
    ///   that is not PEM. Messages never quote key material.
    public init(pem: [UInt8], source: String) throws {
        storage = try P256Key.load(pem: pem, source: source, requirePrivate: true)
        location = .software
    }

    /// A private key held in a PKCS#11 token, through OpenSSL's `pkcs11` engine (RFC 7512 URI, e.g.
    /// `pkcs11:token=issuer;object=shc-2026?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin`;
    /// the PIN from `pin-source` or `HEALTHCARDS_PKCS11_PIN`, never `pin-value`). Every use of a token key is
    /// serialised process-wide.
    /// - Throws: `HealthCardError(.key)` for a malformed URI, a missing module, PIN, token or object, a wrong or
    ///   locked PIN, or a key that is not EC P-256. Messages never name the PIN.
    public init(pkcs11URI uri: String) throws {
        let parsed = try PKCS11URI(uri)
        storage = try PKCS11Engine.loadKey(parsed, allowPublic: false)
        location = .pkcs11(parsed.withoutPIN)
    }

    /// The public half.
    public var publicKey: P256PublicKey { P256PublicKey(storage: storage) }

    /// The key as PKCS#8 PEM (what `keygen` writes, mode 0600): only for a key in memory.
    /// - Throws: `HealthCardError(.key)` for a key in a token, `.crypto` if OpenSSL fails.
    public func pkcs8PEM() throws -> [UInt8] {
        guard location == .software else { throw HealthCardError(.key, "a key held in a PKCS#11 token never leaves it") }
        return try storage.pkcs8PEM()
    }

    /// `P-256 private key <kid> (in memory | in PKCS#11 token …)`, never the key.
    public var description: String {
        switch location {
        case .software: return "P-256 private key \(publicKey.kid) (in memory)"
        case .pkcs11(let uri): return "P-256 private key \(publicKey.kid) (in PKCS#11 \(uri.tokenDescription))"
        }
    }
}
