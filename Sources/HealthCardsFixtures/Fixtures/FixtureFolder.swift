#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint
import HealthCardsIssuing

/// Where `healthcards fixtures` puts a catalogue: a new or empty folder, or the folder of an earlier
/// catalogue, which is replaced whole (regenerating a committed catalogue is one command). The new
/// catalogue is made in a hidden folder beside the target and renamed into place, so a run that fails
/// leaves the earlier catalogue as it was.
public enum FixtureFolder {
    /// What a catalogue folder holds; an earlier catalogue is replaced only when it holds nothing else.
    static let catalogueNames: Set<String> = ["valid", "invalid", "site", FixtureManifest.fileName]

    /// Makes the catalogue and puts it at `out`.
    /// - Returns: the manifest written.
    /// - Throws: `HealthCardError(.configuration)` when `out` is a file, or a folder holding anything but an
    ///   earlier catalogue (listed in the message; nothing is touched); `.io` when writing fails; what
    ///   `FixtureCatalogue.make` throws.
    public static func write(_ options: FixtureCatalogue.Options, to out: String) throws -> FixtureManifest {
        var out = out
        while out.count > 1 && out.hasSuffix("/") { out.removeLast() }
        let replacing = try check(out)
        let parent = FileIO.parent(of: out)
        try FileIO.createDirectories(parent)
        let name = FileIO.basename(out)
        let pid = getpid()
        let temporary = "\(parent)/.\(name).fixtures-new-\(pid)"
        let old = "\(parent)/.\(name).fixtures-old-\(pid)"
        try removeTree(temporary)
        let manifest: FixtureManifest
        do {
            try FileIO.createDirectories(temporary)
            manifest = try FixtureCatalogue.make(options, in: temporary)
        } catch {
            try? removeTree(temporary)
            throw error
        }
        if FileIO.exists(out) {
            if replacing {
                try rename(out, to: old)
            } else {
                guard rmdir(out) == 0 else {
                    throw HealthCardError(
                        .io, "cannot replace the empty folder \(out): \(String(cString: strerror(errno)))")
                }
            }
        }
        try rename(temporary, to: out)
        try removeTree(old)
        return manifest
    }

    /// Whether `out` holds an earlier catalogue (true), or is missing or empty (false).
    /// - Throws: `HealthCardError(.configuration)` for anything else.
    static func check(_ out: String) throws -> Bool {
        guard FileIO.exists(out) else { return false }
        guard FileIO.isDirectory(out) else {
            throw HealthCardError(
                .configuration, "\(Setting.out) \(out) is a file; give a new or empty folder, or the folder of an earlier catalogue")
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
                : "no catalogue (no \(FixtureManifest.fileName) written by `\(Command.fixtures)`)"
            throw HealthCardError(
                .configuration,
                "\(Setting.out) \(out) is not empty and holds \(found); it is replaced only when it holds an "
                    + "earlier catalogue and nothing else. Give a new or empty folder")
        }
        return true
    }

    private static func rename(_ from: String, to: String) throws {
        guard Glibc.rename(from, to) == 0 else {
            throw HealthCardError(.io, "cannot rename \(from) to \(to): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes a file or a folder and everything in it; symbolic links are removed, never followed.
    static func removeTree(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            for name in FileIO.list(path) { try removeTree(path + "/" + name) }
            guard rmdir(path) == 0 else {
                throw HealthCardError(.io, "cannot remove \(path): \(String(cString: strerror(errno)))")
            }
        } else {
            guard unlink(path) == 0 else {
                throw HealthCardError(.io, "cannot remove \(path): \(String(cString: strerror(errno)))")
            }
        }
    }
}
