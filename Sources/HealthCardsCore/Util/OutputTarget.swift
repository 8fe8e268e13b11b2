#if canImport(Glibc)
    import Glibc
#endif

/// Who may read what a command writes.
///
/// Cards, QR images, PDFs, links and reports are health data: by default only the owner can read them
/// (files 0600, folders 0700), whatever the umask. A hand-off folder that a group (or everyone) must
/// read is opted into (`issue --share group|world`). Published web content (the key set, CRLs, host
/// rules) is `published`: a web server must read it.
public struct OutputAccess: Sendable, Equatable {
    /// Permission bits of files written, e.g. 0o600 (set with `fchmod`, so the umask does not change them).
    public var fileMode: UInt32
    /// Permission bits of folders created, e.g. 0o700 (set with `chmod` after `mkdir`).
    public var folderMode: UInt32

    public init(fileMode: UInt32, folderMode: UInt32) {
        self.fileMode = fileMode
        self.folderMode = folderMode
    }

    /// 0600 / 0700: the owner only. The default for everything that holds health data or secrets.
    public static let ownerOnly = OutputAccess(fileMode: 0o600, folderMode: 0o700)
    /// 0640 / 0750: the owner and the file's group can read.
    public static let group = OutputAccess(fileMode: 0o640, folderMode: 0o750)
    /// 0644 / 0755: everyone on the machine can read.
    public static let world = OutputAccess(fileMode: 0o644, folderMode: 0o755)
    /// What a web server publishes (key set, CRLs, header rules): readable by everyone.
    public static let published = world

    /// `--share` values: `group`, `world`.
    /// - Throws: `HealthCardError(.configuration)` for any other word.
    public init(share: String) throws {
        switch share {
        case "group": self = .group
        case "world": self = .world
        default:
            throw HealthCardError(
                .configuration,
                "share \(Quote.text(share)) is not known; expected group (files 0640, folders 0750) or world (0644, 0755). "
                    + "Leave it out to keep the output private (0600, 0700)"
            ).about("share")
        }
    }
}

/// What a writer does with a symbolic link found at the path it writes (`FileIO.writeAtomically`).
public enum OutputLinkRule: Sendable, Equatable {
    /// Follow it (`OutputTarget`): an output the operator names on the command line (`--pdf-combined FILE`,
    /// `--rejected FILE`, a key set's `--out`), where a link is theirs to give.
    case follow
    /// Refuse it (`HealthCardError(.io, code: .outputSymlink)`), writing nothing: a record's file inside an output
    /// folder (a card, its QR images, its PDF, its link text), a path the run names itself, so a link found there
    /// was made by someone else and following it would replace (and chmod) a file the run did not create.
    case refuse
}

