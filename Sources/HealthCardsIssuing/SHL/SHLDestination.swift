import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// Where the encrypted files of SMART Health Links go in an issuer's site folder, and the URLs they are
/// served at.
///
/// The site folder is served at the issuer URL (`iss`), so a link base URL under it names a folder in it:
/// with iss `https://clinic.example.org`, `--shl https://clinic.example.org/shl` is `SITE/shl/`. Files are
/// named by 32 random bytes in base64url (43 characters: 256 bits of entropy, and nothing about the person),
/// so a link URL is `BASE_URL/<43 characters>`, at most 128 characters (links-specification "Establish a
/// SMART Health Link Manifest URL"). The folder's last segment is `shl`: the header rules `site` writes
/// (`HostRules`) serve files in folders of that name as `application/jose` with CORS and `no-store`.
public struct SHLDestination: Sendable {
    /// The folder name the host rules serve link files from.
    public static let folderName = "shl"
    /// Characters in a link file name: base64url of 32 random bytes.
    public static let fileNameLength = 43
    /// Most characters in a base URL: the URL with `/` and a file name stays within 128.
    public static let maxBaseURLCharacters = SHLink.maxURLCharacters - 1 - fileNameLength

    /// The site the files are written into.
    public let site: PublishedSite
    /// The base URL, without a trailing `/`.
    public let baseURL: String
    /// The folder's path relative to the site root, e.g. `shl` or `links/shl`.
    public let relativeFolder: String

    /// The folder on disk: `SITE/<relativeFolder>`.
    public var folder: String { site.site.root + "/" + relativeFolder }

    /// Checks `baseURL` against the site's issuer.
    /// - Throws: `HealthCardError(.configuration)` when the base URL is not under the issuer URL the site is published
    ///   at, names no folder or an unsafe one (`..`, a hidden or percent-encoded segment, a query or
    ///   fragment), is not a folder named `shl`, or is too long for a 128-character link URL; the message
    ///   says why and gives a base URL that works.
    /// - Parameter option: the name of the setting that gave the base URL, for messages (a program passes its
    ///   own, such as a command-line option).
    public init(site: PublishedSite, baseURL: String, option: String = "base URL") throws(HealthCardError) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        let issuer = site.issuer
        let example = issuer + "/" + Self.folderName
        func refuse(_ why: String) -> HealthCardError {
            HealthCardError(.configuration, "\(option) \(baseURL) \(why); e.g. \(option) \(example)")
        }
        guard base.hasPrefix(issuer + "/") else {
            throw refuse(
                "is not under the issuer URL \(issuer) that site \(site.site.root) is published at: the link files are "
                    + "written into that folder, which the host serves at \(issuer), so the link URL must start with \(issuer)/"
            )
        }
        let path = base.dropFirst(issuer.count + 1)
        if path.contains("?") || path.contains("#") { throw refuse("has a query or fragment; give a plain folder URL") }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            guard let problem = Self.segmentProblem(segment) else { continue }
            throw refuse("has the path segment \(Quote.text(segment)), which \(problem)")
        }
        guard segments.last == Substring(Self.folderName) else {
            throw refuse(
                "names the folder \(Quote.text(segments.last ?? "")); link files go in a folder named '\(Self.folderName)' (at "
                    + "\(issuer)/\(Self.folderName) or deeper), which the issuer site's header rules serve as "
                    + "application/jose with CORS and no caching")
        }
        guard base.count <= Self.maxBaseURLCharacters else {
            throw refuse(
                "is \(base.count) characters; a link URL is the base URL, '/' and a \(Self.fileNameLength)-character "
                    + "file name, at most \(SHLink.maxURLCharacters) in all, so the base URL may have at most "
                    + "\(Self.maxBaseURLCharacters)")
        }
        self.site = site
        self.baseURL = base
        self.relativeFolder = String(path)
    }

    /// Why a URL path segment cannot name a folder of the site, or nil when it can.
    static func segmentProblem(_ segment: Substring) -> String? {
        if segment.isEmpty { return "is empty ('//')" }
        if segment.hasPrefix(".") { return "starts with '.' (a parent, hidden or .well-known folder)" }
        let allowed = segment.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_"
                || $0 == "." || $0 == "~"
        }
        return allowed ? nil : "has characters other than letters, digits, '-', '_', '.' and '~'"
    }

    /// The URL of the file `name` in this folder.
    public func url(ofFile name: String) -> String { baseURL + "/" + name }

    /// The path of the file `name` in this folder.
    public func path(ofFile name: String) -> String { folder + "/" + name }

    /// A fresh file name: 32 random bytes from `RAND_bytes`, base64url (43 characters).
    /// - Throws: `HealthCardError(.crypto)`.
    public static func newFileName() throws(HealthCardError) -> String { Base64URL.encode(try Digest.randomBytes(32)) }

    /// True for a name `newFileName` can give: 43 base64url characters.
    public static func isFileName(_ name: some StringProtocol) -> Bool {
        name.utf8.count == fileNameLength
            && name.utf8.allSatisfy {
                ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D
                    || $0 == 0x5F
            }
    }
}

extension PublishedSite {
    /// The file in this site that a URL under its issuer names: `https://clinic.example.org/shl/abc` is
    /// `SITE/shl/abc` for the site of `https://clinic.example.org`. A query (`?recipient=…`) is ignored, as a
    /// static host ignores it. Offline: nothing is fetched.
    /// - Returns: nil when the URL is not under the issuer URL, or a path segment is empty, starts with `.`
    ///   (so `..` never leaves the site) or has characters outside letters, digits, `-`, `_`, `.`, `~`.
    public func localPath(forURL url: String) -> String? {
        guard url.hasPrefix(issuer + "/"), refusal(forURL: url) == nil else { return nil }
        return site.root + "/" + Self.pathSegments(url.dropFirst(issuer.count + 1)).joined(separator: "/")
    }

    /// Why a URL under this site's issuer names no file of the site (a path segment that is empty, starts
    /// with `.` such as `..`, or has other characters), or nil when it names one or is not under the issuer.
    public func refusal(forURL url: String) -> String? {
        guard url.hasPrefix(issuer + "/") else { return nil }
        let segments = Self.pathSegments(url.dropFirst(issuer.count + 1))
        for segment in segments {
            guard let problem = SHLDestination.segmentProblem(segment) else { continue }
            return "the url's path segment \(Quote.text(segment)) \(problem): a link file is never looked for outside "
                + "the site folder \(site.root), or in its hidden folders"
        }
        return nil
    }

    /// The path segments of a URL path, without its query or fragment.
    private static func pathSegments(_ path: Substring) -> [Substring] {
        var path = path
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        return path.split(separator: "/", omittingEmptySubsequences: false)
    }
}
