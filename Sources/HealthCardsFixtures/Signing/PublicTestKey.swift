import HealthCardsCore
import HealthCardsSite
import HealthCardsIssuing
import HealthCardsPrint
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsVerify

/// A P-256 key whose private half is public knowledge: the only keys the hand-written RFC 6979 signer
/// (`DeterministicES256Signer`, `RFC6979`) takes.
///
/// That signer derives each nonce from the private scalar with big-number arithmetic (OpenSSL's `BN_*`
/// comparisons and reductions in the HMAC_DRBG loop) that is not constant-time: its timing may tell an
/// observer something about the scalar. For a key everyone already knows that costs nothing, and it makes
/// test material reproducible byte for byte; a real issuer's key is signed with OpenSSL's ECDSA (random
/// nonces, constant-time), never with it. So the signer's initializers take this type, which is made only
///
/// - from a key recognised by its kid (RFC 7638 thumbprint) among `knownKids`: the shipped demo key
///   (`keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem`), the SMART Health Cards spec's example issuer keys
///   (published with the spec's examples, private halves included), and the RFC 6979 appendix A.2.5 key; or
/// - by `DerivedKey` (a key derived from a seed, which anyone who knows the seed can derive again).
package struct PublicTestKey: Sendable {
    /// The key (private half included).
    package let key: P256Key
    /// Why its private half is public, for messages and documentation ("the demo key", "derived from a seed").
    package let origin: String

    /// The kids of the keys whose private halves are published, and what each is.
    package static let knownKids: [String: String] = [
        DemoKey.kid: "the shipped demo key (keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem)",
        "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s": "the SMART Health Cards spec's example issuer key",
        "EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw": "the SMART Health Cards spec's second example issuer key",
        "DOvxvJiAdIqVWIkFt5hDtCunXLF0BV4-JGv4f-ALSm0": "the RFC 6979 appendix A.2.5 test key",
    ]

    /// True when `kid` names a key whose private half is published (`knownKids`).
    package static func isKnown(kid: String) -> Bool { knownKids[kid] != nil }

    /// A key recognised as a public test key by its kid.
    /// - Throws: `HealthCardError(.key)` for any other key (a real issuer's key, a key the caller made): the message
    ///   says why deterministic signing is kept to public test keys and what to do instead.
    package init(_ key: P256Key) throws {
        let kid = JWK(key: key).kid
        guard let origin = Self.knownKids[kid] else {
            throw HealthCardError(
                .key,
                "key \(kid) is not a public test key: deterministic signatures (RFC 6979) are made "
                    + "by this toolkit's own big-number code, which is not constant-time, so they are kept to keys whose "
                    + "private half is public anyway (the demo key keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem, the "
                    + "spec's example keys). A real key signs with OpenSSL's random nonces: sign it "
                    + "without asking for deterministic signatures (the cards are the same except for their signatures)")
        }
        self.key = key
        self.origin = origin
    }

    /// A key `DerivedKey` made from public material (a seed and a label).
    init(derived key: P256Key) {
        self.key = key
        self.origin = "derived from a seed"
    }
}

extension DerivedKey {
    /// `p256(from:)` as a public test key: its private half is whatever anyone who knows `material` derives.
    package static func testKey(from material: [UInt8]) throws -> PublicTestKey {
        PublicTestKey(derived: try p256(from: material))
    }
}

/// How the fixture catalogue signs with a key: RFC 6979 for a public test key (the catalogue is then the same
/// bytes on every run), OpenSSL's ECDSA with random nonces for any other key (the issuer's own test key: the
/// catalogue then differs between runs in its signatures only, and no non-constant-time code touches the key).
struct FixtureSigner {
    private var deterministic: DeterministicES256Signer?
    private var random: ES256Signer?
    let publicKey: P256PublicKey

    /// Deterministic when `key` is a public test key (`PublicTestKey`), random otherwise.
    /// - Throws: `HealthCardError(.key)` for a key without a private half; `.crypto` when OpenSSL fails.
    init(key: P256Key) throws {
        if PublicTestKey.isKnown(kid: JWK(key: key).kid) {
            let signer = try DeterministicES256Signer(key: try PublicTestKey(key))
            deterministic = signer
            publicKey = signer.publicKey
        } else {
            random = try ES256Signer(key: key)
            publicKey = P256PublicKey(storage: key)
        }
    }

    /// Always deterministic.
    init(testKey: PublicTestKey) throws {
        let signer = try DeterministicES256Signer(key: testKey)
        deterministic = signer
        publicKey = signer.publicKey
    }

    /// Whether the same input gives the same signature (RFC 6979).
    var isDeterministic: Bool { deterministic != nil }

    /// `R‖S` (64 bytes) over `signingInput`.
    mutating func sign(_ signingInput: [UInt8]) throws -> [UInt8] {
        if deterministic != nil { return try deterministic!.sign(signingInput) }
        return try random!.sign(signingInput)
    }

    /// A signature whose `r` and `s` have their top bit set or clear as asked (for DER signatures whose INTEGERs
    /// need a leading zero byte): RFC 6979 with additional data for a test key; for any other key, random-nonce
    /// signatures until `r` matches, then `s` or `n − s` (both valid).
    mutating func sign(_ signingInput: [UInt8], highBitR: Bool, highBitS: Bool) throws -> [UInt8] {
        if let deterministic { return try deterministic.sign(signingInput, highBitR: highBitR, highBitS: highBitS) }
        let curve = try P256Curve()
        for _ in 0..<4096 {
            let raw = try random!.sign(signingInput)
            let r = Array(raw[..<32])
            let s = Array(raw[32...])
            guard (r[0] >= 0x80) == highBitR else { continue }
            if (s[0] >= 0x80) == highBitS { return raw }
            let other = try curve.negated(s)
            if (other[0] >= 0x80) == highBitS { return r + other }
        }
        throw HealthCardError(.crypto, "no signature with the asked top bits of r and s in 4096 tries")
    }
}
