/// The public demo key committed in `keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem`.
///
/// Anyone can read that file, so anyone can sign with it: a card signed with it proves nothing. It is
/// recognised by its kid (RFC 7638 thumbprint), not by its file name, so a renamed copy, its public
/// half, a JWK of it or the same key in a token is caught too. `issue`, `jwks` and `site` refuse it
/// unless the issuer is an example host (`isExampleIssuer`).
public enum DemoKey {
    /// The kid of the demo key (a test computes it from the file).
    public static let kid = "WU0BycMG2_eOcNfKJMMiFRaRzqaEk3nD4BPcVRV2_u8"

    /// Domains reserved for examples and local use (RFC 2606, RFC 6761): the host itself or any host
    /// below it.
    static let exampleDomains = ["example.org", "example.com", "example.net", "example", "localhost"]

    /// True when the host of the https URL `issuer` is `example.org`, `example.com`, `example.net`,
    /// `localhost`, a host below one of them, or in the `.example` top-level domain.
    public static func isExampleIssuer(_ issuer: String) -> Bool {
        guard issuer.hasPrefix("https://") else { return false }
        let authority = issuer.dropFirst("https://".count).prefix { $0 != "/" }
        let host = String(authority.prefix { $0 != ":" }).lowercased()
        return exampleDomains.contains { host == $0 || host.hasSuffix("." + $0) }
    }

    /// Refuses the demo key among `kids` unless `issuer` is an example host.
    /// - Parameters:
    ///   - kids: the kids of the keys the command would use or publish.
    ///   - issuer: the issuer URL the command was given, or nil when it was given none.
    ///   - command: the name of what asks (kept for callers; the message does not name it).
    /// - Throws: `HealthCardError(.key)` saying what the key is, why it is refused and how to make a real one.
    public static func check(kids: [String], issuer: String?, command: String) throws {
        guard kids.contains(kid) else { return }
        if let issuer, isExampleIssuer(issuer) { return }
        let why =
            "key \(kid) is the public demo key (keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem): anyone can "
            + "read it and sign with it, so cards it signs prove nothing. It is accepted only for an example issuer "
            + "(example.org, example.com, example.net, localhost, *.example)"
        let found =
            issuer.map { "; the issuer \($0) is not one" }
            ?? "; no issuer was given (give an example issuer such as https://issuer.example.org for a demo)"
        throw HealthCardError(
            .key, code: .keyDemo,
            why + found + ". For a real issuer make a new P-256 key kept private to the issuer "
                + "(or in an HSM: docs/operations.md section 7)")
    }
}
