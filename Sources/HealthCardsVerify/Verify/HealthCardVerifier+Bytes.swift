import HealthCardsCore

extension HealthCardVerifier {
    /// What `verify(bytes:name:now:)` took the bytes for.
    public enum InputKind: String, Sendable, Equatable {
        /// A `.smart-health-card` file: a JSON object (digest section 5).
        case cardFile
        /// One compact JWS (digest section 1).
        case jws
        /// `shc:/` QR texts, one per line (digest section 6).
        case qrTexts
        /// A SMART Health Link, bare `shlink:/…` or after a viewer URL's `#`.
        case link
    }

    /// Which kind of input `bytes` holds, from its first characters after any white space: `{` a card file,
    /// `shc:/` (any case) QR texts, `shlink:/` or a URL holding `#shlink:/` a link, anything else a JWS.
    public static func kind(of bytes: [UInt8]) -> InputKind {
        let text = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        if text.first == UInt8(ascii: "{") { return .cardFile }
        let head = String(decoding: text.prefix(8), as: UTF8.self).lowercased()
        if head.hasPrefix("shc:/") { return .qrTexts }
        if head.hasPrefix("shlink:/") { return .link }
        // A viewer URL: the link after its `#` (the first 4 KiB are enough for any viewer prefix).
        if head.hasPrefix("https:/") || head.hasPrefix("http:/") {
            let start = String(decoding: text.prefix(4096), as: UTF8.self)
            if start.contains("#shlink:/") { return .link }
        }
        return .jws
    }

    /// Verifies bytes of any kind a verifier app is handed (a downloaded `.smart-health-card`, HealthKit's JWS,
    /// scanned `shc:/` texts, a link), recognised by `kind(of:)`: as `verify(cardFile:)`, `verify(jws:)`,
    /// `verify(qrTexts:)` (one text per line; a final newline and `\r\n` line ends are read) or
    /// `verify(link:files:)`.
    /// - Parameters:
    ///   - bytes: the input (at most `limits.fileBytes` for a JWS or QR text, `limits.input.cardFileBytes` for
    ///     a card file; more is `FILE_TOO_LARGE`).
    ///   - name: what findings are located at; none when nil.
    ///   - files: where a `U` link's file comes from (`InMemorySHLFiles` for bytes the app already holds).
    ///   - now: seconds since 1970 (`Int64`).
    /// - Returns: the report, and the kind the bytes were taken for.
    public func verify(
        bytes: [UInt8], name: String? = nil, files: any SHLFileSource = NoSHLFiles(), now: Int64
    ) -> (kind: InputKind, report: VerificationReport) {
        let kind = Self.kind(of: bytes)
        switch kind {
        case .cardFile:
            return (kind, verify(cardFile: bytes, name: name, now: now))
        case .qrTexts:
            let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: true).map { line in
                String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
            }
            return (kind, verify(qrTexts: lines, now: now))
        case .link:
            return (kind, verify(link: String(decoding: bytes, as: UTF8.self), name: name, files: files, now: now))
        case .jws:
            var text = bytes[...]
            if text.last == 0x0A { text = text.dropLast() }
            if text.last == 0x0D { text = text.dropLast() }
            return (kind, verify(jws: String(decoding: text, as: UTF8.self), name: name, now: now))
        }
    }
}

/// A link file source over files the caller already holds in memory (a verifier app that fetched them itself,
/// a test): the file of each URL, compared exactly; any other URL is `notResolved`.
public struct InMemorySHLFiles: SHLFileSource {
    /// Compact JWE bytes by the URL a link names.
    public var files: [String: [UInt8]]

    public init(_ files: [String: [UInt8]] = [:]) { self.files = files }

    public func file(at url: String) -> SHLFileLookup {
        guard let bytes = files[url] else {
            return .notResolved("no file is held in memory for this link's url")
        }
        guard bytes.count <= JWE.maxCompactBytes else { return .tooLarge(name: url, bytes: bytes.count) }
        return .found(bytes: bytes, name: url, identity: url)
    }
}
