import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify

/// The files of `U` links read offline from site folders (`verify --shl-site`): a link whose URL lies under a
/// site's issuer URL is mapped to the file in that folder; nothing is fetched.
public struct SiteLinkFiles: SHLFileSource {
    /// Site folders holding SMART Health Link files, standing for the hosts of their issuer URLs.
    public let sites: [PublishedSite]

    public init(sites: [PublishedSite]) {
        self.sites = sites
    }

    /// The file at `url`. An `http:` URL whose host publishes its site at `https:` (a site folder for the same URL
    /// with `https://`) is looked up in that site: the link check warns that the URL is not https
    /// (`SHL_URL_NOT_HTTPS`), and the file is still checked.
    public func file(at url: String) -> SHLFileLookup {
        if url.hasPrefix("http://"), sites.first(where: { $0.localPath(forURL: url) != nil }) == nil {
            let secure = "https://" + url.dropFirst("http://".count)
            if sites.contains(where: { $0.localPath(forURL: secure) != nil }) { return file(at: secure) }
        }
        guard let site = sites.first(where: { $0.localPath(forURL: url) != nil }),
            let path = site.localPath(forURL: url)
        else {
            let refusal = sites.lazy.compactMap { $0.refusal(forURL: url) }.first
            let hint =
                sites.isEmpty
                ? "give the site folder of the host that holds the link's file"
                : refusal ?? "none of the link site folders given is published at its origin"
            return .notResolved("\(hint); verify never fetches a URL")
        }
        guard FileIO.isRegularFile(path) else {
            switch FileKind.of(path) {
            case .missing, .danglingLink:
                return .missing("the link's file \(path) is not in the site: the link is broken, or was withdrawn")
            case let kind:
                // Present, but nothing a web server serves as the link's file (a FIFO is never opened: it would wait).
                return .missing(
                    "the link's file \(path) \(kind.phrase), not a regular file: a web server would not serve it as the "
                        + "link's file. Put back the file written when the link was made, or withdraw the link")
            }
        }
        if let size = FileIO.size(path), size > JWE.maxCompactBytes { return .tooLarge(name: path, bytes: size) }
        guard let bytes = try? FileIO.read(path, maxBytes: JWE.maxCompactBytes) else {
            return .missing("the link's file \(path) cannot be read")
        }
        return .found(bytes: bytes, name: path, identity: FileIO.identity(path) ?? path)
    }
}
