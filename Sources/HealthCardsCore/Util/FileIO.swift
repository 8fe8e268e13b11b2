#if canImport(Glibc)
    import Glibc
#endif

/// File reading and atomic writing with POSIX calls.
package enum FileIO {
    /// Reads a whole regular file of at most `maxBytes` bytes. Anything else (a FIFO, a device, a socket,
    /// a folder) is refused before it is opened, never waited on (`openRegularFile`).
    ///
    /// The size is checked before anything is read (`fstat`), and reading stops after `maxBytes + 1`
    /// bytes whatever `fstat` said (a file that grows), so no input costs more memory than its
    /// budget (`InputBudget`). The buffer is sized once.
    /// - Parameter maxBytes: the most this kind of file may hold (`InputBudget.defaultFileBytes` when not said).
    /// - Throws: `HealthCardError(.io)` naming the file and what it is, or the system's reason;
    ///   `HealthCardError(.input)` when the file holds more than `maxBytes` bytes, naming both sizes.
    public static func read(_ path: String, maxBytes: Int = InputBudget.defaultFileBytes) throws -> [UInt8] {
        let fd = try openRegularFile(path)
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
            let n = chunk.withUnsafeMutableBytes { OS.read(fd, $0.baseAddress, $0.count) }
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
            if n == 0 { break }
            guard out.count + n <= maxBytes else { throw tooLarge(path, size: nil, maxBytes: maxBytes) }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// Reads a regular file of any size in chunks of at most 64 KiB, handing each to `body` in order (memory stays
    /// at one chunk). A FIFO, device, socket or folder is refused before it is opened (`openRegularFile`).
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason; whatever `body` throws.
    package static func forEachChunk(_ path: String, _ body: ([UInt8]) throws -> Void) throws {
        let fd = try openRegularFile(path)
        defer { close(fd) }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { OS.read(fd, $0.baseAddress, $0.count) }
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
            if n == 0 { break }
            try body(Array(chunk[0..<n]))
        }
    }

    /// The first `count` bytes of a file (fewer when it is shorter), for telling what kind of file it is.
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason.
    public static func readPrefix(_ path: String, count: Int) throws -> [UInt8] {
        let fd = try openRegularFile(path)
        defer { close(fd) }
        var out = [UInt8](repeating: 0, count: max(0, count))
        var filled = 0
        while filled < out.count {
            let n = out.withUnsafeMutableBytes { OS.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            guard n >= 0 else { throw HealthCardError(.io, "cannot read \(path): \(OS.errorText())") }
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
    /// Atomic replacement is for regular files only (`OutputTarget`): a FIFO or character device is
    /// written directly (a FIFO nothing reads is an error, never waited on), a symbolic link is followed (its target replaced, the link kept; to this
    /// process's standard output, written there), a folder, socket or block device is refused.
    /// With `links: .refuse` (a record's file inside an output folder) a symbolic link at `path` is refused instead,
    /// nothing written. Missing parent folders are created with `access.folderMode`.
    /// The temporary file is named `.<name>.tmp-<pid>-<random>`; `removeStaleTemporaries` clears
    /// those a killed process left behind.
    /// - Parameters:
    ///   - access: permission bits of the new file and of folders created, set whatever the umask.
    ///     The default is `.ownerOnly` (0600, 0700): health data and secrets; published web content
    ///     passes `.published`.
    ///   - sync: flush the file to disk before the rename (`fsync`). A batch passes false and calls
    ///     `syncFileSystem` once at the end: after a power loss such a file may be empty, never a
    ///     mix of old and new, and a resumed batch checks every card it finds.
    ///   - links: `.follow` (the default) or `.refuse` a symbolic link found at `path` (`OutputLinkRule`).
    /// - Throws: `HealthCardError(.io)` naming the file and the system's reason (e.g. no space left); with
    ///   `code: .outputSymlink` for a link refused.
    public static func writeAtomically(
        _ bytes: [UInt8], to path: String, access: OutputAccess = .ownerOnly, sync: Bool = true,
        links: OutputLinkRule = .follow
    ) throws {
        let target: String
        switch try OutputTarget.resolve(path, links: links) {
        case .file(let file): target = file
        case .descriptor(let fd):
            if let reason = writeAll(bytes, to: fd) { throw HealthCardError(.io, "cannot write \(path): \(reason)") }
            return
        case .stream(let stream):
            // A FIFO left at a card's or a link's path once hung `issue`, which then could not be stopped but by
            // SIGKILL: `openStream` never waits for a reader.
            let fd = try OutputTarget.openStream(stream, shownAs: path)
            defer { close(fd) }
            if let reason = writeAll(bytes, to: fd) { throw HealthCardError(.io, "cannot write \(path): \(reason)") }
            return
        }
        let folder = parent(of: target)
        if !isDirectory(folder) { try createDirectories(folder, mode: access.folderMode) }
        let temp = temporaryName(for: target)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, access.fileMode)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot write \(path): \(OS.errorText())") }
        var failure = writeAll(bytes, to: fd)
        if failure == nil, fchmod(fd, access.fileMode) != 0 || (sync && fsync(fd) != 0) {
            failure = OS.errorText()
        }
        close(fd)
        if let failure {
            unlink(temp)
            throw HealthCardError(.io, "cannot write \(path): \(failure)")
        }
        guard rename(temp, target) == 0 else {
            let reason = OS.errorText()
            unlink(temp)
            throw HealthCardError(.io, "cannot move the new \(path) into place: \(reason)")
        }
    }

    /// A fresh temporary name beside `path`: `.<name>.tmp-<pid>-<random>`.
    package static func temporaryName(for path: String) -> String {
        "\(parent(of: path))/.\(basename(path)).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Removes the temporary files (`.<name>.tmp-<pid>-<random>`) in `folder` that a process no
    /// longer running left behind (killed, power loss). Files of a live process are kept.
    /// - Parameter file: only the temporaries of this file name (`.<file>.tmp-…`), for a folder that is not
    ///   the toolkit's own (the folder of a combined PDF); nil for every one.
    /// - Returns: the names removed.
    @discardableResult
    public static func removeStaleTemporaries(in folder: String, of file: String? = nil) -> [String] {
        var removed: [String] = []
        for name in list(folder) where name.hasPrefix(file.map { ".\($0).tmp-" } ?? ".") {
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
        guard fd >= 0 else { throw HealthCardError(.io, "cannot open \(path) to flush it: \(OS.errorText())") }
        defer { close(fd) }
        guard c_syncfs(fd) == 0, fsync(fd) == 0 else {
            throw HealthCardError(.io, "flushing \(path) to disk failed: \(OS.errorText())")
        }
    }

    /// Makes sure files can be created in `folder` (creating it if missing): it is a folder, and a
    /// probe file can be created and removed in it.
    /// - Throws: `HealthCardError(.io)` naming the folder and the reason.
    public static func checkWritableFolder(_ folder: String, mode: mode_t = OutputAccess.ownerOnly.folderMode) throws {
        try createDirectories(folder, mode: mode)
        guard isDirectory(folder) else {
            throw HealthCardError(.io, "cannot write in \(folder): it exists and is not a folder; remove it or choose another output folder")
        }
        let probe = temporaryName(for: "\(folder)/.probe")
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw HealthCardError(.io, "cannot write in \(folder): \(OS.errorText()); choose an output folder you can write to")
        }
        close(fd)
        unlink(probe)
    }

    /// Creates `path` and its missing parents (like `mkdir -p`). Each folder created gets `mode`
    /// (set with `chmod`, so the umask does not widen or narrow it); existing folders are left as they are.
    /// - Parameter mode: 0700 by default: folders of health data are private to their owner.
    public static func createDirectories(_ path: String, mode: mode_t = OutputAccess.ownerOnly.folderMode) throws {
        if path.isEmpty || isDirectory(path) { return }
        try createDirectories(parent(of: path), mode: mode)
        if mkdir(path, mode) != 0 {
            guard errno == EEXIST else {
                throw HealthCardError(.io, "cannot create folder \(path): \(OS.errorText())")
            }
            return
        }
        chmod(path, mode)
    }

    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// True when `path` is (or links to) a regular file.
    public static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
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

    /// The same for an open file: "device:inode" of `fd`, or nil if it cannot be stat'ed.
    public static func identity(fd: Int32) -> String? {
        var st = stat()
        return fstat(fd, &st) == 0 ? "\(st.st_dev):\(st.st_ino)" : nil
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
        // The byte '/', as the kernel splits a path (a Character search would also skip a '/' that a
        // combining mark follows, and costs a grapheme break test per character).
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == bytes.startIndex { return "/" }
        return String(path[..<slash])
    }

    public static func basename(_ path: String) -> String {
        let bytes = path.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[bytes.index(after: slash)...])
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
