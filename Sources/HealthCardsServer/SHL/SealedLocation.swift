import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// A location URL's secret that carries its own ticket instead of naming a stored one (links-specification
/// "`.files.location` links"): the link, the content version the manifest handed out, the file's position, when
/// the location expires (seconds since 1970) and the manifest's grant, sealed with the server's location key of the
/// hour (AES-256-GCM, RFC 5116; `LocationKeys`). A manifest's locations are then made without a database write (its
/// access record is queued like any other), and a GET opens the seal, checks the time, then reads the link's row for
/// its state and version exactly as for a stored ticket: a deactivated or updated link closes its locations at once.
///
/// Only a holder of that hour's key makes a location that opens; a changed byte fails the GCM tag. The link's id is
/// encrypted, so a location URL does not disclose its manifest's URL.
///
/// Layout, base64url without padding (118 characters for a 43-character link id): the key's hour (1 byte, the
/// hour number's low byte, authenticated) ‖ IV (12 bytes: the grant's 10 random bytes, then the position as 2 bytes
/// big-endian) ‖ ciphertext of (version, 8 bytes big-endian ‖ expiry, 8 bytes big-endian ‖ link id, ASCII) ‖ tag
/// (16 bytes). Every location of one manifest has its own IV (its position differs); two manifests of one hour share
/// an IV only if their 80-bit random grants collide.
struct SealedLocation: Equatable {
    /// Bytes of a manifest's grant (its random part of the IV).
    static let grantByteCount = 10
    /// The highest position a sealed location names (2 bytes); a link with more files gets stored tickets.
    static let maxPosition = 0xFFFF
    /// The additional authenticated data (with the hour byte after it): a sealed value made for something else does
    /// not open here.
    static let aad = Array("healthcards location v1".utf8)
    /// Shortest and longest secret read as a sealed location (characters): longer than a stored ticket's
    /// (`LinkID.length`), at most what a 64-character link id gives.
    static let textLengths = (LinkID.length + 1)...160
    /// The longest a location lives (seconds): the IG's hour. A seal whose expiry is further away does not open.
    static let maxLifetime: Int64 = 3600

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

    /// The secret of this location (base64url), sealed with the key of `hour` (`LocationKeys.hour`).
    /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails.
    func sealed(with key: AES256Key, hour: Int64) throws(HealthCardError) -> String {
        precondition(grant.count == Self.grantByteCount && (0...Self.maxPosition).contains(position))
        let hourByte = UInt8(truncatingIfNeeded: hour)
        let iv = grant + [UInt8(position >> 8), UInt8(position & 0xFF)]
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(16 + linkID.utf8.count)
        Self.append(version, to: &plaintext)
        Self.append(expiresAt, to: &plaintext)
        plaintext += linkID.utf8
        let (ciphertext, tag) = try AESGCM.seal(plaintext, key: key, iv: iv, aad: Self.aad + [hourByte])
        return Base64URL.encode([hourByte] + iv + ciphertext + tag)
    }

    /// The low byte of the hour whose key sealed `secret`, or nil when it cannot be a sealed location.
    static func hourByte(of secret: some StringProtocol) -> UInt8? {
        guard textLengths.contains(secret.utf8.count), let first = Base64URL.decode(Array(secret.utf8.prefix(4)))
        else { return nil }
        return first.first
    }

