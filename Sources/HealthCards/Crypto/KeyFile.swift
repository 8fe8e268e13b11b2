#if canImport(Glibc)
    import Glibc
#endif

/// Reading and writing key files.
public enum KeyFile {
    /// Loads an ES256 key from a PEM file.
    ///
    /// A private key file that group or others can read is refused, as ssh does.
    /// - Parameters:
    ///   - path: PKCS#8 (`BEGIN PRIVATE KEY`) or SEC 1 PEM; SPKI public PEM when `requirePrivate` is false.
    ///   - requirePrivate: the key must be able to sign.
    /// - Throws: `HealthCardError(.key)` for a missing, unreadable (or a folder), unsupported or over-exposed key file,
    ///   with the `chmod` to run in the last case. The message never contains key material.
    public static func load(path: String, requirePrivate: Bool) throws -> P256Key {
        guard FileIO.exists(path) else {
            throw HealthCardError(.key, "key file \(path) does not exist; make one with `healthcards keygen --out \(path)`")
        }
        guard !FileIO.isDirectory(path) else {
            throw HealthCardError(.key, "\(path) is a folder, not a key file; give the PEM key file itself (e.g. \(path)/issuer.pem)")
        }
        // The file is read into a secret buffer (never a String or a growing Array), wiped when done.
        SecureHeap.start()
        let pem: SecretBytes
        do { pem = try SecretBytes.read(path: path) } catch let error as HealthCardError {
            throw HealthCardError(.key, "cannot read key file \(path): \(error.message)")
        }
        let isPrivate = pem.withUnsafeBytes { PEMLabel.all(in: $0) }.contains { $0.hasSuffix("PRIVATE KEY") }
        if isPrivate, let mode = FileIO.mode(path), mode & 0o077 != 0 {
            throw HealthCardError(.key, "private key file \(path) can be read by group or others (mode \(String(mode, radix: 8))); "
                + "a signing key must be private to its owner. Run `chmod 600 \(path)` and try again")
        }
        return try pem.withUnsafeBytes { try P256Key.load(pem: $0, source: path, requirePrivate: requirePrivate) }
    }

    /// Writes a new key pair as PKCS#8 PEM with mode 0600. Refuses to overwrite an existing file.
    /// - Throws: `HealthCardError(.key)` when `path` exists, `.io` when it cannot be written.
    public static func writeNew(_ key: P256Key, to path: String) throws {
        guard !FileIO.exists(path) else {
            throw HealthCardError(.key, "\(path) already exists; keygen never overwrites a key. Choose another --out, or move the old key away first")
        }
        var pem = try key.pkcs8PEM()
        defer { pem.wipe() }
        try FileIO.writeAtomically(pem, to: path, mode: 0o600)
    }
}
