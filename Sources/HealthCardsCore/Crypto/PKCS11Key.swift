internal import COpenSSL
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An RFC 7512 PKCS#11 URI, e.g.
/// `pkcs11:token=issuer;object=shc-2026;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin`.
///
/// Only what this toolkit needs is interpreted here: the `module-path` query attribute and the PIN
/// (`pin-value` or `pin-source`). Finding the token and the object is left to OpenSSL's `pkcs11`
/// engine, which receives the path part as written. `description` never shows a PIN.
public struct PKCS11URI: Sendable, Equatable, CustomStringConvertible {
    /// One `name=value` attribute, `value` percent-decoded (RFC 7512 section 2.3).
    public struct Attribute: Sendable, Equatable {
        public var name: String
        public var value: String
        /// The value as written in the URI (still percent-encoded).
        var raw: String
    }

    /// Path attributes (`token`, `object`, `id`, `type`, `serial`, …), in order.
    public let pathAttributes: [Attribute]
    /// Query attributes (`module-path`, `pin-source`, `pin-value`, …), in order.
    public let queryAttributes: [Attribute]

    /// Parses `text`.
    /// - Throws: `HealthCardError(.key)` when `text` does not start with `pkcs11:`, an attribute has
    ///   no `=`, a path attribute repeats, or a `%` is not followed by two hex digits. The message
    ///   never quotes a PIN.
    public init(_ text: String) throws {
        guard text.count >= 7, text.prefix(7).lowercased() == "pkcs11:" else {
            throw HealthCardError(.key, "a PKCS#11 URI starts with 'pkcs11:' (RFC 7512)")
        }
        let rest = text.dropFirst(7)
        let pathPart: Substring
        let queryPart: Substring?
        if let q = rest.firstIndex(of: "?") {
            pathPart = rest[..<q]
            queryPart = rest[rest.index(after: q)...]
        } else {
            pathPart = rest
            queryPart = nil
        }
        pathAttributes = try Self.attributes(pathPart, separator: ";", part: "path")
        queryAttributes = try queryPart.map { try Self.attributes($0, separator: "&", part: "query") } ?? []
        var seen = Set<String>()
        for attribute in pathAttributes where !seen.insert(attribute.name).inserted {
            throw HealthCardError(.key, "PKCS#11 URI path attribute '\(attribute.name)' appears twice (RFC 7512 forbids it)")
        }
        try PKCS11PIN.checkNames(path: pathAttributes, query: queryAttributes)
    }

    private static func attributes(_ part: Substring, separator: Character, part kind: String) throws -> [Attribute] {
        var out: [Attribute] = []
        for item in part.split(separator: separator, omittingEmptySubsequences: true) {
            guard let eq = item.firstIndex(of: "=") else {
                throw HealthCardError(.key, "PKCS#11 URI \(kind) attribute \(Quote.text(item)) has no '=' (expected name=value)")
            }
            let name = try percentDecode(item[..<eq], attribute: "name")
            let raw = String(item[item.index(after: eq)...])
            let value = try percentDecode(Substring(raw), attribute: name)
            out.append(Attribute(name: name.lowercased(), value: value, raw: raw))
        }
        return out
    }

    /// RFC 3986 percent-decoding of UTF-8 text (`PercentEncoding`). The message names the attribute, never the value.
    static func percentDecode(_ text: Substring, attribute: String) throws -> String {
        guard let decoded = PercentEncoding.decoded(text) else {
            throw HealthCardError(
                .key, "PKCS#11 URI attribute \(Quote.text(attribute)) has a '%' not followed by two hex digits")
        }
        return decoded
    }

    /// The decoded value of path attribute `name` (e.g. `token`, `object`), or nil.
    public func path(_ name: String) -> String? { pathAttributes.first { $0.name == name }?.value }

    /// The decoded value of query attribute `name` (e.g. `module-path`), or nil.
    public func query(_ name: String) -> String? { queryAttributes.first { $0.name == name }?.value }

    /// The `module-path` query attribute: the PKCS#11 module (shared library) to load.
    public var modulePath: String? { query("module-path") }

    static let pinAttributes: Set<String> = ["pin-value", "pin-source"]

    /// The URI with every `pin-value` replaced by `REDACTED`, for messages and logs.
    public var description: String {
        func join(_ attributes: [Attribute], _ separator: String) -> String {
            attributes.map { "\($0.name)=\($0.name == "pin-value" ? "REDACTED" : $0.raw)" }.joined(separator: separator)
        }
        var text = "pkcs11:" + join(pathAttributes, ";")
        if !queryAttributes.isEmpty { text += "?" + join(queryAttributes, "&") }
        return text
    }

