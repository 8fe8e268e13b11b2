import HealthCardsCore
import HealthCardsVerify

/// Builds the entries of a published key set from keys and certificate chains (digest section 7).
package enum PublishedKeys {
    /// A certificate chain and where it came from (for messages).
    public struct Chain: Sendable {
        public var chain: X509Chain
        public var source: String
        public init(_ chain: X509Chain, source: String) {
            self.chain = chain
            self.source = source
        }
    }

    /// One JWK entry per key, in order, duplicates (same kid) dropped. A key certified by chains gets
    /// one entry per chain, identical except for `x5c` (the spec's rule for several certificates of
    /// one key); a key without a chain gets one entry without `x5c`.
    /// - Throws: `HealthCardError(.configuration)` when a chain's leaf certificate holds none of the keys: an
    ///   `x5c` must certify the very key that signs.
    public static func entries(keys: [JWK], chains: [Chain]) throws -> [JWK] {
        var unique: [JWK] = []
        for key in keys where !unique.contains(where: { $0.kid == key.kid }) { unique.append(key) }
        for item in chains where !unique.contains(where: { item.chain.certifies($0) }) {
            throw HealthCardError(
                .configuration,
                "the leaf certificate of \(item.source) (\(item.chain.leafSubject)) holds the "
                    + "key with kid \(item.chain.leafJWK.kid), which is not among the keys given "
                    + "(\(unique.map(\.kid).joined(separator: ", "))); x5c must certify the signing key itself. "
                    + "Check the chain file, or issue a certificate for this key")
        }
        var out: [JWK] = []
        for key in unique {
            let mine = chains.filter { $0.chain.certifies(key) }
            if mine.isEmpty {
                out.append(key)
            } else {
                for item in mine {
                    var entry = key
                    entry.x5c = item.chain.x5c
                    out.append(entry)
                }
            }
        }
        return out
    }

    /// Chains whose leaf has subjectAltName URIs and none equals `issuer` (the spec expects the
    /// leaf's SAN URI to be `iss`), with a sentence for each.
    public static func issuerMismatches(_ chains: [Chain], issuer: String) -> [String] {
        chains.compactMap { item in
            let uris = item.chain.leafSubjectAltNameURIs
            if uris.contains(issuer) { return nil }
            let found =
                uris.isEmpty ? "has no subjectAltName URI" : "has subjectAltName URI(s) \(uris.joined(separator: ", "))"
            return "the leaf certificate of \(item.source) \(found); verifiers expect URI:\(issuer) (the iss)"
        }
    }
}
