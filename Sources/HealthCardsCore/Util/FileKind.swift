#if canImport(Glibc)
    import Glibc
#endif

/// What a path names, for refusing an input that must be a regular file by saying what it is instead.
///
/// Opening a FIFO for reading waits for a writer, and a device (a terminal, `/dev/zero`) may never end:
/// a key, secret, template or input that is not a regular file would hang the command. Such paths are
/// refused before they are opened, and the file is opened with `O_NONBLOCK` and checked again with
/// `fstat` (`FileIO.openRegularFile`), so one swapped in between is refused too.
package enum FileKind: Equatable, Sendable {
    case regular
    case folder
    case fifo
    case socket
    case characterDevice
    case blockDevice
    /// Nothing at the path.
    case missing
    /// A symbolic link whose target does not exist (the target as the link says it).
    case danglingLink(String)
    /// A link loop, or a path that cannot be looked at (the system's reason).
    case unreadable(String)

    /// What `path` is, symbolic links followed (a dangling one is `danglingLink`).
    public static func of(_ path: String) -> FileKind {
        var st = stat()
        if stat(path, &st) == 0 { return kind(of: st.st_mode) }
        let reason = errno
        var link = stat()
        if lstat(path, &link) == 0, (link.st_mode & S_IFMT) == S_IFLNK, reason == ENOENT {
            return .danglingLink(FileIO.linkTarget(path) ?? "?")
        }
        return reason == ENOENT || reason == ENOTDIR ? .missing : .unreadable(String(cString: strerror(reason)))
    }

    /// The kind named by `st_mode`'s type bits.
    static func kind(of mode: mode_t) -> FileKind {
        switch mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .folder
        case S_IFIFO: return .fifo
        case S_IFSOCK: return .socket
        case S_IFCHR: return .characterDevice
        case S_IFBLK: return .blockDevice
        default: return .unreadable("an unknown kind of file")
        }
    }

    /// True for the kinds a folder walk skips without reading: FIFOs, sockets and devices.
    public var isSpecial: Bool {
        switch self {
        case .fifo, .socket, .characterDevice, .blockDevice: return true
        default: return false
        }
    }

    /// `is a FIFO (named pipe)`, `does not exist`, `is a symbolic link to X, which does not exist`: what
    /// follows a path in a message.
    public var phrase: String {
        switch self {
        case .regular: return "is a regular file"
        case .folder: return "is a folder"
        case .fifo: return "is a FIFO (named pipe)"
        case .socket: return "is a socket"
        case .characterDevice: return "is a character device"
        case .blockDevice: return "is a block device"
        case .missing: return "does not exist"
        case .danglingLink(let target): return "is a symbolic link to \(target), which does not exist"
        case .unreadable(let reason): return "cannot be looked at (\(reason))"
        }
    }
}

extension FileIO {
    /// The text of a symbolic link (where it points, as written), or nil when `path` is not one.
    package static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The absolute path with every symbolic link resolved (`realpath(3)`), or nil when it cannot be resolved.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Refuses any `path` that is not a regular file (symbolic links followed), saying what it is.
    /// - Parameters:
    ///   - role: what the file is to the command, first in the message (`input`, `--template`, `revocation secret`).
    ///   - kind: the error's kind (`.configuration` for a command-line argument: exit status 2).
    ///   - allowFolder: a folder is left for the caller to refuse with its own advice.
    ///   - fix: what to do, after the finding (default: give the file itself).
    /// - Throws: `HealthCardError(kind)`: "`role` `path` is a FIFO (named pipe), not a regular file; give the file itself".
    public static func requireRegularFile(
        _ path: String, role: String, kind: HealthCardError.Kind = .configuration, allowFolder: Bool = false,
        fix: String = "give the file itself"
    ) throws {
        let found = FileKind.of(path)
        if found == .regular || (allowFolder && found == .folder) { return }
        let name = role.isEmpty ? path : "\(role) \(path)"
        switch found {
        case .missing, .danglingLink, .unreadable:
            throw HealthCardError(kind, "\(name) \(found.phrase); \(fix)")
        default:
            throw HealthCardError(kind, "\(name) \(found.phrase), not a regular file; \(fix)")
        }
    }

    /// Opens a regular file for reading without ever waiting: `O_NONBLOCK` (a FIFO opens at once instead
    /// of waiting for a writer, and a special file that honours it returns `EAGAIN` instead of blocking),
    /// then `fstat` on the descriptor refuses anything but a regular file, whatever the path named when it
    /// was looked at. The caller closes the descriptor.
    /// - Throws: `HealthCardError(kind)` naming the file and what it is, or the system's reason.
    public static func openRegularFile(_ path: String, kind: HealthCardError.Kind = .io) throws -> Int32 {
        let found = FileKind.of(path)
        guard found == .regular else {
            let suffix = found.isSpecial || found == .folder ? ", not a regular file" : ""
            throw HealthCardError(kind, "cannot read \(path): it \(found.phrase)\(suffix)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw HealthCardError(kind, "cannot read \(path): \(String(cString: strerror(errno)))") }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw HealthCardError(
                kind, "cannot read \(path): it \(FileKind.kind(of: st.st_mode).phrase), not a regular file")
        }
        return fd
    }
}
