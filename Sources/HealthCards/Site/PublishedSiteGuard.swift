#if canImport(Glibc)
    import Glibc
#endif

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

    /// Refuses an output folder for health data (cards, QR images, reports, PDFs) inside a published site.
    /// - Throws: `HealthCardError(.usage)` naming the site and the marker found.
    public static func refuseHealthDataInside(_ path: String, option: String = "--out") throws {
        guard let found = enclosingSite(of: path) else { return }
        throw HealthCardError(
            .usage,
            "\(option) \(path) is inside the published site \(found.site) (it holds \(found.marker)): cards, QR "
                + "images and reports are health data, and a web server would hand them to anyone who asks. "
                + "Choose a folder outside the web root; nothing was written")
    }

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
