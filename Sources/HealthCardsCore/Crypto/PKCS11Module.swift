#if canImport(Glibc)
    import Glibc
#endif

/// Checks of a PKCS#11 module before OpenSSL's engine loads it, so the common mistakes get a message
/// that names their cause instead of the engine's "unable to load module" or "object not found".
enum PKCS11Module {
    /// Refuses a file that is not a loadable PKCS#11 library (every module exports `C_GetFunctionList`),
    /// and a SoftHSM2 module whose `SOFTHSM2_CONF` names a missing file.
    /// - Throws: `HealthCardError(.key)` naming the module, where it came from and the cause.
    static func check(_ path: String, origin: String) throws {
        if FileIO.isDirectory(path) {
            throw HealthCardError(
                .key, "PKCS#11 module \(path) (from \(origin)) is a folder; give the module's .so file")
        }
        // dlopen would wait on a FIFO like any open(2): a path (not a bare library name) must be a file.
        let kind = FileKind.of(path)
        if path.contains("/"), kind.isSpecial {
            throw HealthCardError(
                .key, "PKCS#11 module \(path) (from \(origin)) \(kind.phrase), not a regular file; give the module's .so file")
        }
        guard let handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            throw HealthCardError(
                .key,
                "cannot load PKCS#11 module \(path) (from \(origin)): \(reason). Give the module's shared "
                    + "library (SoftHSM2: /usr/lib/softhsm/libsofthsm2.so; OpenSC: /usr/lib/x86_64-linux-gnu/opensc-pkcs11.so)"
            )
        }
        defer { dlclose(handle) }
        guard dlsym(handle, "C_GetFunctionList") != nil else {
            throw HealthCardError(
                .key,
                "\(path) (from \(origin)) is a shared library but not a PKCS#11 module: it has no "
                    + "C_GetFunctionList. Give the token's PKCS#11 module (SoftHSM2: /usr/lib/softhsm/libsofthsm2.so)")
        }
        if isSoftHSM(path), let conf = getenv("SOFTHSM2_CONF").map({ String(cString: $0) }), !FileIO.exists(conf) {
            throw HealthCardError(
                .key,
                "SOFTHSM2_CONF is \(conf), which does not exist, so SoftHSM2 cannot find its tokens. Set "
                    + "SOFTHSM2_CONF to the softhsm2.conf of the token store (scripts/softhsm-setup.sh prints it)")
        }
    }

    /// Why a SoftHSM2 token may not be found: SoftHSM2 reads its token folder from `SOFTHSM2_CONF`, and
    /// without it from `/etc/softhsm/softhsm2.conf`. Nil for other modules, or when `SOFTHSM2_CONF` is set.
    static func tokenStoreHint(_ path: String) -> String? {
        guard isSoftHSM(path), getenv("SOFTHSM2_CONF") == nil else { return nil }
        return "SOFTHSM2_CONF is not set, so SoftHSM2 looked in the token store of /etc/softhsm/softhsm2.conf. "
            + "Set SOFTHSM2_CONF to the softhsm2.conf of the store that holds the token (scripts/softhsm-setup.sh "
            + "prints it), e.g. export SOFTHSM2_CONF=$HOME/softhsm/softhsm2.conf"
    }

    static func isSoftHSM(_ path: String) -> Bool { FileIO.basename(path).lowercased().contains("softhsm") }
}
