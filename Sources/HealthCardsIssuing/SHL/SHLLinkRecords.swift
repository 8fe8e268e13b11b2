#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// What an output folder remembers about its SMART Health Links, beside the link texts in `OUT/shl/`:
/// which links were withdrawn (`SHLWithdrawalRecord`), and which site folder holds their files
/// (`SHLSiteRecord`). Neither holds a key or anything about the person.

/// A withdrawn link: `OUT/shl/<name>.withdrawn`, written by `revoke --link OUT/shl/<name>.txt`.
///
/// A withdrawn link stays withdrawn: later `issue --shl` and `shl` runs make no new link for that name unless the
/// operator names it (`--shl-renew ID`, `shl --renew ID`), so a person whose link was taken back does not get a
/// new one by the next batch.
package enum SHLWithdrawalRecord {
    /// `OUT/shl/<name>.withdrawn`.
    public static func path(outDir: String, name: String) -> String { "\(outDir)/shl/\(name).withdrawn" }

    /// True when the link of `name` in `outDir` was withdrawn.
    public static func isWithdrawn(outDir: String, name: String) -> Bool {
        FileIO.exists(path(outDir: outDir, name: name))
    }

    /// The marker for the link text file at `linkFile` (`…/shl/<name>.txt`), or nil for another path.
    public static func path(besideLinkFile linkFile: String) -> String? {
        guard linkFile.hasSuffix(".txt"), FileIO.basename(FileIO.parent(of: linkFile)) == SHLDestination.folderName
        else { return nil }
        return String(linkFile.dropLast(4)) + ".withdrawn"
    }

    /// Records that the link whose text is at `linkFile` was withdrawn at `now`: `{"withdrawn":<seconds>,
    /// "file":"<the site file's path relative to the site>"}`, mode 0600.
    /// - Throws: `HealthCardError(.io)` when it cannot be written.
    public static func record(besideLinkFile linkFile: String, siteFile: String, now: Int64) throws
    {
        guard let marker = path(besideLinkFile: linkFile) else { return }
        let json: JSONValue = .object(["withdrawn": .integer(now), "file": .string(siteFile)])
        try FileIO.writeAtomically(JSONWriter.minified(json) + [0x0A], to: marker)
    }

    /// Forgets a withdrawal (a new link was asked for).
    public static func clear(outDir: String, name: String) { unlink(path(outDir: outDir, name: name)) }

    /// The withdrawal recorded beside the link text file `linkFile` (`…/shl/<name>.txt`): when (seconds, if the
    /// marker says) and the marker's path; nil when there is no marker, or it names another site file than
    /// `siteFileName` (the last path segment of the link's URL: the marker of an earlier link of that name).
    public static func recorded(besideLinkFile linkFile: String, siteFileName: String) -> (at: Int64?, marker: String)? {
        guard let marker = path(besideLinkFile: linkFile), FileIO.exists(marker) else { return nil }
        let json = (try? FileIO.read(marker, maxBytes: 4096)).flatMap { try? JSONParser.parse($0) }
        if let file = json?["file"]?.stringValue, FileIO.basename(file) != siteFileName { return nil }
        return (json?["withdrawn"]?.numberLexeme.flatMap { Int64($0) }, marker)
    }

    /// When the link of `name` was withdrawn (seconds), if the marker says.
    public static func withdrawnAt(outDir: String, name: String) -> Int64? {
        guard let bytes = try? FileIO.read(path(outDir: outDir, name: name)) else { return nil }
        return (try? JSONParser.parse(bytes))?["withdrawn"]?.numberLexeme.flatMap { Int64($0) }
    }
}

/// The site folder the links of an output folder were made into: `OUT/shl/.healthcards-links.json`,
/// `{"site":"<absolute path>"}`. Another copy of the site (the same issuer in another folder) holds none of their
/// files: a run given it would take every link for withdrawn, so `issue --shl` and `shl` refuse it while the
/// recorded folder is there, and `revoke --link` refuses to call such a link withdrawn.
package enum SHLSiteRecord {
    /// The record's file name in `OUT/shl/`.
    public static let fileName = ".healthcards-links.json"

    /// `<folder holding the link texts>/.healthcards-links.json`.
    public static func path(linkFolder: String) -> String { linkFolder + "/" + fileName }

    /// The site folder recorded for the link texts in `linkFolder`, or nil.
    public static func recordedSite(linkFolder: String) -> String? {
        guard let bytes = try? FileIO.read(path(linkFolder: linkFolder)) else { return nil }
        return (try? JSONParser.parse(bytes))?["site"]?.stringValue
    }

    /// Refuses `site` when the links in `linkFolder` were made into another site folder that still exists.
    /// - Parameter what: what is refused, for the message (e.g. "no link was made").
    /// - Throws: `HealthCardError(.configuration)` naming both folders and what to do.
    public static func check(linkFolder: String, site: String, what: String) throws {
        guard let recorded = recordedSite(linkFolder: linkFolder), let theirs = FileIO.identity(recorded),
            FileIO.exists(recorded + "/.well-known/jwks.json"), theirs != FileIO.identity(site)
        else { return }
        throw HealthCardError(
            .configuration,
            "the links in \(linkFolder) were made into the site folder \(recorded) (\(path(linkFolder: linkFolder))), "
                + "not \(site): their files are there, and \(site) is another folder (a copy?) that holds none of them. "
                + "Give the site folder \(recorded); \(what)")
    }

    /// Records `site` (made absolute) for the links in `linkFolder`, unless it is recorded already.
    /// - Throws: `HealthCardError(.io)` when it cannot be written.
    public static func record(linkFolder: String, site: String, access: OutputAccess) throws {
        let absolute = IssuerSite.absolutePath(site)
        guard recordedSite(linkFolder: linkFolder) != absolute else { return }
        let json: JSONValue = .object(["site": .string(absolute)])
        try FileIO.writeAtomically(JSONWriter.minified(json) + [0x0A], to: path(linkFolder: linkFolder), access: access)
    }
}
