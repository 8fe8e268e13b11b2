#if canImport(Glibc)
    import Glibc
#endif

/// Where the PIN of a PKCS#11 token comes from, and the RFC 7512 attribute names a URI may use.
///
/// A PIN is read only from a file (`pin-source=file:/path`, mode 0600 or stricter, like a key file) or
/// from the environment (`HEALTHCARDS_PKCS11_PIN`), never from the command line: a `pin-value=` in a
/// URI given as an argument is visible to every user of the machine (`ps`, `/proc/PID/cmdline`) and
/// stays in shell history, so it is refused.
enum PKCS11PIN {
    /// The environment variable read when the URI names no `pin-source`.
    static let environmentVariable = "HEALTHCARDS_PKCS11_PIN"

    /// The PIN, in a secret buffer (never a Swift `String`: it is wiped when the last reference goes), and
    /// a phrase saying where it came from (never the PIN itself), or nil when the URI gives no PIN and the
    /// environment holds none.
    /// - Throws: `HealthCardError(.key)` for a `pin-value`, an unsupported or remote `pin-source`, a PIN
    ///   file that is missing, unreadable, over `InputBudget.secretFileBytes`, empty, holds a NUL byte or
    ///   can be read by group or others.
    static func resolve(_ uri: PKCS11URI) throws -> (pin: SecretBytes, origin: String)? {
        let all = uri.queryAttributes + uri.pathAttributes
        if all.contains(where: { $0.name == "pin-value" }) {
            throw HealthCardError(
                .key,
                "PKCS#11 URI \(uri) gives the PIN as pin-value: a PIN on the command line can be read by every user "
                    + "of this machine (ps, /proc/PID/cmdline) and stays in shell history. Put it in a file only you "
                    + "can read (chmod 600) and use pin-source=file:/path/to/pin-file, or set \(environmentVariable)")
        }
        guard let source = all.first(where: { $0.name == "pin-source" })?.value else {
            guard let value = getenv(environmentVariable) else { return nil }
            // Copied from the environment block straight into the secret buffer.
            let pin = SecretBytes(copying: UnsafeRawBufferPointer(start: value, count: strlen(value)))
            guard pin.count > 0 else { throw HealthCardError(.key, "\(environmentVariable) is set but empty") }
            return (pin, "the PIN from \(environmentVariable)")
        }
        let file = try path(ofSource: source)
        try FileIO.requireRegularFile(file, role: "PIN file", kind: .key, fix: "give the file holding the PIN (mode 0600)")
        var st = stat()
        if stat(file, &st) == 0, st.st_mode & 0o077 != 0 {
            throw HealthCardError(
                .key,
                "PIN file \(file) can be read by group or others (mode \(String(st.st_mode & 0o7777, radix: 8))); "
                    + "a PIN must be private to its owner, like a key file. Run `chmod 600 \(file)` and try again")
        }
        let pin: SecretBytes
        do {
            pin = try SecretBytes.read(path: file).trimmingFinalNewline()
        } catch let error as HealthCardError {
            throw HealthCardError(.key, error.text.replacingFirst("cannot read ", with: "cannot read PIN file "))
        }
        guard pin.count > 0 else { throw HealthCardError(.key, "PIN file \(file) is empty") }
        guard !pin.withUnsafeBytes({ $0.contains(0) }) else { throw HealthCardError(.key, "PIN file \(file) contains a NUL byte") }
        return (pin, "the PIN from \(file)")
    }

    /// The local path of a `pin-source` value: `file:/path`, `file:///path`, `file://localhost/path`, or
    /// a plain absolute path.
    /// - Throws: `HealthCardError(.key)` for a remote host or another scheme (e.g. `|command`).
    static func path(ofSource source: String) throws -> String {
        var path = Substring(source)
        if path.hasPrefix("file:") {
            path = path.dropFirst(5)
            if path.hasPrefix("//") {  // file:///path or file://localhost/path
                path = path.dropFirst(2)
                guard let slash = path.firstIndex(of: "/"), path[..<slash].isEmpty || path[..<slash] == "localhost"
                else {
                    throw HealthCardError(
                        .key, "pin-source \(source) names a remote host; only local files are supported")
                }
                path = path[slash...]
            }
        } else if source.hasPrefix("|") || (source.contains(":") && !source.hasPrefix("/")) {
            throw HealthCardError(
                .key,
                "pin-source \(source) is not supported; use pin-source=file:/path/to/pin-file or set \(environmentVariable)"
            )
        }
        return String(path)
    }

    /// RFC 7512 path attributes (section 2.3).
    static let pathNames = [
        "token", "manufacturer", "serial", "model", "library-manufacturer", "library-description", "library-version",
        "object", "type", "id", "slot-description", "slot-manufacturer", "slot-id",
    ]
    /// RFC 7512 query attributes.
    static let queryNames = ["pin-source", "pin-value", "module-name", "module-path"]
    /// RFC 7512 `type` values.
    static let typeValues = ["private", "public", "cert", "secret-key", "data"]

    /// Refuses attribute names RFC 7512 does not define (vendor attributes start with `x-`), naming the
    /// closest known name, and a `type` that is not one of RFC 7512's. A typo would otherwise be passed
    /// to the engine and end as a confusing "not found".
    /// - Throws: `HealthCardError(.key)`; the message never quotes a PIN.
    static func checkNames(path: [PKCS11URI.Attribute], query: [PKCS11URI.Attribute]) throws {
        let known =
            "path attributes: \(pathNames.joined(separator: ", ")); query attributes (after '?'): "
            + queryNames.joined(separator: ", ")
        for (attributes, own, other, part) in [
            (path, pathNames, queryNames, "path"), (query, queryNames, pathNames, "query"),
        ] {
            for attribute in attributes where !attribute.name.hasPrefix("x-") && !own.contains(attribute.name) {
                // pin-source and pin-value were path attributes in early drafts; accepted there.
                if part == "path" && ["pin-source", "pin-value"].contains(attribute.name) { continue }
                if other.contains(attribute.name) {
                    throw HealthCardError(
                        .key,
                        "PKCS#11 URI attribute \(Quote.text(attribute.name)) belongs in the \(part == "path" ? "query (after '?')" : "path (before '?')"), "
                            + "not in the \(part); e.g. pkcs11:token=T;object=O?module-path=M&pin-source=file:P")
                }
                let guess = (pathNames + queryNames).min { distance($0, attribute.name) < distance($1, attribute.name) }
                let hint = guess.flatMap { distance($0, attribute.name) <= 3 ? "did you mean '\($0)'? " : nil } ?? ""
                throw HealthCardError(
                    .key,
                    "PKCS#11 URI \(part) attribute \(Quote.text(attribute.name)) is not an RFC 7512 attribute; \(hint)(\(known))")
            }
        }
        if let type = path.first(where: { $0.name == "type" }), !typeValues.contains(type.value) {
            let guess = typeValues.min { distance($0, type.value) < distance($1, type.value) }
            let hint = guess.flatMap { distance($0, type.value) <= 3 ? "did you mean type=\($0)? " : nil } ?? ""
            throw HealthCardError(
                .key,
                "PKCS#11 URI has type=\(type.value), which is not an RFC 7512 object type; \(hint)(expected one of "
                    + "\(typeValues.joined(separator: ", ")); a signing key is type=private)")
        }
    }

    /// Levenshtein distance between two short ASCII names.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return row[b.count]
    }
}
