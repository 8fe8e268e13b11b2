#if canImport(Glibc)
    import Glibc
#endif

/// Reading and writing key files.
package enum KeyFile {
    /// Loads an ES256 key from a PEM file.
    ///
    /// A private key file that group or others can read is refused, as ssh does.
    /// - Parameters:
    ///   - path: PKCS#8 (`BEGIN PRIVATE KEY`) or SEC 1 PEM; SPKI public PEM, or SPKI DER (what
    ///     `pkcs11-tool --read-object --type pubkey` writes), when `requirePrivate` is false.
    ///   - requirePrivate: the key must be able to sign.
    /// - Throws: `HealthCardError(.key)` for a missing, unreadable (or a folder), unsupported or over-exposed key file,
    ///   with the `chmod` to run in the last case. The message never contains key material.
    package static func load(path: String, requirePrivate: Bool) throws -> P256Key {
        guard FileIO.exists(path) else {
            throw HealthCardError(.key, code: .keyFileMissing, "key file \(path) does not exist; give the path of a P-256 key file, or make a new key there")
        }
        // A FIFO or device would never end (or wait for a writer): refused by name before it is opened.
        try FileIO.requireRegularFile(path, role: "key file", kind: .key, allowFolder: true, fix: "give the PEM key file itself")
        guard !FileIO.isDirectory(path) else {
            throw HealthCardError(.key, "\(path) is a folder, not a key file; give the PEM key file itself (e.g. \(path)/issuer.pem)")
        }
        // The file is read into a secret buffer (never a String or a growing Array), wiped when done.
        let pem: SecretBytes
        do { pem = try SecretBytes.read(path: path) } catch let error as HealthCardError {
            throw HealthCardError(.key, "cannot read key file \(path): \(error.text)")
        }
        let labels = pem.withUnsafeBytes { PEMLabel.all(in: $0) }
        if labels.isEmpty && pem.withUnsafeBytes({ $0.count > 2 && $0[0] == 0x30 }) {
            // A DER SubjectPublicKeyInfo, as pkcs11-tool writes a token's public key. It may be a DER private key
            // (refused by load(der:), which says so and how to convert it): the copy is wiped either way.
            var der = pem.withUnsafeBytes { Array($0) }
            defer { der.wipe() }
            let key = try P256Key.load(der: der, source: path)
            if requirePrivate {
                // Only once load(der:) read it as a public key: a DER private key is not called a public one.
                throw HealthCardError(.key, "\(path) is a DER public key; signing needs the private key (a PKCS#8 PEM "
                    + "file, mode 0600, or a pkcs11: URI)")
            }
            return key
        }
        let isPrivate = labels.contains { $0.hasSuffix("PRIVATE KEY") }
        if isPrivate, let mode = FileIO.mode(path), mode & 0o077 != 0 {
            throw HealthCardError(.key, "private key file \(path) can be read by group or others (mode \(String(mode, radix: 8))); "
                + "a signing key must be private to its owner. Run `chmod 600 \(path)` and try again")
        }
        return try pem.withUnsafeBytes { try P256Key.load(pem: $0, source: path, requirePrivate: requirePrivate) }
    }

    /// Writes a new key pair as PKCS#8 PEM with mode 0600, only ever to a new regular file (see
    /// `FileIO.writeNewPrivateFile`: never over anything that exists, never through a link, never to
    /// standard output); a missing folder is created with mode 0700.
    /// - Throws: `HealthCardError(.key)` when `path` exists or is `-`, `.io` when it cannot be written.
    package static func writeNew(_ key: P256Key, to path: String) throws {
        var pem = try key.pkcs8PEM()
        defer { pem.wipe() }
        try FileIO.writeNewPrivateFile(pem, to: path, what: "key")
    }
}
