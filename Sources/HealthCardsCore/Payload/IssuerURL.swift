/// The one set of rules for an issuer URL (`iss`, digest section 2; `docs/index.md` L128): what `issue`
/// refuses before signing and what `verify` reports, so the two never disagree.
///
/// `iss` is compared as a string (with the key set's URL, the VCI directory, a site's record), so beyond the
/// spec's rules (https, a host, no trailing `/`, no query or fragment) an issuer writes it in one canonical
/// form: a lowercase DNS host, no default port, no empty or dot segments.
package enum IssuerURL {
    /// What is wrong with an issuer URL.
    package enum Problem: Equatable, Sendable {
        case empty, whitespace, notHTTPS, queryOrFragment, trailingSlash, userInfo, ipAddress, noHost, nonASCIIHost
        case port(String), host(String), longLabel(String), longHost(Int), hyphenLabel(String), uppercaseHost
        case defaultPort, portLeadingZero(String), dotSegment, badEscape, pathCharacter(String)

        /// True for what the spec itself rules out (verifiers reject such a card); false for the canonical form's
        /// rules (the URL works, but iss may be written two ways).
        package var breaksSpec: Bool {
            switch self {
            case .uppercaseHost, .defaultPort, .portLeadingZero, .dotSegment, .ipAddress, .userInfo: return false
            default: return true
            }
        }

        /// The rule code verify reports it with.
        package var code: RuleCode {
            switch self {
            case .notHTTPS: return .issNotHTTPS
            case .trailingSlash: return .issTrailingSlash
            case .empty: return .issMissing
            case _ where !breaksSpec: return .issNotCanonical
            default: return .issMalformed
            }
        }
    }

    /// The first problem of `iss`, or nil for an issuer URL in its canonical form.
    package static func problem(_ iss: String) -> Problem? {
        if iss.isEmpty { return .empty }
        if iss.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) { return .whitespace }
        guard iss.hasPrefix("https://") else { return .notHTTPS }
        if iss.contains("?") || iss.contains("#") { return .queryOrFragment }
        if iss.hasSuffix("/") { return .trailingSlash }
        let rest = Substring(iss.dropFirst("https://".count))
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        if authority.contains("@") { return .userInfo }
        if authority.hasPrefix("[") { return .ipAddress }
        var host = authority
        if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(port),
                (1...65535).contains(value)
            else { return .port(String(port)) }
            // `:0443` is port 443 written another way: one issuer, two strings.
            if value == 443 { return .defaultPort }
            if port.hasPrefix("0") { return .portLeadingZero(String(port)) }
        }
        guard !host.isEmpty else { return .noHost }
        if !host.unicodeScalars.allSatisfy(\.isASCII) { return .nonASCIIHost }
        let hostOK = host.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "."
        }
        guard hostOK, !host.hasPrefix("."), !host.hasSuffix("."), !host.contains("..") else { return .host(String(host)) }
        // An IPv4 literal (10.0.0.5, or a malformed one like 999.999.999.999): no top-level domain is all digits.
        if let last = host.split(separator: ".").last, last.allSatisfy({ $0.isASCII && $0.isNumber }) { return .ipAddress }
        // RFC 1035 section 2.3.4: a label is at most 63 octets, a name at most 253 written without the final dot.
        if let label = host.split(separator: ".").first(where: { $0.utf8.count > 63 }) { return .longLabel(String(label)) }
        if host.utf8.count > 253 { return .longHost(host.utf8.count) }
        if let label = host.split(separator: ".").first(where: { $0.hasPrefix("-") || $0.hasSuffix("-") }) {
            return .hyphenLabel(String(label))
        }
        if host.unicodeScalars.contains(where: { ("A"..."Z").contains($0) }) { return .uppercaseHost }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        where segment.isEmpty || segment == "." || segment == ".." {
            return .dotSegment
        }
        let scalars = Array(path.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            if c == "%" {
                guard i + 2 < scalars.count, scalars[i + 1].properties.isASCIIHexDigit,
                    scalars[i + 2].properties.isASCIIHexDigit
                else { return .badEscape }
                i += 3
                continue
            }
            let plain =
                c.isASCII
                && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c)
                    || "-._~!$&'()*+,;=:@/".unicodeScalars.contains(c))
            guard plain else { return .pathCharacter(String(c)) }
            i += 1
        }
        return nil
    }

    /// What is wrong, as the end of a sentence that starts with the URL: "is not https", "ends with '/'…".
    package static func sentence(_ problem: Problem, iss: String) -> String {
        let rest = iss.hasPrefix("https://") ? Substring(iss.dropFirst(8)) : Substring(iss)
        let host = String(rest.prefix { $0 != "/" && $0 != ":" })
        switch problem {
        case .empty: return "is empty"
        case .whitespace: return "contains spaces or control characters"
        case .notHTTPS: return "is not https"
        case .queryOrFragment: return "has a query or fragment"
        case .trailingSlash:
            return "ends with '/'; verifiers would fetch '…//.well-known/jwks.json'; use \(Quote.text(iss.trimmingSuffix("/")))"
        case .userInfo: return "holds a user name or password, which every card would publish; remove the part before '@'"
        case .ipAddress: return "has an IP address as host; verifiers and the VCI directory expect a DNS name"
        case .noHost: return "has no host"
        case .nonASCIIHost: return "has a non-ASCII host; write it in its ASCII (punycode, xn--…) form"
        case .port(let port):
            return "has port \(Quote.text(port)), which is not a number from 1 to 65535"
        case .portLeadingZero(let port):
            return "has port \(Quote.text(port)) with a leading zero; write it without, so that iss is always the same string"
        case .host(let host): return "has host \(Quote.text(host)), which is not a DNS name (letters, digits, '-' and '.')"
        case .longLabel(let label):
            return "has a host label of \(label.utf8.count) characters (\(Quote.text(label, limit: 20))); DNS allows at most 63 per label"
        case .longHost(let count): return "has a host of \(count) characters; DNS allows at most 253"
        case .hyphenLabel: return "has host \(Quote.text(host)): a DNS label cannot start or end with '-'"
        case .uppercaseHost:
            return "has capital letters in its host; write it in lowercase (\(Quote.text(host.lowercased()))) so that iss is always the same string"
        case .defaultPort: return "names the default port 443; leave the port out so that iss is always the same string"
        case .dotSegment: return "has an empty, '.' or '..' segment in its path; write the path in its plain form"
        case .badEscape: return "has a '%' that does not start a %XX escape"
        case .pathCharacter(let c): return "has \(Quote.text(c)) in its path, which a URL path cannot hold unescaped"
        }
    }
}