/// What an output path names, decided before anything is written (`FileIO.writeAtomically`).
///
/// Atomic replacement (a temporary file renamed into place) is right only for regular files: renaming
/// over `/dev/stdout` replaces the system's link with a file. So:
/// - a missing path or a regular file is replaced atomically;
/// - a FIFO or a character device (a terminal, `/dev/null`) is written directly;
/// - a symbolic link is followed: to this process's standard output or error (`/dev/stdout`,
///   `/proc/self/fd/1`) it writes to that descriptor; to a FIFO or device, directly; to a regular
///   file (or a missing one in an existing folder), the target is replaced atomically and the link
///   kept;
/// - a folder, a socket, a block device, a link to a folder, or a link loop is refused;
/// - with `OutputLinkRule.refuse` (a record's own file inside an output folder), any symbolic link is refused
///   (`RuleCode.outputSymlink`), never followed.
///
/// Every writer of an output path goes through it: `FileIO.writeAtomically` for whole files, and the writers
/// that stream a file as they go (`StreamedFile`: the combined PDF of a run, the merged report of shards).
package enum OutputTarget: Equatable {
    /// Replace (or create) this regular file atomically.
    case file(String)
    /// Open this path (a FIFO or character device) and write to it.
    case stream(String)
    /// Write to this already open descriptor (1 or 2).
    case descriptor(Int32)

    /// - Parameter links: what a symbolic link at `path` gets: followed (an output the operator names), or refused
    ///   (a record's file inside an output folder, `OutputLinkRule.refuse`).
    /// - Throws: `HealthCardError(.io)` saying what `path` is and what is expected; with `code: .outputSymlink` for a
    ///   link that `links` refuses.
    package static func resolve(_ path: String, links: OutputLinkRule = .follow) throws -> OutputTarget {
        var st = stat()
        guard lstat(path, &st) == 0 else {
            if errno == ENOENT { return .file(path) }
            throw HealthCardError(.io, "cannot write \(path): \(OS.errorText())")
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG: return .file(path)
        case S_IFIFO, S_IFCHR: return .stream(path)
        case S_IFLNK:
            if links == .refuse { throw linkRefusal(path) }
            return try followLink(path)
        default: throw refusal(path, st.st_mode, link: false)
        }
    }

    /// The refusal of a symbolic link found at a record's output path (`OutputLinkRule.refuse`), naming the path and
    /// where the link points; nil when `path` is not a symbolic link.
    package static func linkedOutput(_ path: String) -> HealthCardError? {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFLNK else { return nil }
        return linkRefusal(path)
    }

    private static func linkRefusal(_ path: String) -> HealthCardError {
        let target = FileIO.linkTarget(path).map { " to \($0)" } ?? ""
        return HealthCardError(
            .io, code: .outputSymlink,
            "cannot write \(path): it is a symbolic link\(target), which this run did not make. A record's file in the "
                + "output folder is never written through a link (that would replace, and make private, the file it "
                + "points to); nothing was written there. Remove the link (or move it away) and run again")
    }

    /// Opens a `.stream` target (a FIFO or a character device) for writing, in place: without waiting for a
    /// FIFO's reader (a FIFO nothing reads would make open(2) wait forever), then blocking again to write.
    /// - Parameter path: the path given, for messages.
    /// - Returns: the open descriptor (the caller closes it).
    /// - Throws: `HealthCardError(.io)` when it cannot be opened, saying so for a FIFO without a reader.
    package static func openStream(_ stream: String, shownAs path: String) throws -> Int32 {
        let fd = open(stream, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = errno
            if reason == ENXIO {
                throw HealthCardError(
                    .io, "cannot write \(path): it is a FIFO (named pipe) and nothing is reading it; expected a file "
                        + "or a FIFO with a reader. Remove it (the file is then written in its place) or start its reader")
            }
            throw HealthCardError(.io, "cannot write \(path): \(OS.errorText(reason))")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    private static func followLink(_ path: String) throws -> OutputTarget {
        var target = stat()
        guard stat(path, &target) == 0 else {
            guard errno == ENOENT else {
                throw HealthCardError(
                    .io,
                    "cannot write \(path): it is a symbolic link that cannot be followed "
                        + "(\(OS.errorText())); give the path of a file")
            }
            return .file(try danglingTarget(path))
        }
        for fd: Int32 in [1, 2] {
            var open = stat()
            if fstat(fd, &open) == 0, open.st_dev == target.st_dev, open.st_ino == target.st_ino {
                return .descriptor(fd)
            }
        }
        switch target.st_mode & S_IFMT {
        case S_IFIFO, S_IFCHR: return .stream(path)
        case S_IFREG:
            guard let resolved = realpath(path, nil) else {
                throw HealthCardError(
                    .io,
                    "cannot write \(path): the file its link points to cannot be named "
                        + "(\(OS.errorText()))")
            }
            defer { free(resolved) }
            return .file(String(cString: resolved))
        default: throw refusal(path, target.st_mode, link: true)
        }
    }

    /// The path a chain of links ends at when the last one points to nothing yet.
    private static func danglingTarget(_ path: String) throws -> String {
        var current = path
        for _ in 0..<40 {
            var st = stat()
            guard lstat(current, &st) == 0 else { break }
            guard st.st_mode & S_IFMT == S_IFLNK else { break }
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink(current, &buffer, buffer.count - 1)
            guard n > 0 else { break }
            let text = String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = text.hasPrefix("/") ? text : FileIO.parent(of: current) + "/" + text
        }
        guard FileIO.isDirectory(FileIO.parent(of: current)) else {
            throw HealthCardError(
                .io, "cannot write \(path): it is a symbolic link to \(current), whose folder does not exist")
        }
        return current
    }

    private static func refusal(_ path: String, _ mode: mode_t, link: Bool) -> HealthCardError {
        let what: String
        switch mode & S_IFMT {
        case S_IFDIR: what = "a folder"
        case S_IFSOCK: what = "a socket"
        case S_IFBLK: what = "a block device"
        default: what = "not a regular file"
        }
        return HealthCardError(
            .io,
            "cannot write \(path): it is \(link ? "a symbolic link to " : "")\(what); give the path of a file "
                + "(or - for standard output where the command allows it)")
    }
}

extension FileIO {
    /// Writes all of `bytes` to an open descriptor.
    /// - Returns: nil, or the system's reason for a failure.
    static func writeAll(_ bytes: [UInt8], to fd: Int32) -> String? {
        bytes.withUnsafeBytes { OS.writeAll($0, to: fd) }
    }

    /// Writes a public output: `-` is standard output; any other path goes through `writeAtomically`
    /// with `OutputAccess.published` (see `OutputTarget` for links, FIFOs and devices).
    /// - Throws: `HealthCardError(.io)` naming the path and the reason.
    public static func writePublic(_ bytes: [UInt8], to path: String) throws {
        if path == "-" {
            if let reason = writeAll(bytes, to: 1) {
                throw HealthCardError(.io, "cannot write to standard output: \(reason)")
            }
            return
        }
        try writeAtomically(bytes, to: path, access: .published)
    }

    /// Writes a private key or secret to a **new** regular file, mode 0600: never over an existing
    /// path of any kind (file, link, even a dangling one, FIFO, device), never to standard output.
    /// The bytes go to a temporary file first, which is then hard-linked to `path` (`link(2)` fails if
    /// anything appeared there meanwhile) and removed, so the file is whole or absent. Missing parent
    /// folders are created with mode 0700.
    /// - Parameter what: "key" or "revocation secret", for messages.
    /// - Throws: `HealthCardError(.key)` when `path` is `-` or exists, `.io` when it cannot be written.
    public static func writeNewPrivateFile(_ bytes: [UInt8], to path: String, what: String) throws {
        if path == "-" {
            throw HealthCardError(
                .key,
                "a private \(what) is never written to standard output, where it could end up in a log "
                    + "or a pipe; give the path of a new file")
        }
        var st = stat()
        if lstat(path, &st) == 0 {
            let kind: String
            switch st.st_mode & S_IFMT {
            case S_IFREG: kind = "a file"
            case S_IFDIR: kind = "a folder"
            case S_IFLNK: kind = "a symbolic link"
            case S_IFIFO: kind = "a FIFO"
            case S_IFCHR, S_IFBLK: kind = "a device"
            default: kind = "not a regular file"
            }
            let hint =
                (st.st_mode & S_IFMT) == S_IFDIR
                ? "give the path of the file to create inside it, e.g. \(path)/\(what == "key" ? "issuer.pem" : "rid.secret")"
                : "a private \(what) is never overwritten: it is only ever written to a new file. Choose another path, "
                    + "or move the old one away first"
            throw HealthCardError(.key, "\(path) already exists and is \(kind); \(hint)")
        }
        let folder = parent(of: path)
        if !isDirectory(folder) { try createDirectories(folder, mode: OutputAccess.ownerOnly.folderMode) }
        let temp = temporaryName(for: path)
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw HealthCardError(.io, "cannot write \(path): \(OS.errorText())") }
        var failure = writeAll(bytes, to: fd)
        if failure == nil, fchmod(fd, 0o600) != 0 || fsync(fd) != 0 { failure = OS.errorText() }
        close(fd)
        defer { unlink(temp) }
        if let failure { throw HealthCardError(.io, "cannot write \(path): \(failure)") }
        if link(temp, path) == 0 { return }
        if errno == EEXIST {
            throw HealthCardError(
                .key, "\(path) appeared while it was being written; a private \(what) is never overwritten")
        }
        guard errno == EPERM || errno == EOPNOTSUPP else {
            throw HealthCardError(.io, "cannot write \(path): \(OS.errorText())")
        }
        // A file system without hard links (FAT, some network shares): create the file itself, exclusively.
        let direct = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard direct >= 0 else {
            throw HealthCardError(.io, "cannot write \(path): \(OS.errorText())")
        }
        failure = writeAll(bytes, to: direct)
        if failure == nil, fchmod(direct, 0o600) != 0 || fsync(direct) != 0 {
            failure = OS.errorText()
        }
        close(direct)
        if let failure {
            unlink(path)
            throw HealthCardError(.io, "cannot write \(path): \(failure)")
        }
    }
}