    /// The URI without its PIN attributes (`pin-value`, `pin-source`): what a loaded key keeps of it.
    public var withoutPIN: PKCS11URI {
        PKCS11URI(
            pathAttributes: pathAttributes.filter { !Self.pinAttributes.contains($0.name) },
            queryAttributes: queryAttributes.filter { !Self.pinAttributes.contains($0.name) })
    }

    private init(pathAttributes: [Attribute], queryAttributes: [Attribute]) {
        self.pathAttributes = pathAttributes
        self.queryAttributes = queryAttributes
    }

    /// The URI handed to OpenSSL's engine: the path attributes as written, without PIN attributes.
    var engineURI: String {
        "pkcs11:" + pathAttributes.filter { !Self.pinAttributes.contains($0.name) }
            .map { "\($0.name)=\($0.raw)" }.joined(separator: ";")
    }

    /// The token-selecting path attributes only (for telling "no such token" from "no such object").
    var tokenOnlyEngineURI: String? {
        let tokenNames: Set<String> = ["token", "manufacturer", "serial", "model"]
        let attributes = pathAttributes.filter { tokenNames.contains($0.name) }
        guard !attributes.isEmpty else { return nil }
        return "pkcs11:" + attributes.map { "\($0.name)=\($0.raw)" }.joined(separator: ";") + ";type=private"
    }

    /// "token 'issuer'" or "token matching serial=…", for messages.
    public var tokenDescription: String {
        if let label = path("token") { return "token \(Quote.text(label))" }
        let parts = pathAttributes.filter { ["manufacturer", "serial", "model"].contains($0.name) }
        if parts.isEmpty { return "any token" }
        return "token matching " + parts.map { "\($0.name)=\($0.value)" }.joined(separator: ";")
    }

    /// "object 'shc-2026' (id %01)", for messages.
    var objectDescription: String {
        var parts: [String] = []
        if let label = path("object") { parts.append("object \(Quote.text(label))") }
        if let id = pathAttributes.first(where: { $0.name == "id" }) { parts.append("id \(id.raw)") }
        return parts.isEmpty ? "any private key" : parts.joined(separator: " ")
    }
}

extension P256Key {
    /// Loads an ECDSA P-256 private key held in a PKCS#11 token (an HSM, a smart card, SoftHSM2)
    /// through OpenSSL's `pkcs11` engine (Debian `libengine-pkcs11-openssl`, libp11).
    ///
    /// The private scalar never leaves the token: the returned key's `hasPrivateKey` is true and
    /// `ES256Signer` signs with it by asking the token; `x` and `y` come from the public point.
    ///
    /// - Parameter uri: an RFC 7512 URI such as
    ///   `pkcs11:token=issuer;object=shc-2026?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/pin`.
    ///   The module is `module-path`, else the `PKCS11_MODULE_PATH` environment variable. The PIN is
    ///   read from `pin-source=file:/path` (or a plain path; mode 0600 or stricter; one final newline
    ///   is dropped) or the `HEALTHCARDS_PKCS11_PIN` environment variable, never from `pin-value`
    ///   (`PKCS11PIN`). Other path attributes (`token`, `object`, `id`, `serial`, …) select the
    ///   key and are interpreted by the engine.
    ///   - allowPublic: accept `type=public`, the public half of a key (for publishing a retired
    ///     key whose private half was destroyed); no PIN is needed for it. The key cannot sign.
    /// - Throws: `HealthCardError(.key)` for a malformed URI (an unknown attribute names the closest
    ///   known one), a missing or unloadable module, a missing, exposed or unreadable PIN, a wrong or
    ///   locked PIN, a token or object that is not found, or a key that is not EC P-256. Messages name
    ///   the module, token and object, never the PIN.
    ///
    /// One process uses one PKCS#11 module (the engine binds to the first module it loads). Once a
    /// token is logged in, PKCS#11 keeps the login for the whole process, so later loads from the
    /// same token are not re-checked against their PIN.
    package static func load(pkcs11URI uri: String, allowPublic: Bool = false) throws -> P256Key {
        try PKCS11Engine.loadKey(try PKCS11URI(uri), allowPublic: allowPublic)
    }
}

