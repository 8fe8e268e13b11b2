#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore

/// Moves the hand-out files of a card that must not be handed out (its person is revoked) from the output folder's
/// hand-out folders (`cards/`, `qr/`, `pdf/`, `shl/`) into `OUT/withdrawn/`, under the same relative path.
///
/// Nothing is deleted or overwritten: a name already taken in `withdrawn/` (an earlier withdrawal) gets `.2`, `.3`, …
/// before its extension. Only regular files are moved (a symbolic link found at a path was not made by a run: it is
/// left as it is, not followed). `withdrawn/` and its folders are made 0700, and each moved file is made 0600.
enum CardWithdrawal {
    /// The folder, under the output folder.
    static let folder = "withdrawn"

    /// The hand-out files of the record named `name` that are there, relative to `outDir`: the card, its QR image
    /// (or chunk images), its PDF, its link text and link QR.
    static func files(name: String, outDir: String) -> [String] {
        var files = ["cards/\(name).smart-health-card"]
        if FileIO.exists("\(outDir)/qr/\(name).png") {
            files.append("qr/\(name).png")
        } else {
            var chunk = 1
            while chunk <= 100, FileIO.exists("\(outDir)/qr/\(name)-\(chunk).png") {
                files.append("qr/\(name)-\(chunk).png")
                chunk += 1
            }
        }
        files += ["pdf/\(name).pdf", "shl/\(name).txt", "shl/\(name).png"]
        return files.filter { FileIO.exists("\(outDir)/\($0)") }
    }

    /// Moves `files` (relative to `outDir`) into `outDir/withdrawn/`.
    /// - Returns: each file moved and where it went (relative to `outDir`), and the files left because they are not
    ///   regular files (symbolic links).
    /// - Throws: `HealthCardError(.io)` when a folder cannot be made or a file cannot be moved.
    static func move(_ files: [String], outDir: String) throws -> (moved: [(from: String, to: String)], left: [String]) {
        var moved: [(from: String, to: String)] = []
        var left: [String] = []
        for file in files {
            let source = "\(outDir)/\(file)"
            var st = stat()
            guard lstat(source, &st) == 0 else { continue }
            guard st.st_mode & S_IFMT == S_IFREG else {
                left.append(file)
                continue
            }
            let target = "\(folder)/\(file)"
            try FileIO.createDirectories(FileIO.parent(of: "\(outDir)/\(target)"), mode: OutputAccess.ownerOnly.folderMode)
            let (stem, ext) = split(target)
            var number = 1
            while true {
                let candidate = number == 1 ? target : "\(stem).\(number)\(ext)"
                // link(2) never replaces what is there and never follows `source` (a regular file, checked above).
                if link(source, "\(outDir)/\(candidate)") == 0 {
                    chmod("\(outDir)/\(candidate)", 0o600)
                    unlink(source)
                    moved.append((file, candidate))
                    break
                }
                guard errno == EEXIST, number < 1000 else {
                    throw HealthCardError(.io, "cannot move \(source) to \(outDir)/\(candidate): \(OS.errorText())")
                }
                number += 1
            }
        }
        return (moved, left)
    }

    /// `a/b.smart-health-card` as (`a/b`, `.smart-health-card`); `a/b.png` as (`a/b`, `.png`).
    static func split(_ path: String) -> (String, String) {
        for ext in [".smart-health-card", ".png", ".pdf", ".txt"] where path.hasSuffix(ext) {
            return (String(path.dropLast(ext.count)), ext)
        }
        return (path, "")
    }
}
