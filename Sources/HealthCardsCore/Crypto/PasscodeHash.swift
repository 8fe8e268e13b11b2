internal import COpenSSL

/// A SMART Health Link passcode stored as a slow, salted hash (links-specification "SMART Health Link Manifest
/// Request": the server checks the passcode and counts wrong ones; IHE ITI.VHL: passcodes only as slow salted
/// hashes), through OpenSSL: scrypt (RFC 7914, `EVP_PBE_scrypt`) or PBKDF2-HMAC-SHA256 (RFC 8018,
/// `PKCS5_PBKDF2_HMAC`). Comparison is constant-time (`CRYPTO_memcmp`).
///
/// The stored form is one line of text that names the function and its cost, so a server checks a hash with
/// the cost it was made with:
///
///     scrypt$ln=15,r=8,p=1$<salt: 16 bytes, base64url>$<hash: 32 bytes, base64url>
///     pbkdf2-sha256$i=600000$<salt>$<hash>
public struct PasscodeHash: Sendable, Equatable, CustomStringConvertible {
    /// The key derivation function and its cost.
    public enum Function: Sendable, Equatable, CustomStringConvertible {
        /// scrypt with N = 2^`log2N`, block size `r`, parallelism `p`; memory 128 · r · N bytes.
        case scrypt(log2N: Int, r: Int, p: Int)
        /// PBKDF2-HMAC-SHA256 with `iterations` rounds.
        case pbkdf2SHA256(iterations: Int)

        /// The default: scrypt N = 2^15, r = 8, p = 1 (32 MiB; RFC 7914's interactive-login cost times two).
        public static let standard = Function.scrypt(log2N: 15, r: 8, p: 1)

        /// Bytes of memory one derivation takes (scrypt's V array; a few hundred bytes for PBKDF2).
        public var memoryBytes: Int {
            switch self {
            case .scrypt(let log2N, let r, let p): return 128 * r * ((1 << log2N) + p)
            case .pbkdf2SHA256: return 512
            }
        }

        /// The parameter text of the stored form: `ln=15,r=8,p=1` or `i=600000`.
        var parameters: String {
            switch self {
            case .scrypt(let log2N, let r, let p): return "ln=\(log2N),r=\(r),p=\(p)"
            case .pbkdf2SHA256(let iterations): return "i=\(iterations)"
            }
        }

        var name: String {
            switch self {
            case .scrypt: return "scrypt"
            case .pbkdf2SHA256: return "pbkdf2-sha256"
            }
        }

        /// E.g. `scrypt N=2^15 r=8 p=1 (32 MiB)` or `PBKDF2-HMAC-SHA256 600000 iterations`.
        public var description: String {
            switch self {
            case .scrypt(let log2N, let r, let p):
                return "scrypt N=2^\(log2N) r=\(r) p=\(p) (\(memoryBytes / (1024 * 1024)) MiB)"
            case .pbkdf2SHA256(let iterations): return "PBKDF2-HMAC-SHA256 \(iterations) iterations"
            }
        }

        /// The limits a cost must stay within, so that a stored hash can never make a check exhaust memory or
        /// time: scrypt 2^10 ≤ N ≤ 2^20, 1 ≤ r ≤ 32, 1 ≤ p ≤ 16, memory ≤ 256 MiB; PBKDF2 1,000 to 10,000,000
        /// iterations.
        public var problem: String? {
            switch self {
            case .scrypt(let log2N, let r, let p):
                guard (10...20).contains(log2N) else { return "scrypt log2(N) \(log2N) is outside 10...20" }
                guard (1...32).contains(r) else { return "scrypt r \(r) is outside 1...32" }
                guard (1...16).contains(p) else { return "scrypt p \(p) is outside 1...16" }
                // RFC 7914 section 2: N < 2^(128 · r / 8); OpenSSL refuses a larger N for the block size.
                guard log2N < 16 * r else {
                    return "scrypt N=2^\(log2N) needs r of at least \(log2N / 16 + 1) (RFC 7914: N < 2^(16·r)); r is \(r)"
                }
                guard memoryBytes <= 256 * 1024 * 1024 else {
                    return "scrypt N=2^\(log2N) r=\(r) p=\(p) takes \(memoryBytes / 1024) KiB, over 262144 KiB (256 MiB)"
                }
                return nil
            case .pbkdf2SHA256(let iterations):
                guard (1000...10_000_000).contains(iterations) else {
                    return "PBKDF2 iterations \(iterations) is outside 1000...10000000"
                }
                return nil
            }
        }

        /// Parses a cost as written on a command line or in the stored form: `scrypt` (the default cost),
        /// `scrypt:ln=15,r=8,p=1`, `pbkdf2-sha256` (600,000 iterations, OWASP 2023) or `pbkdf2-sha256:i=600000`.
        /// - Returns: nil when the text is none of these or the cost is outside the limits (`problem`).
        public static func parse(_ text: String) -> Function? {
            guard let function = written(text), function.problem == nil else { return nil }
            return function
        }

        /// Why `text` is not a cost `parse` takes: the limit it breaks (`problem`), or nil when it is not written as
        /// one at all (or is one).
        public static func problem(of text: String) -> String? { written(text)?.problem }

        /// The cost `text` writes, within the limits or not.
        static func written(_ text: String) -> Function? {
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return parse(name: String(parts[0]), parameters: parts.count == 2 ? String(parts[1]) : nil)
        }

