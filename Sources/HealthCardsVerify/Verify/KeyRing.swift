import HealthCardsCore

/// The key sets `verify` was given (`--jwks`), each with the issuer it belongs to.
///
/// The spec finds an issuer's keys at `<iss>/.well-known/jwks.json` (digest section 7), so a key only
/// vouches for cards whose `iss` is the issuer that publishes it: key sets are never pooled across
/// issuers. A key set is bound to an issuer by the site folder's record (`SiteRecord`, written by
/// `site --issuer`) or by the argument `--jwks URL=PATH`. One unbound key set given alone stands for the
/// issuer of every card (the everyday "check my own cards" case); with several, only bound ones verify.
package struct KeyRing: Sendable {
    /// One key set and its issuer.
    public struct KeySet: Sendable {
        /// How the key set's issuer is known.
        public enum Binding: Sendable, Equatable {
            /// Not bound: no site record and no `URL=` in the argument.
            case unbound
            /// `--jwks URL=PATH`.
            case argument
            /// The site's `healthcards-site.json`, at this path.
            case siteRecord(String)
        }

        /// The `jwks.json` file.
        public var file: String
        /// The issuer (`iss`) whose keys these are; nil when unbound.
        public var issuer: String?
        public var binding: Binding
        /// The usable keys (`KeySetCheck`).
        public var keys: [TrustedKey]

        public init(file: String, issuer: String?, binding: Binding, keys: [TrustedKey]) {
            self.file = file
            self.issuer = issuer
            self.binding = binding
            self.keys = keys
        }

        /// `F (issuer X)` or `F (not bound to an issuer)`, for messages.
        public var described: String { "\(file) (" + (issuer.map { "issuer \($0)" } ?? "not bound to an issuer") + ")" }
    }

    public var sets: [KeySet]

    public init(sets: [KeySet]) { self.sets = sets }

    /// The one unbound key set that stands for every card's issuer: set when exactly one key set was
    /// given and it is not bound.
    public var standIn: KeySet? { sets.count == 1 && sets[0].issuer == nil ? sets[0] : nil }

    /// The key sets whose keys may verify a card with `iss`: those bound to `iss`, or the stand-in.
    public func sets(for iss: String?) -> [KeySet] {
        if let standIn { return [standIn] }
        guard let iss else { return [] }
        return sets.filter { $0.issuer == iss }
    }

    /// The key sets that may not verify a card with `iss`: every other one.
    func otherSets(for iss: String?) -> [KeySet] {
        if standIn != nil { return [] }
        return sets.filter { $0.issuer == nil || $0.issuer != iss }
    }
}

/// A `--jwks` argument: `PATH` (a `jwks.json` or a site folder) or `URL=PATH`, which binds the key set
/// at PATH to the issuer URL.
package struct KeySetArgument: Sendable, Equatable {
    /// The issuer given with `URL=`, if any.
    public var issuer: String?
    /// The file or folder.
    public var path: String

    public init(issuer: String?, path: String) {
        self.issuer = issuer
        self.path = path
    }

    /// Parses an argument.
    /// - Throws: `HealthCardError(.configuration)` for a URL without `=PATH` (verify is offline: it never fetches a
    ///   key set), or an issuer URL with no host or an empty PATH.
    public static func parse(_ argument: String) throws -> KeySetArgument {
        let lower = argument.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
            return KeySetArgument(issuer: nil, path: argument)
        }
        guard let equals = argument.firstIndex(of: "=") else {
            throw HealthCardError(
                .configuration,
                "\(Setting.jwks) \(argument): verify is offline and does not fetch URLs. Download the key set "
                    + "(<iss>/.well-known/jwks.json) and give it bound to its issuer: \(Setting.jwks) ISSUER_URL=PATH, e.g. "
                    + "\(Setting.jwks) https://issuer.example.org=jwks.json")
        }
        let issuer = String(argument[..<equals])
        let path = String(argument[argument.index(after: equals)...])
        guard !path.isEmpty else {
            throw HealthCardError(.configuration, "\(Setting.jwks) \(argument) names no file after '='; give \(Setting.jwks) ISSUER_URL=PATH")
        }
        // Compared with each card's iss exactly, as verifiers build <iss>/.well-known/jwks.json from it; the
        // card's own iss rules (https, no trailing '/') are judged on the card.
        guard issuer.split(separator: "/", omittingEmptySubsequences: true).count >= 2 else {
            throw HealthCardError(.configuration, "\(Setting.jwks) \(Quote.text(argument, limit: 200)): \(Quote.text(issuer)) has no host; give \(Setting.jwks) ISSUER_URL=PATH")
        }
        return KeySetArgument(issuer: issuer, path: path)
    }
}
