#if canImport(Glibc)
    import Glibc
#endif

/// File reading and atomic writing with POSIX calls.
public enum FileIO {
    /// Reads a whole file of at most `maxBytes` bytes.
    ///
    /// The size is checked before anything is read (`fstat`), and reading stops after `maxBytes + 1`
    /// bytes whatever `fstat` said (a FIFO, a file that grows), so no input costs more memory than its
    /// budget (`InputBudget`). The buffer is sized once for a regular file.
    /// - Parameter maxBytes: the most this kind of file may hold (`InputBudget.defaultFileBytes` when not said).
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason; `HealthCardError(.input)`
    ///   when the file holds more than `maxBytes` bytes, naming both sizes.
    public static func read(_ path: String, maxBytes: Int = InputBudget.defaultFileBytes) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        var expected = 0
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG {
            guard st.st_size <= maxBytes else { throw tooLarge(path, size: Int(st.st_size), maxBytes: maxBytes) }
            expected = Int(st.st_size)
        }
        var out: [UInt8] = []
        out.reserveCapacity(expected + 1)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            guard out.count + n <= maxBytes else { throw tooLarge(path, size: nil, maxBytes: maxBytes) }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// The first `count` bytes of a file (fewer when it is shorter), for telling what kind of file it is.
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason.
    public static func readPrefix(_ path: String, count: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: max(0, count))
        var filled = 0
        while filled < out.count {
            let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            filled += n
        }
        out.removeLast(out.count - filled)
        return out
    }

    /// The error for a file over its budget.
    static func tooLarge(_ path: String, size: Int?, maxBytes: Int) -> HealthCardError {
        let found = size.map { "\(InputBudget.describe(bytes: $0)) (\($0) bytes)" } ?? "more than that"
        return HealthCardError(.input, "\(path) is too large: it holds \(found), and this kind of file may hold at most "
            + "\(InputBudget.describe(bytes: maxBytes)) (\(maxBytes) bytes; see docs/verify.md, \"Budgets\"). Check that it is the right file")
    }

    /// Writes `bytes` to `path` atomically: to a temporary file in the same folder, flushed to disk,
    /// then renamed into place, so a reader sees the old file or the new one, never a part.
    /// Missing parent folders are created (mode 0755).
    /// The temporary file is named `.<name>.tmp-<pid>-<random>`; `removeStaleTemporaries` clears
    /// those a killed process left behind.
    /// - Parameters:
    ///   - mode: permission bits of the new file (0644, or 0600 for private keys).
    ///   - sync: flush the file to disk before the rename (`fsync`). A batch passes false and calls
    ///     `syncFileSystem` once at the end: after a power loss such a file may be empty, never a
    ///     mix of old and new, and a resumed batch checks every card it finds.
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason (e.g. no space left).
    public static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644, sync: Bool = true) throws {
        if isDirectory(path) {
            throw HealthCardError(.io, "cannot write \(path): it is a folder; give the path of a file to write")
        }
        let folder = parent(of: path)
        if !isDirectory(folder) { try createDirectories(folder) }
        let temp = temporaryName(for: path)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot write \(path): \(String(cString: strerror(errno)))") }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(temp)
                throw HealthCardError(.io, "cannot write \(path): \(reason)")
            }
            written += n
        }
        if fchmod(fd, mode) != 0 || (sync && fsync(fd) != 0) {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(temp)
            throw HealthCardError(.io, "cannot write \(path): \(reason)")
        }
        close(fd)
        guard rename(temp, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw HealthCardError(.io, "cannot move the new \(path) into place: \(reason)")
        }
    }

    /// A fresh temporary name beside `path`: `.<name>.tmp-<pid>-<random>`.
    static func temporaryName(for path: String) -> String {
        "\(parent(of: path))/.\(basename(path)).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Removes the temporary files (`.<name>.tmp-<pid>-<random>`) in `folder` that a process no
    /// longer running left behind (killed, power loss). Files of a live process are kept.
    /// - Returns: the names removed.
    @discardableResult
    public static func removeStaleTemporaries(in folder: String) -> [String] {
        var removed: [String] = []
        for name in list(folder) where name.hasPrefix(".") {
            let parts = name.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count >= 3, parts[parts.count - 3].hasSuffix(".tmp"), let pid = Int32(parts[parts.count - 2]),
                UInt32(parts[parts.count - 1]) != nil
            else { continue }
            if pid == getpid() || (kill(pid, 0) == 0 || errno == EPERM) { continue }
            if unlink("\(folder)/\(name)") == 0 { removed.append(name) }
        }
        return removed
    }

    /// Flushes the file system holding `path` to disk (`syncfs(2)`), then syncs the folder itself
    /// so renames in it are durable.
    /// - Throws: `HealthCardError(.io)` when the flush fails (e.g. a write error the disk reported late).
    public static func syncFileSystem(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot open \(path) to flush it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard c_syncfs(fd) == 0, fsync(fd) == 0 else {
            throw HealthCardError(.io, "flushing \(path) to disk failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Makes sure files can be created in `folder` (creating it if missing): it is a folder, and a
    /// probe file can be created and removed in it.
    /// - Throws: `HealthCardError(.io)` naming the folder and the reason.
    public static func checkWritableFolder(_ folder: String) throws {
        try createDirectories(folder)
        guard isDirectory(folder) else {
            throw HealthCardError(.io, "cannot write in \(folder): it exists and is not a folder; remove it or choose another --out")
        }
        let probe = temporaryName(for: "\(folder)/.probe")
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw HealthCardError(.io, "cannot write in \(folder): \(String(cString: strerror(errno))); choose a folder you can write to (--out)")
        }
        close(fd)
        unlink(probe)
    }

    /// Creates `path` and its missing parents (like `mkdir -p`).
    public static func createDirectories(_ path: String) throws {
        if path.isEmpty || isDirectory(path) { return }
        try createDirectories(parent(of: path))
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw HealthCardError(.io, "cannot create folder \(path): \(String(cString: strerror(errno)))")
        }
    }

    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The file's device and inode (`dev:ino`), the same for every name of one file (symlinks
    /// followed, hard links included); nil if it cannot be stat'ed.
    public static func identity(_ path: String) -> String? {
        var st = stat()
        return stat(path, &st) == 0 ? "\(st.st_dev):\(st.st_ino)" : nil
    }

    /// Size of a file in bytes, or nil if it cannot be stat'ed.
    public static func size(_ path: String) -> Int? {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    /// Permission bits of a file, or nil if it cannot be stat'ed.
    public static func mode(_ path: String) -> mode_t? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mode & 0o7777 : nil
    }

    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    public static func basename(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// The file name without folder and without its last extension.
    public static func stem(_ path: String) -> String {
        let name = basename(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// Files in a folder (names only), sorted; empty when it cannot be read.
    public static func list(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        // A dirent is only as long as its name: reading `entry.pointee.d_name` would copy all 256 bytes of
        // the field, past the end of the last record in glibc's buffer. Read the name where it is, up to its NUL.
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        while let entry = readdir(dir) {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}

/// glibc's `syncfs(2)`, declared by hand: Swift's Glibc module hides it behind `_GNU_SOURCE`.
@_silgen_name("syncfs") private func c_syncfs(_ fd: Int32) -> Int32
