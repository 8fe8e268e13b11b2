import HealthCardsCore

/// The public URL the link server is reached at, behind its TLS proxy: links are `<base>/<43 characters>`, and
/// so at most 128 characters (links-specification: the `url` "SHALL NOT exceed 128 characters").
public struct BaseURL: Sendable, Equatable, CustomStringConvertible {
    /// Most characters: with `/` and a 43-character id the link URL stays within 128.
    public static let maxCharacters = SHLink.maxURLCharacters - 1 - LinkID.length

    /// Without a trailing `/`.
    public let text: String
    /// The path's segments (empty for a base URL at the host's root): the server's routes start with them.
    public let pathSegments: [String]

    public var description: String { text }

    /// Checks a base URL.
    /// - Throws: `HealthCardError(.configuration)` for a URL that is not https (http only for a loopback host, for
    ///   tests), has a query, fragment, user, or an empty, `.`/`..` or percent-encoded path segment, or is longer
    ///   than `maxCharacters`; the message says what to give.
    public init(_ given: String) throws(HealthCardError) {
        var text = given
        while text.hasSuffix("/") { text.removeLast() }
        func refuse(_ why: String) -> HealthCardError {
            HealthCardError(
                .configuration, "the base URL \(Quote.text(given)) \(why); e.g. https://links.example.org/shl")
        }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = text.dropFirst(7)
            let host = rest.prefix { $0 != "/" }
            let name = host.hasPrefix("[") ? host.prefix { $0 != "]" } + "]" : host.prefix { $0 != ":" }
            guard ["localhost", "127.0.0.1", "[::1]"].contains(name.lowercased()) else {
                throw refuse(
                    "is not https: receivers fetch links over TLS (http is accepted only for a loopback host, for tests)"
                )
            }
        } else {
            throw refuse("is not an https URL")
        }
        let host = rest.prefix { $0 != "/" }
        guard !host.isEmpty, !host.contains("@") else { throw refuse("names no host, or a user") }
        guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-.:[]".contains($0)) }) else {
            throw refuse("has a host with characters a host name cannot have")
        }
        guard !text.contains("?"), !text.contains("#") else { throw refuse("has a query or fragment") }
        let path = rest.dropFirst(host.count)
        var segments: [String] = []
        if !path.isEmpty {
            for segment in path.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
                guard !segment.isEmpty, segment != ".", segment != "..", !segment.contains("%") else {
                    throw refuse("has the path segment \(Quote.text(segment)); give plain folder names")
                }
                guard segment.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._~".contains($0)) }) else {
                    throw refuse("has the path segment \(Quote.text(segment)) with characters that need escaping")
                }
                segments.append(String(segment))
            }
        }
        guard text.count <= Self.maxCharacters else {
            throw refuse(
                "is \(text.count) characters; a link URL is the base URL, '/' and a \(LinkID.length)-character id, at "
                    + "most \(SHLink.maxURLCharacters) in all, so the base URL may have at most \(Self.maxCharacters)")
        }
        self.text = text
        self.pathSegments = segments
    }

    /// The URL of a link: `<base>/<id>`.
    public func link(_ id: String) -> String { text + "/" + id }

    /// The URL of a location: `<base>/file/<secret>`.
    public func location(_ secret: String) -> String { text + "/file/" + secret }

    /// The id of a link URL under this base, or nil.
    public func id(ofLink url: String) -> String? {
        guard url.hasPrefix(text + "/") else { return nil }
        let id = url.dropFirst(text.count + 1)
        return LinkID.isValid(id) ? String(id) : nil
    }
}
