import HealthCardsCore
import Synchronization

/// A location URL's secret that carries its own ticket instead of naming a stored one (links-specification
/// "`.files.location` links"): the link, the content version the manifest handed out, the file's position, when
/// the location expires (seconds since 1970) and the manifest's grant, sealed with the server's location key
/// (AES-256-GCM, RFC 5116). A manifest's locations are then made without a database write (its access record is
/// queued like any other), and a GET opens the seal, checks the time, then reads the link's row for its state and
/// version exactly as for a stored ticket: a deactivated or updated link closes its locations at once.
///
/// Only a holder of the key makes a location that opens; a changed byte fails the GCM tag. The link's id is
/// encrypted, so a location URL does not disclose its manifest's URL.
///
/// Layout, base64url without padding (116 characters for a 43-character link id):
/// IV (12 bytes: the grant's 10 random bytes, then the position as 2 bytes big-endian) ‖ ciphertext of
/// (version, 8 bytes big-endian ‖ expiry, 8 bytes big-endian ‖ link id, ASCII) ‖ tag (16 bytes).
/// Every location of one manifest has its own IV (its position differs); two manifests share an IV only if their
/// 80-bit random grants collide.
struct SealedLocation: Equatable {
    /// Bytes of a manifest's grant (its random part of the IV).
    static let grantByteCount = 10
    /// The highest position a sealed location names (2 bytes); a link with more files gets stored tickets.
    static let maxPosition = 0xFFFF
    /// The additional authenticated data: a sealed value made for something else does not open here.
    static let aad = Array("healthcards location v1".utf8)
    /// Shortest and longest secret read as a sealed location (characters): longer than a stored ticket's
    /// (`LinkID.length`), at most what a 64-character link id gives.
    static let textLengths = (LinkID.length + 1)...160

    var linkID: String
    var version: Int64
    var position: Int
    var expiresAt: Int64
    /// The manifest's random grant (`grantByteCount` bytes), shared by its locations: the access records of the
    /// manifest and of its locations' GETs hold it (`AuditEntry.grant`), which names the recipient of a GET.
    var grant: [UInt8]

    /// A fresh grant for one manifest.
    /// - Throws: `HealthCardError(.crypto)` when the random generator fails.
    static func newGrant() throws(HealthCardError) -> [UInt8] { try Digest.randomBytes(grantByteCount) }

    /// The grant as access records hold it (14 base64url characters).
    static func grantText(_ grant: [UInt8]) -> String { Base64URL.encode(grant) }

    /// The secret of this location (base64url).
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails.
    func sealed(with key: AES256Key) throws(HealthCardError) -> String {
        precondition(grant.count == Self.grantByteCount && (0...Self.maxPosition).contains(position))
        let iv = grant + [UInt8(position >> 8), UInt8(position & 0xFF)]
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(16 + linkID.utf8.count)
        Self.append(version, to: &plaintext)
        Self.append(expiresAt, to: &plaintext)
        plaintext += linkID.utf8
        let (ciphertext, tag) = try AESGCM.seal(plaintext, key: key, iv: iv, aad: Self.aad)
        return Base64URL.encode(iv + ciphertext + tag)
    }

    /// The location a secret seals, or nil when it is not one this key sealed (any length, any bytes: nothing
    /// here traps on hostile input). The expiry is not checked here.
    static func open(_ secret: some StringProtocol, key: AES256Key) -> SealedLocation? {
        guard textLengths.contains(secret.utf8.count), let bytes = Base64URL.decode(Array(secret.utf8)),
            bytes.count > AESGCM.ivByteCount + 16 + AESGCM.tagByteCount
        else { return nil }
        let iv = Array(bytes.prefix(AESGCM.ivByteCount))
        let tag = Array(bytes.suffix(AESGCM.tagByteCount))
        let ciphertext = Array(bytes[AESGCM.ivByteCount..<(bytes.count - AESGCM.tagByteCount)])
        guard let plaintext = try? AESGCM.open(ciphertext, tag: tag, key: key, iv: iv, aad: aad),
            plaintext.count > 16, let linkID = String(validating: plaintext[16...], as: UTF8.self)
        else { return nil }
        return SealedLocation(
            linkID: linkID, version: read(plaintext, at: 0), position: Int(iv[10]) << 8 | Int(iv[11]),
            expiresAt: read(plaintext, at: 8), grant: Array(iv.prefix(grantByteCount)))
    }

    private static func append(_ value: Int64, to bytes: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    private static func read(_ bytes: [UInt8], at offset: Int) -> Int64 {
        var value: Int64 = 0
        for byte in bytes[offset..<(offset + 8)] { value = value << 8 | Int64(byte) }
        return value
    }
}

/// The server's location key (`SealedLocation`): 32 random bytes, made by the first instance that needs it and
/// stored in the database's settings (`location_key`, base64url), so every instance on one database opens the
/// others' locations. Whoever reads that setting can make location URLs, which give only what reading the database
/// gives (the JWEs; never a link's key). Loaded once per process, on first use.
final class LocationKey: Sendable {
    static let settingName = "location_key"
    /// Set once (the first store wins); read without a lock by every request.
    private let key = AtomicLazyReference<AES256Key>()

    /// The key, from the store (made and stored first when there is none).
    /// - Throws: the store's errors (unavailable: the request is answered 503); `StoreError(.failed)` when the
    ///   stored setting is not a key this program writes.
    func get(_ store: LinkStore) throws -> AES256Key {
        if let known = key.load() { return known }
        var stored = try store.setting(Self.settingName)
        if stored == nil { stored = try store.settingOnce(Self.settingName, AES256Key.random().base64url) }
        guard let text = stored, let loaded = AES256Key.decode(base64url: text) else {
            throw StoreError(.failed, "the database's location_key setting is not a 32-byte base64url key")
        }
        return key.storeIfNil(loaded)
    }
}
