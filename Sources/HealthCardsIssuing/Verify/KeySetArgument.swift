import HealthCardsCore
import HealthCardsSite

/// A `--jwks` argument: `PATH` (a `jwks.json` or a site folder) or `URL=PATH`, which binds the key set
/// at PATH to the issuer URL.
package struct KeySetArgument: Sendable, Equatable {
    /// The issuer given with `URL=`, if any.
    package var issuer: String?
    /// The file or folder.
    package var path: String

    package init(issuer: String?, path: String) {
        self.issuer = issuer
        self.path = path
    }

    /// Parses an argument.
    /// - Throws: `HealthCardError(.configuration)` for a URL without `=PATH` (verify is offline: it never fetches a
    ///   key set), or an issuer URL with no host or an empty PATH.
    package static func parse(_ argument: String) throws -> KeySetArgument {
        let lower = argument.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
            return KeySetArgument(issuer: nil, path: argument)
        }
        guard let equals = argument.firstIndex(of: "=") else {
            throw HealthCardError(
                .configuration,
                "key set \(argument): verify is offline and does not fetch URLs. Download the key set "
                    + "(<iss>/.well-known/jwks.json) and give it bound to its issuer as ISSUER_URL=PATH, e.g. "
                    + "https://issuer.example.org=jwks.json"
            ).about("key set")
        }
        let issuer = String(argument[..<equals])
        let path = String(argument[argument.index(after: equals)...])
        guard !path.isEmpty else {
            throw HealthCardError(
                .configuration,
                "key set \(argument) names no file after '='; give it as ISSUER_URL=PATH"
            ).about("key set")
        }
        // Compared with each card's iss exactly, as verifiers build <iss>/.well-known/jwks.json from it; the
        // card's own iss rules (https, no trailing '/') are judged on the card.
        guard issuer.split(separator: "/", omittingEmptySubsequences: true).count >= 2 else {
            throw HealthCardError(
                .configuration,
                "key set \(Quote.text(argument, limit: 200)): \(Quote.text(issuer)) has no host; give it as ISSUER_URL=PATH"
            ).about("key set")
        }
        return KeySetArgument(issuer: issuer, path: path)
    }
}
