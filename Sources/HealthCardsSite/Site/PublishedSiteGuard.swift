#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify

extension IssuerSite {
    /// Files whose presence in a folder marks it as a published issuer site (what `site` writes): the
    /// key set, and the nginx rules. A folder holding one of them, or below one that does, is a web root.
    public static let siteMarkers = [".well-known/jwks.json", HostRules.nginxFileName, SiteRecord.fileName]

    /// The published site that `path` is in (the path itself or a folder above it holds one of
    /// `siteMarkers`), or nil. Both the path as written (made absolute) and its real location (the
    /// deepest existing folder with links resolved) are checked, so a link into the web root is caught.
    /// - Returns: the site folder and the marker found there.
    public static func enclosingSite(of path: String) -> (site: String, marker: String)? {
        for candidate in [absolute(path), realLocation(path)] {
            var folder = candidate
            while true {
                for marker in siteMarkers where FileIO.exists(folder + "/" + marker) { return (folder, marker) }
                if folder == "/" || folder.isEmpty { break }
                folder = FileIO.parent(of: folder)
            }
        }
        return nil
    }

    /// Refuses an output path for health data (cards, QR images, reports, PDFs, links) or private material
    /// (keys, secrets) inside a published site: the path itself, or a folder above it, is a site.
    /// - Parameters:
    ///   - path: the folder or file the command would write.
    ///   - option: the name of the setting that gave it, for the message (a program passes its own).
    ///   - what: what would be written there, for the message ("cards, QR images and reports are health data").
    /// - Throws: `HealthCardError(.configuration)` naming the site and the marker found.
    public static func refuseHealthDataInside(
        _ path: String, option: String = "output folder",
        what: String = "cards, QR images, PDFs, links and reports are health data"
    ) throws {
        if let found = enclosingSite(of: path) {
            throw HealthCardError(
                .configuration,
                "\(option) \(path) is inside the published site \(found.site) (it holds \(found.marker)): \(what), and "
                    + "a web server hands out whatever is in the site to anyone who asks. Choose a path outside the web "
                    + "root; nothing was written"
            ).about(option)
        }
        // An output folder whose entries (cards/, qr/, report.ndjson, …) or their files are links into a site would
        // put the files there: writes follow a link to its target (the output rule, `OutputTarget`).
        guard FileIO.isDirectory(path), let (link, found) = linkIntoSite(under: path) else { return }
        throw HealthCardError(
            .configuration,
            "\(option) \(path) holds \(link), a symbolic link into the published site \(found.site) (it holds "
                + "\(found.marker)): \(what), and what is written through the link would be published. Remove the link "
                + "or choose another folder; nothing was written"
        ).about(option)
    }

    /// The first symbolic link among the entries of `folder` and of its subfolders (one level down, at most
    /// `limit` entries in all) whose target is inside a published site, and that site; nil when there is none.
    static func linkIntoSite(under folder: String, limit: Int = 1_000_000) -> (link: String, site: (site: String, marker: String))? {
        var seen = 0
        var subfolders: [String] = []
        func scan(_ parent: String, descend: Bool) -> (String, (site: String, marker: String))? {
            for name in FileIO.list(parent) {
                seen += 1
                if seen > limit { return nil }
                let path = parent + "/" + name
                if FileIO.linkTarget(path) != nil {
                    if let found = enclosingSite(of: path) { return (path, found) }
                } else if descend, isFolder(path) {
                    subfolders.append(path)
                }
            }
            return nil
        }
        if let found = scan(folder, descend: true) { return found }
        for subfolder in subfolders where seen <= limit {
            if let found = scan(subfolder, descend: false) { return found }
        }
        return nil
    }

    /// What `issue` (and `print`, `shl`) leave in an output folder: when a folder holds one of these, it holds
    /// health data. Folders are named with a trailing `/` and the kind of file in them that counts.
    public static let issueOutputMarkers: [(name: String, fileSuffix: String?)] = [
        ("report.ndjson", nil), (FileIssuanceLog.fileName, nil), (OutputLock.fileName, nil), ("cards/", ".smart-health-card"), ("pdf/", ".pdf"),
        ("shl/", ".txt"),
    ]

    /// The first folder at or below `root` that holds an `issue` output (`issueOutputMarkers`) or a
    /// `.smart-health-card` file in any folder, and the marker or file found there, or nil. Symbolic links are
    /// not followed; at most `limit` entries are looked at.
    public static func heldIssueOutput(under root: String, limit: Int = 200_000) -> (folder: String, marker: String)? {
        var pending = [root]
        var seen = 0
        while let folder = pending.popLast() {
            let names = FileIO.list(folder)
            for (name, suffix) in issueOutputMarkers {
                let path = folder + "/" + name
                if let suffix {
                    if isFolder(path), let file = FileIO.list(path).first(where: { $0.hasSuffix(suffix) }) {
                        return (folder, name + file)
                    }
                } else if FileIO.exists(path) {
                    return (folder, name)
                }
            }
            for name in names {
                seen += 1
                if seen > limit { return nil }
                let path = folder + "/" + name
                if isFolder(path) {
                    pending.append(path)
                } else if name.hasSuffix(".smart-health-card") {
                    return (folder, name)  // a card anywhere in the tree, whatever its folder is called
                }
            }
        }
        return nil
    }

    /// Refuses to lay out a site in a folder that holds health data an `issue` run wrote (`heldIssueOutput`):
    /// publishing the folder would publish the cards, reports, PDFs and links.
    /// - Throws: `HealthCardError(.configuration)` naming the folder and the file found.
    public static func refuseSiteHoldingHealthData(_ root: String) throws {
        guard FileIO.isDirectory(root), let found = heldIssueOutput(under: root) else { return }
        throw HealthCardError(
            .configuration,
            "output folder \(root) holds the output of an issue run (\(found.folder)/\(found.marker)): cards, reports, PDFs and "
                + "links are health data, and everything in a site folder is published. Lay out the site in a folder of "
                + "its own (e.g. a new one beside it), or move the issue output out of \(root); nothing was written"
        ).about("output folder")
    }

    /// True for a folder itself (not a link to one).
    private static func isFolder(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    /// `path` made absolute (against the working folder), without a trailing `/`; links are not resolved.
    public static func absolutePath(_ path: String) -> String { absolute(path) }

    private static func absolute(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path == "." ? cwd : (cwd == "/" ? "" : cwd) + "/" + path
    }

    /// `path` made absolute with every symbolic link in it resolved, component by component, even when
    /// the link points to a folder that does not exist yet (unlike `realpath`). At most 40 links are followed.
    private static func realLocation(_ path: String) -> String {
        var components = absolute(path).split(separator: "/").map(String.init)
        var resolved: [String] = []
        var hops = 0
        while !components.isEmpty {
            let component = components.removeFirst()
            if component == "." || component.isEmpty { continue }
            if component == ".." {
                if !resolved.isEmpty { resolved.removeLast() }
                continue
            }
            let next = "/" + (resolved + [component]).joined(separator: "/")
            var st = stat()
            if hops < 40, lstat(next, &st) == 0, st.st_mode & S_IFMT == S_IFLNK {
                hops += 1
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let n = readlink(next, &buffer, buffer.count - 1)
                if n > 0 {
                    let target = String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    if target.hasPrefix("/") { resolved = [] }
                    components = target.split(separator: "/").map(String.init) + components
                    continue
                }
            }
            resolved.append(component)
        }
        return "/" + resolved.joined(separator: "/")
    }
}