        static func parse(name: String, parameters: String?) -> Function? {
            var values: [String: Int] = [:]
            if let parameters {
                for item in parameters.split(separator: ",", omittingEmptySubsequences: false) {
                    let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard pair.count == 2, values[String(pair[0])] == nil,
                        pair[1].allSatisfy({ $0.isASCII && $0.isNumber }),
                        pair[1].count <= 9, let value = Int(pair[1])
                    else { return nil }
                    values[String(pair[0])] = value
                }
            }
            let function: Function
            switch name {
            case "scrypt":
                guard Set(values.keys).isSubset(of: ["ln", "r", "p"]) else { return nil }
                function = .scrypt(log2N: values["ln"] ?? 15, r: values["r"] ?? 8, p: values["p"] ?? 1)
            case "pbkdf2-sha256":
                guard Set(values.keys).isSubset(of: ["i"]) else { return nil }
                function = .pbkdf2SHA256(iterations: values["i"] ?? 600_000)
            default: return nil
            }
            return function
        }
    }

    /// Bytes of salt (fresh from `RAND_bytes` for every hash).
    public static let saltByteCount = 16
    /// Bytes of derived hash.
    public static let hashByteCount = 32
    /// Most bytes of a passcode (UTF-8): a passcode is typed by a person.
    public static let maxPasscodeBytes = 1024
    /// Most characters of the stored form read (a hostile database row is not parsed at any length).
    public static let maxStoredCharacters = 256

    public let function: Function
    public let salt: [UInt8]
    /// The derived bytes (not a secret by itself, but with the salt it lets anyone test guesses offline at
    /// the function's cost: keep the database private).
    public let hash: [UInt8]

    /// The stored form (see the type's documentation).
    public var stored: String {
        "\(function.name)$\(function.parameters)$\(Base64URL.encode(salt))$\(Base64URL.encode(hash))"
    }

    public var description: String { function.description }

    /// Hashes `passcode` with a fresh salt.
    /// - Parameters:
    ///   - passcode: the passcode's bytes (1 to `maxPasscodeBytes`), lent and not kept.
    ///   - function: the function and cost (`Function.standard` by default).
    /// - Throws: `HealthCardError(.crypto)` when the passcode is empty or too long, the cost is outside the
    ///   limits, or OpenSSL fails.
    public static func make(passcode: UnsafeRawBufferPointer, function: Function = .standard) throws(HealthCardError)
        -> PasscodeHash
    {
        if let problem = function.problem { throw HealthCardError(.crypto, "passcode hash cost: \(problem)") }
        let salt = try Digest.randomBytes(saltByteCount)
        let hash = try derive(passcode: passcode, salt: salt, function: function)
        return PasscodeHash(function: function, salt: salt, hash: hash)
    }

    /// Reads the stored form.
    /// - Returns: nil for text that is not a stored hash this type writes, or whose cost is outside the limits.
    public init?(stored text: String) {
        guard text.utf8.count <= Self.maxStoredCharacters else { return nil }
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, let function = Function.parse(name: String(parts[0]), parameters: String(parts[1])),
            function.problem == nil,
            let salt = Base64URL.decode(String(parts[2])), salt.count == Self.saltByteCount,
            let hash = Base64URL.decode(String(parts[3])), hash.count == Self.hashByteCount
        else { return nil }
        self.init(function: function, salt: salt, hash: hash)
    }

    init(function: Function, salt: [UInt8], hash: [UInt8]) {
        self.function = function
        self.salt = salt
        self.hash = hash
    }

    /// Whether `passcode` is the one hashed: derives it with this hash's salt and cost and compares in constant
    /// time. A passcode that is empty or over `maxPasscodeBytes` is never the one (it could not have been hashed),
    /// and costs no derivation.
    /// - Throws: `HealthCardError(.crypto)` only when OpenSSL fails (e.g. cannot allocate scrypt's memory).
    public func matches(_ passcode: UnsafeRawBufferPointer) throws(HealthCardError) -> Bool {
        guard passcode.count > 0, passcode.count <= Self.maxPasscodeBytes else { return false }
        var derived = try Self.derive(passcode: passcode, salt: salt, function: function)
        defer { derived.wipe() }
        guard derived.count == hash.count else { return false }
        let same = derived.withUnsafeBytes { a in
            hash.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
        return same
    }

    /// Whether the passcode in `text` (its UTF-8 bytes) is the one hashed.
    public func matches(_ text: String) throws(HealthCardError) -> Bool {
        var bytes = Array(text.utf8)
        defer { bytes.wipe() }
        return try bytes.withUnsafeBytes { raw in Result { () throws(HealthCardError) in try matches(raw) } }.get()
    }

    static func derive(passcode: UnsafeRawBufferPointer, salt: [UInt8], function: Function) throws(HealthCardError)
        -> [UInt8]
    {
        guard passcode.count > 0 else { throw HealthCardError(.crypto, "an empty passcode") }
        guard passcode.count <= maxPasscodeBytes else {
            throw HealthCardError(.crypto, "a passcode of \(passcode.count) bytes; at most \(maxPasscodeBytes)")
        }
        var out = [UInt8](repeating: 0, count: hashByteCount)
        let pass = passcode.baseAddress!.assumingMemoryBound(to: CChar.self)
        let done: Int32
        switch function {
        case .scrypt(let log2N, let r, let p):
            // maxmem: what this cost needs and a little more; OpenSSL refuses a cost above it instead of allocating.
            done = EVP_PBE_scrypt(
                pass, passcode.count, salt, salt.count, UInt64(1) << UInt64(log2N), UInt64(r), UInt64(p),
                UInt64(function.memoryBytes + 1024 * 1024), &out, out.count)
        case .pbkdf2SHA256(let iterations):
            done = PKCS5_PBKDF2_HMAC(
                pass, Int32(passcode.count), salt, Int32(salt.count), Int32(iterations), EVP_sha256(),
                Int32(out.count), &out)
        }
        guard done == 1 else { throw cryptoError("passcode hashing (\(function))") }
        return out
    }
}
