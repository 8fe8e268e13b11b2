internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// The bytes of a secret — a private key file, a PKCS#11 PIN, the revocation secret — in one buffer of
/// fixed size that Swift never copies (no `String`, no `Array` that grows and leaves old copies in freed
/// memory), allocated in OpenSSL's secure heap when it could be made (`SecureHeap`: locked in memory,
/// never swapped, never in a core dump; a program starts it with `ProcessProtection.protectSecrets()`, the
/// library never does by itself) and wiped with `OPENSSL_cleanse` when the value goes away.
///
/// Immutable once made, so it may be shared between threads.
public final class SecretBytes: @unchecked Sendable {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private let secure: Bool
    /// Bytes held.
    public let count: Int

    /// A zeroed buffer of `capacity` bytes of which the first `count` are the secret.
    private init(capacity: Int, count: Int) {
        let size = max(1, capacity)
        if CRYPTO_secure_malloc_initialized() == 1, let pointer = CRYPTO_secure_zalloc(size, #fileID, #line) {
            base = pointer
            secure = true
        } else {
            base = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            base.initializeMemory(as: UInt8.self, repeating: 0, count: size)
            secure = false
        }
        self.capacity = size
        self.count = count
    }

    /// A copy of `bytes` (the caller wipes its own).
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(capacity: bytes.count, count: bytes.count)
        if let source = bytes.baseAddress { base.copyMemory(from: source, byteCount: bytes.count) }
    }

    deinit {
        OPENSSL_cleanse(base, capacity)
        if secure { CRYPTO_secure_free(base, #fileID, #line) } else { base.deallocate() }
    }

    /// Lends the bytes to `body`; the pointer must not be kept beyond it.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Lends the bytes followed by a NUL, for C functions that take a C string.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        let copy = SecretBytes(capacity: count + 1, count: count)
        copy.base.copyMemory(from: base, byteCount: count)
        return try body(copy.base.assumingMemoryBound(to: CChar.self))
    }

    /// The bytes from `start` for `length` bytes, in a new secret buffer.
    func slice(_ start: Int, _ length: Int) -> SecretBytes {
        let start = max(0, min(start, count))
        let length = max(0, min(length, count - start))
        let copy = SecretBytes(capacity: length, count: length)
        copy.base.copyMemory(from: base + start, byteCount: length)
        return copy
    }

    /// Without leading and trailing spaces, tabs, CRs and LFs.
    func trimmingWhitespace() -> SecretBytes {
        withUnsafeBytes { bytes in
            func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
            let first = bytes.firstIndex { !isSpace($0) } ?? bytes.count
            let last = bytes.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? first
            return slice(first, last - first)
        }
    }

    /// Without one final LF (or CRLF).
    package func trimmingFinalNewline() -> SecretBytes {
        withUnsafeBytes { bytes in
            var end = bytes.count
            if end > 0 && bytes[end - 1] == 0x0A {
                end -= 1
                if end > 0 && bytes[end - 1] == 0x0D { end -= 1 }
            }
            return slice(0, end)
        }
    }

    /// `self` followed by `suffix` (not secret), in a new secret buffer.
    func appending(_ suffix: some Collection<UInt8>) -> SecretBytes {
        let copy = SecretBytes(capacity: count + suffix.count, count: count + suffix.count)
        copy.base.copyMemory(from: base, byteCount: count)
        (copy.base + count).copyMemory(from: Array(suffix), byteCount: suffix.count)
        return copy
    }

    /// Reads a whole file of at most `maxBytes` into a secret buffer, sized once from `fstat` (one byte
    /// more, so a file that grows is noticed), so no copy of the secret is left anywhere else.
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason, or when it holds more than
    ///   its size said; `HealthCardError(.input)` for a file over `maxBytes`. Messages never hold the content.
    public static func read(path: String, maxBytes: Int = InputBudget.secretFileBytes) throws -> SecretBytes {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
        defer { close(fd) }
        var st = stat()
        var room = maxBytes
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
            guard st.st_size <= maxBytes else { throw FileIO.tooLarge(path, size: Int(st.st_size), maxBytes: maxBytes) }
            room = Int(st.st_size)
        }
        let buffer = SecretBytes(capacity: room + 1, count: room + 1)
        var filled = 0
        while filled < buffer.capacity {
            let n = OS.read(fd, buffer.base + filled, buffer.capacity - filled)
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
            if n == 0 { break }
            filled += n
        }
        guard filled <= maxBytes else { throw FileIO.tooLarge(path, size: nil, maxBytes: maxBytes) }
        guard filled <= room else {
            // The buffer was sized from fstat: the file holds more than its size said (it grew while it was read,
            // or it is a kernel file whose size says 0). Its budget was not what stopped it.
            throw HealthCardError(
                .io,
                "\(path) holds more than the \(room) bytes its size said when it was opened: it changed while it was "
                    + "read, or it is not an ordinary file. Read it from a file that nothing is writing")
        }
        return buffer.slice(0, filled)
    }
}

/// OpenSSL's secure heap (`CRYPTO_secure_malloc_init`): memory locked with `mlock`, kept out of core
/// dumps (`MADV_DONTDUMP`) and guarded by inaccessible pages. Once it is started, OpenSSL keeps private
/// keys' scalars there (it allocates them with `BN_secure_new`), and `SecretBytes` uses it too.
package enum SecureHeap {
    /// Its size: 64 KiB, room for a few keys and secrets (`SecretBytes` falls back to ordinary,
    /// wiped memory when it is full).
    static let size = 1 << 16

    private static let started: Bool = CRYPTO_secure_malloc_init(size, 32) != 0

    /// Starts the secure heap, once per process, before a private key is loaded or made; true when it
    /// is there. Where the platform refuses (no `mmap`, `mlock` limits), keys live in ordinary memory.
    /// Called only by `ProcessProtection.protectSecrets()`: starting it is a process-wide act, which the
    /// program chooses, never a side effect of loading a key.
    @discardableResult
    public static func start() -> Bool { started }
}

extension Array where Element == UInt8 {
    /// Overwrites the bytes with zeros (`OPENSSL_cleanse`, which the compiler cannot leave out), for an
    /// array that held a secret. The array must be its buffer's only owner.
    package mutating func wipe() {
        withUnsafeMutableBytes { bytes in
            if let base = bytes.baseAddress { OPENSSL_cleanse(base, bytes.count) }
        }
    }
}