    /// The location a secret seals, or nil when it is not one `key` sealed (any length, any bytes: nothing here
    /// traps on hostile input). The expiry is not checked here.
    static func open(_ secret: some StringProtocol, key: AES256Key) -> SealedLocation? {
        guard textLengths.contains(secret.utf8.count), let bytes = Base64URL.decode(Array(secret.utf8)),
            bytes.count > 1 + AESGCM.ivByteCount + 16 + AESGCM.tagByteCount
        else { return nil }
        let iv = Array(bytes[1...AESGCM.ivByteCount])
        let tag = Array(bytes.suffix(AESGCM.tagByteCount))
        let ciphertext = Array(bytes[(1 + AESGCM.ivByteCount)..<(bytes.count - AESGCM.tagByteCount)])
        guard let plaintext = try? AESGCM.open(ciphertext, tag: tag, key: key, iv: iv, aad: aad + [bytes[0]]),
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

/// The server's location keys (`SealedLocation`), one an hour: 32 random bytes made by the first instance that seals
/// a location in that hour and stored in the database's settings (`location_key.<hour>`, base64url), so every
/// instance on one database opens the others' locations. A location opens with the key of the hour it was sealed in
/// while that hour or the next runs (a location lives at most an hour); keys older than that are deleted from the
/// database when the next hour's key is made. So a copy of the database (a backup) makes working location URLs for
/// at most about two hours after it was taken, never for links made or versions published later.
///
/// Reads take a read lock only (`pthread_rwlock_t`): every request reads the ring, and a mutex taken by 16 request
/// threads on 2 cores cost 14 % of a location GET.
final class LocationKeys: @unchecked Sendable {
    static let namePrefix = "location_key."
    /// Seconds of one key's hour.
    static let hourSeconds: Int64 = 3600
    /// Seconds the last hour's key found missing is not looked for again (a hostile location naming that hour must
    /// not cost a database read each time).
    static let absentSeconds: Int64 = 10

    private enum Entry {
        case key(AES256Key)
        case absent(until: Int64)
    }

    // Guarded by `lock`; at most three hours.
    private var entries: [Int64: Entry] = [:]
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    static func hour(_ now: Int64) -> Int64 { now >= 0 ? now / hourSeconds : (now - hourSeconds + 1) / hourSeconds }

    static func name(_ hour: Int64) -> String { namePrefix + String(hour) }

    private func cached(_ hour: Int64) -> Entry? {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return entries[hour]
    }

    private func remember(_ entry: Entry, for hour: Int64, now: Int64) {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        let current = Self.hour(now)
        entries = entries.filter { $0.key >= current - 1 && $0.key <= current + 1 }
        entries[hour] = entry
    }

    /// The key to seal with at `now`, made and stored first when this hour has none yet (then the keys of hours
    /// before the last are deleted).
    /// - Throws: the store's errors (unavailable: the request is answered 503); `StoreError(.failed)` when the
    ///   stored setting is not a key this program writes.
    func sealingKey(at now: Int64, _ store: LinkStore) throws -> (key: AES256Key, hour: Int64) {
        let hour = Self.hour(now)
        if case .key(let key)? = cached(hour) { return (key, hour) }
        var stored = try store.setting(Self.name(hour))
        if stored == nil {
            stored = try store.settingOnce(Self.name(hour), AES256Key.random().base64url)
            try store.deleteSettings(prefix: Self.namePrefix, except: [Self.name(hour - 1), Self.name(hour), Self.name(hour + 1)])
        }
        let key = try Self.decode(stored, hour)
        remember(.key(key), for: hour, now: now)
        return (key, hour)
    }

    /// The key a location sealed in the hour whose low byte is `hourByte` opens with at `now`: this hour's or the
    /// last one's (the next one's too when already known: another instance's clock a little ahead). nil when
    /// neither hour has a key.
    /// - Throws: as `sealingKey`.
    func openingKey(hourByte: UInt8, at now: Int64, _ store: LinkStore) throws -> AES256Key? {
        let current = Self.hour(now)
        guard let hour = [current, current - 1, current + 1].first(where: { UInt8(truncatingIfNeeded: $0) == hourByte })
        else { return nil }
        // This hour's key is read or made as for sealing: never remembered as absent, which a location naming this
        // hour before any instance sealed one would make for the locations sealed next, on other instances.
        if hour == current { return try sealingKey(at: now, store).key }
        switch cached(hour) {
        case .key(let key)?: return key
        case .absent(let until)? where until > now: return nil
        default:
            guard hour != current + 1 else { return nil }
            guard let stored = try store.setting(Self.name(hour)) else {
                remember(.absent(until: now + Self.absentSeconds), for: hour, now: now)
                return nil
            }
            let key = try Self.decode(stored, hour)
            remember(.key(key), for: hour, now: now)
            return key
        }
    }

    private static func decode(_ stored: String?, _ hour: Int64) throws -> AES256Key {
        guard let stored, let key = AES256Key.decode(base64url: stored) else {
            throw StoreError(.failed, "the database's \(name(hour)) setting is not a 32-byte base64url key")
        }
        return key
    }
}