/// Where a signing (or verification) key comes from: a PEM file or a PKCS#11 URI.
public enum KeySource {
    /// Loads `argument` as a key.
    ///
    /// - Parameters:
    ///   - argument: a PKCS#11 URI (starts with `pkcs11:`, see `P256Key.load(pkcs11URI:)`) or the
    ///     path of a PEM key file (see `KeyFile.load(path:requirePrivate:)`, which refuses private key
    ///     files that group or others can read).
    ///   - requirePrivate: refuse a public key (a public PEM or DER file, a `type=public` URI).
    /// - Throws: `HealthCardError(.key)` for unusable key material, URI or key file.
    /// The signing key `argument` names: a PKCS#11 URI (starts with `pkcs11:`, see
    /// `P256PrivateKey(pkcs11URI:)`) or the path of a PKCS#8 or SEC 1 PEM file that only its owner can read.
    /// - Throws: `HealthCardError(.key)` for unusable key material, URI or key file (a public key included).
    public static func privateKey(_ argument: String) throws -> P256PrivateKey {
        if isPKCS11(argument) { return try P256PrivateKey(pkcs11URI: argument) }
        return P256PrivateKey(storage: try KeyFile.load(path: argument, requirePrivate: true), location: .software)
    }

    /// The public key `argument` names: a PKCS#11 URI (`type=public` allowed), or the path of a PEM file (SPKI,
    /// or the public half of a private key), a DER SPKI file.
    /// - Throws: `HealthCardError(.key)` for unusable key material, URI or key file.
    public static func publicKey(_ argument: String) throws -> P256PublicKey {
        P256PublicKey(storage: try load(argument, requirePrivate: false))
    }

    static func isPKCS11(_ argument: String) -> Bool {
        argument.count >= 7 && argument.prefix(7).lowercased() == "pkcs11:"
    }

    package static func load(_ argument: String, requirePrivate: Bool) throws -> P256Key {
        if argument.count >= 7, argument.prefix(7).lowercased() == "pkcs11:" {
            return try P256Key.load(pkcs11URI: argument, allowPublic: !requirePrivate)
        }
        return try KeyFile.load(path: argument, requirePrivate: requirePrivate)
    }
}


/// The process's one instance of OpenSSL's `pkcs11` engine (libp11 can be bound only once per
/// process), serialised by a lock.
enum PKCS11Engine {
    private struct State {
        var engine: OpaquePointer?
        var initialized = false
        /// The module the engine has loaded; later loads must use the same one.
        var boundModule: String?
    }

    private static let shared = Mutex<State>(State())

    /// Serialises every use of the engine and of the keys it loaded, process-wide: the engine is one per
    /// process, and neither it nor a token session may be used by two threads at once, so two loads of one
    /// token key (or of two keys of one token) never sign concurrently.
    private static let use = Mutex(())

    /// Runs `body` alone among the users of the engine and its keys.
    static func serialized<Result>(_ body: () throws -> Result) rethrows -> Result {
        try use.withLock { _ in try body() }
    }

    /// Where the module comes from, for messages.
    private static func resolveModule(_ uri: PKCS11URI) throws -> (path: String, origin: String) {
        if let path = uri.modulePath, !path.isEmpty { return (path, "module-path") }
        if let env = getenv("PKCS11_MODULE_PATH"), case let path = String(cString: env), !path.isEmpty {
            return (path, "PKCS11_MODULE_PATH")
        }
        if uri.query("module-name") != nil {
            throw HealthCardError(.key, "PKCS#11 URI \(uri): module-name is not supported; give the library file "
                + "with module-path=/path/to/module.so or the PKCS11_MODULE_PATH environment variable")
        }
        throw HealthCardError(.key, "PKCS#11 URI \(uri) names no module: add ?module-path=/path/to/module.so "
            + "(SoftHSM2: /usr/lib/softhsm/libsofthsm2.so) or set PKCS11_MODULE_PATH")
    }

    /// The PIN and a phrase saying where it came from (never the PIN itself): a `pin-source` file or
    /// the environment (`PKCS11PIN.resolve`); nil when neither gives one. The PIN is a secret buffer.
    private static func resolvePIN(_ uri: PKCS11URI) throws -> (pin: SecretBytes, origin: String)? {
        try PKCS11PIN.resolve(uri)
    }

