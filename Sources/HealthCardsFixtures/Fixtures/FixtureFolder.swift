#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// Where `healthcards fixtures` puts a catalogue: a new or empty folder, or the folder of an earlier
/// catalogue, which is replaced whole (regenerating a committed catalogue is one command). The new
/// catalogue is made in a hidden folder beside the target (`.<name>.fixtures-new-<pid>`) and renamed into
/// place, so a run that fails or is stopped leaves the earlier catalogue as it was, and no folder of its own:
/// a stop request (SIGINT, SIGTERM) removes it, and a run that was killed leaves one that the next run removes.
///
/// `out` given as a symbolic link to a folder is followed: the folder it points to is replaced, the link kept
/// (as an output file's link is, `OutputTarget`).
public enum FixtureFolder {
    /// What a catalogue folder holds; an earlier catalogue is replaced only when it holds nothing else.
    static let catalogueNames: Set<String> = ["valid", "invalid", "site", FixtureManifest.fileName]

    /// What `write` did: wrote the catalogue, or stopped on request (a stop is an outcome the caller asked for,
    /// not an error).
    public enum Outcome {
        /// The catalogue is at `out`; its manifest.
        case written(FixtureManifest)
        /// A stop was requested by `signal`: the catalogue was not written (its temporary folder is gone, an
        /// earlier catalogue is as it was).
        case stopped(signal: Int32)
    }

    /// Makes the catalogue and puts it at `out`.
    /// - Parameter stop: asks the run to stop (from a signal handler); checked between the catalogue's stages.
    /// - Returns: `.written` with the manifest written, or `.stopped` when `stop` was requested (nothing was
    ///   written, the earlier catalogue is as it was).
    /// - Throws: `HealthCardError(.configuration)` when `out` is a file, or a folder holding anything but an
    ///   earlier catalogue (listed in the message; nothing is touched); `.io` when writing fails; what
    ///   `FixtureCatalogue.make` throws.
    public static func write(
        _ options: FixtureCatalogue.Options, to out: String, stop: StopRequest = StopRequest()
    ) throws -> Outcome {
        var out = out
        while out.count > 1 && out.hasSuffix("/") { out.removeLast() }
        // A link to a folder: the folder is what is replaced (renaming over the link would replace the link).
        if FileKind.of(out) == .folder, FileIO.linkTarget(out) != nil, let real = FileIO.realPath(out) { out = real }
        let replacing = try check(out)
        let parent = FileIO.parent(of: out)
        try FileIO.createDirectories(parent)
        let name = FileIO.basename(out)
        let pid = getpid()
        let temporary = "\(parent)/.\(name).fixtures-new-\(pid)"
        let old = "\(parent)/.\(name).fixtures-old-\(pid)"
        removeLeftovers(in: parent, name: name)
        try removeTree(temporary)
        let manifest: FixtureManifest
        do {
            try FileIO.createDirectories(temporary)
            manifest = try FixtureCatalogue.make(options, in: temporary, stop: stop)
        } catch {
            try? removeTree(temporary)
            throw error
        }
        if stop.signal != 0 {
            try? removeTree(temporary)
            return .stopped(signal: stop.signal)
        }
        if FileIO.exists(out) {
            if replacing {
                try rename(out, to: old)
            } else {
                guard rmdir(out) == 0 else {
                    throw HealthCardError(
                        .io, "cannot replace the empty folder \(out): \(OS.errorText())")
                }
            }
        }
        try rename(temporary, to: out)
        try removeTree(old)
        return .written(manifest)
    }

    /// Removes the folders `.<name>.fixtures-new-<pid>` and `.<name>.fixtures-old-<pid>` in `parent` that a run no
    /// longer running left (killed before it could clean up). Those of a live process are kept.
    /// - Returns: the names removed.
    @discardableResult
    static func removeLeftovers(in parent: String, name: String) -> [String] {
        var removed: [String] = []
        for entry in FileIO.list(parent) {
            for kind in ["new", "old"] {
                let prefix = ".\(name).fixtures-\(kind)-"
                guard entry.hasPrefix(prefix), let pid = Int32(entry.dropFirst(prefix.count)), pid > 0 else { continue }
                if pid == getpid() || kill(pid, 0) == 0 || errno == EPERM { continue }
                if (try? removeTree(parent + "/" + entry)) != nil { removed.append(entry) }
            }
        }
        return removed
    }

    /// Whether `out` holds an earlier catalogue (true), or is missing or empty (false).
    /// - Throws: `HealthCardError(.configuration)` for anything else.
    static func check(_ out: String) throws -> Bool {
        guard FileIO.exists(out) else { return false }
        guard FileIO.isDirectory(out) else {
            let kind = FileKind.of(out)
            throw HealthCardError(
                .configuration,
                "output folder \(out) \(kind == .regular ? "is a file" : kind.phrase); the catalogue is a folder: give a new or "
                    + "empty folder, or the folder of an earlier catalogue"
            ).about("output folder")
        }
        let names = FileIO.list(out)
        if names.isEmpty { return false }
        let manifestPath = out + "/" + FixtureManifest.fileName
        let isCatalogue =
            FileIO.exists(manifestPath) && (try? FixtureManifest(bytes: try FileIO.read(manifestPath))) != nil
        let others = names.filter { !catalogueNames.contains($0) }
        guard isCatalogue, others.isEmpty else {
            let found =
                isCatalogue
                ? "files that are not part of a catalogue: \(others.prefix(5).joined(separator: ", "))"
                : "no catalogue (no \(FixtureManifest.fileName) written when a catalogue is made)"
            throw HealthCardError(
                .configuration,
                "output folder \(out) is not empty and holds \(found); it is replaced only when it holds an "
                    + "earlier catalogue and nothing else. Give a new or empty folder"
            ).about("output folder")
        }
        return true
    }

    private static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else {
            throw HealthCardError(.io, "cannot rename \(from) to \(to): \(OS.errorText())")
        }
    }

    /// Removes a file or a folder and everything in it; symbolic links are removed, never followed.
    static func removeTree(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for name in FileIO.list(path) { try removeTree(path + "/" + name) }
            guard rmdir(path) == 0 else {
                throw HealthCardError(.io, "cannot remove \(path): \(OS.errorText())")
            }
        } else {
            guard unlink(path) == 0 else {
                throw HealthCardError(.io, "cannot remove \(path): \(OS.errorText())")
            }
        }
    }
}