    /// `text` with every occurrence of the PIN replaced by `REDACTED`, compared as bytes so the PIN never
    /// becomes a `String`.
    private static func scrub(_ text: String, pin: SecretBytes) -> String {
        pin.withUnsafeBytes { needle in
            let bytes = Array(text.utf8)
            guard needle.count > 0, bytes.count >= needle.count else { return text }
            var out: [UInt8] = []
            var i = 0
            while i < bytes.count {
                if i + needle.count <= bytes.count, bytes[i..<(i + needle.count)].elementsEqual(needle) {
                    out += Array("REDACTED".utf8)
                    i += needle.count
                } else {
                    out.append(bytes[i])
                    i += 1
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// One OpenSSL error: its library and reason strings.
    private struct OpenSSLError {
        var library: String
        var reason: String
    }

    private static func drainErrors() -> [OpenSSLError] {
        var errors: [OpenSSLError] = []
        while case let code = ERR_get_error(), code != 0 {
            let library = ERR_lib_error_string(code).map { String(cString: $0) } ?? "lib \(Int32(truncatingIfNeeded: code >> 23))"
            let reason = ERR_reason_error_string(code).map { String(cString: $0) } ?? "reason \(code & 0x7FFFFF)"
            errors.append(OpenSSLError(library: library, reason: reason))
        }
        return errors
    }

    /// Loads a token key. Loading uses the engine (and the token's session) as signing does: alone in the
    /// process (`serialized`).
    static func loadKey(_ uri: PKCS11URI, allowPublic: Bool) throws -> P256Key {
        try serialized { try loadKeyAlone(uri, allowPublic: allowPublic) }
    }

    private static func loadKeyAlone(_ uri: PKCS11URI, allowPublic: Bool) throws -> P256Key {
        let module = try resolveModule(uri)
        let isPublic = uri.path("type") == "public"
        if let type = uri.path("type"), type != "private" && !(isPublic && allowPublic) {
            throw HealthCardError(.key, "PKCS#11 URI \(uri) names type=\(type); "
                + (isPublic ? "signing needs the private key (type=private)" : "expected type=private (or type=public to publish a key)"))
        }
        guard access(module.path, F_OK) == 0 else {
            throw HealthCardError(.key, "PKCS#11 module not found: \(module.path) (from \(module.origin)); "
                + "for SoftHSM2 install the Debian package softhsm2 (module /usr/lib/softhsm/libsofthsm2.so)")
        }
        try PKCS11Module.check(module.path, origin: module.origin)
        let found = try resolvePIN(uri)
        guard isPublic || found != nil else {
            throw HealthCardError(.key, "PKCS#11 URI \(uri) gives no PIN for \(uri.tokenDescription): add "
                + "pin-source=file:/path/to/pin-file (mode 0600) to the query, or set \(PKCS11PIN.environmentVariable)")
        }
        let pin = found ?? (pin: SecretBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0)), origin: "no PIN")
        // OpenSSL or libp11 text must never carry the PIN, even by accident.
        func scrub(_ text: String) -> String { Self.scrub(text, pin: pin.pin) }

        return try shared.withLock { state in
            if state.engine == nil {
                ERR_clear_error()
                guard let engine = COpenSSL_ENGINE_by_id("pkcs11") else {
                    let detail = scrub(openSSLErrorMessage())
                    throw HealthCardError(.key, "OpenSSL's pkcs11 engine is not available (install the Debian package "
                        + "libengine-pkcs11-openssl): \(detail)")
                }
                _ = COpenSSL_ENGINE_ctrl_cmd_string(engine, "QUIET", nil, 1)
                state.engine = engine
            }
            guard let engine = state.engine else {
                throw HealthCardError(.key, "OpenSSL's pkcs11 engine is not available")
            }
            if let bound = state.boundModule {
                guard sameFile(bound, module.path) else {
                    throw HealthCardError(.key, "this process already uses PKCS#11 module \(bound); OpenSSL's pkcs11 engine "
                        + "loads one module per process, so \(module.path) (from \(module.origin)) cannot be used as well")
                }
            } else {
                guard COpenSSL_ENGINE_ctrl_cmd_string(engine, "MODULE_PATH", module.path, 0) == 1 else {
                    throw HealthCardError(.key, "OpenSSL's pkcs11 engine refused module \(module.path): \(scrub(openSSLErrorMessage()))")
                }
            }
            if !state.initialized {
                guard COpenSSL_ENGINE_init(engine) == 1 else {
                    throw HealthCardError(.key, "OpenSSL's pkcs11 engine did not start: \(scrub(openSSLErrorMessage()))")
                }
                state.initialized = true
            }
            // libp11 keeps its own copy of the PIN (and wipes it when it is replaced or the engine ends).
            guard pin.pin.count == 0 || pin.pin.withCString({ COpenSSL_ENGINE_ctrl_cmd_string(engine, "PIN", $0, 0) }) == 1 else {
                ERR_clear_error()
                throw HealthCardError(.key, "OpenSSL's pkcs11 engine did not accept \(pin.origin)")
            }
            ERR_clear_error()
            let loaded = isPublic
                ? COpenSSL_ENGINE_load_public_key(engine, uri.engineURI) : COpenSSL_ENGINE_load_private_key(engine, uri.engineURI)
            guard let pkey = loaded else {
                let errors = drainErrors()
                let reasons = errors.map(\.reason)
                if reasons.contains("Unable to load PKCS#11 module") {
                    throw HealthCardError(.key, "cannot load PKCS#11 module \(module.path) (from \(module.origin)): "
                        + "not a PKCS#11 library, or one of its dependencies is missing")
                }
                state.boundModule = module.path
                if reasons.contains("PIN incorrect") {
                    throw HealthCardError(.key, "wrong PIN for PKCS#11 \(uri.tokenDescription) (\(pin.origin) was refused)")
                }
                if reasons.contains("PIN locked") {
                    throw HealthCardError(.key, "the user PIN of PKCS#11 \(uri.tokenDescription) is locked; unlock it with the SO PIN")
                }
                if reasons.contains("PIN len range") || reasons.contains("PIN invalid") {
                    throw HealthCardError(.key, "\(pin.origin) has the wrong length or characters for PKCS#11 \(uri.tokenDescription)")
                }
                if reasons.contains("object not found") {
                    throw notFound(uri, engine: engine, module: module.path)
                }
                let detail = scrub(errors.map { "\($0.library): \($0.reason)" }.joined(separator: "; "))
                throw HealthCardError(.key, "OpenSSL's pkcs11 engine could not load \(uri.objectDescription) from "
                    + "PKCS#11 \(uri.tokenDescription) (URI \(uri)): \(detail)")
            }
            state.boundModule = module.path
            return try p256Key(pkey, uri: uri, canSign: !isPublic)
        }
    }

    /// Tells "no such token" from "no such object on the token" by asking for any private key on the token.
    private static func notFound(_ uri: PKCS11URI, engine: OpaquePointer, module: String) -> HealthCardError {
        let listHint = "list them with `pkcs11-tool --module \(module) --list-token-slots`"
        guard let probe = uri.tokenOnlyEngineURI else {
            return HealthCardError(.key, "no private key matching \(uri.objectDescription) on any token of PKCS#11 module \(module)")
        }
        if let any = COpenSSL_ENGINE_load_private_key(engine, probe) {
            EVP_PKEY_free(any)
            return HealthCardError(.key, "PKCS#11 \(uri.tokenDescription) has no private key with \(uri.objectDescription); "
                + "list its keys with `pkcs11-tool --module \(module) --token-label LABEL --login --list-objects`")
        }
        ERR_clear_error()
        if let hint = PKCS11Module.tokenStoreHint(module) {
            return HealthCardError(.key, "PKCS#11 \(uri.tokenDescription) not found in module \(module): \(hint)")
        }
        return HealthCardError(.key, "PKCS#11 \(uri.tokenDescription) not found in module \(module) (or it holds no "
            + "private key, so \(uri.objectDescription) is not there either); \(listHint)")
    }

    /// Wraps an engine key as a `P256Key` after checking it is EC P-256.
    private static func p256Key(_ pkey: OpaquePointer, uri: PKCS11URI, canSign: Bool) throws -> P256Key {
        if let other = P256Key.notP256(pkey) {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            if other.isEC {
                throw HealthCardError(.key, "PKCS#11 \(uri.objectDescription) on \(uri.tokenDescription) is an EC key on "
                    + "\(other.found); ES256 needs P-256 (prime256v1)")
            }
            throw HealthCardError(.key, "PKCS#11 \(uri.objectDescription) on \(uri.tokenDescription) is \(other.found); "
                + "SMART Health Cards are signed ES256 with an EC P-256 key (pkcs11-tool --keypairgen --key-type EC:prime256v1)")
        }
        return try P256Key(taking: pkey, canSign: canSign)
    }

    /// True when both paths name the same file (same device and inode), or are equal strings.
    private static func sameFile(_ a: String, _ b: String) -> Bool {
        a == b || (FileIO.identity(a).map { $0 == FileIO.identity(b) } ?? false)
    }
}
