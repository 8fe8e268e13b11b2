import HealthCardsCore
import HealthCardsVerify

/// The folder an issuer publishes at its `iss` URL on a static host (digest sections 7 and 8):
///
///     SITE/.well-known/jwks.json          the JWK Set (current and retired public keys)
///     SITE/.well-known/crl/<kid>.json     one revocation list per key that supports revocation
///     SITE/_headers, SITE/.htaccess,      header rules for common static hosts (see `HostRules`)
///     SITE/healthcards-nginx.conf
///     SITE/healthcards-site.json          the issuer the site is published at (`SiteRecord`; not served)
///
/// The CRL files own the revocation counters: every key set written here (and by `healthcards jwks`
/// into a `.well-known` folder) takes each key's `crlVersion` from the `ctr` of the CRL beside it,
/// so the two can never disagree for long.
public struct IssuerSite: Sendable {
    /// The folder served at `iss`.
    public let root: String

    public init(root: String) {
        var root = root
        while root.count > 1 && root.hasSuffix("/") { root.removeLast() }
        self.root = root
    }

    /// `SITE/.well-known/jwks.json`.
    public var keySetPath: String { root + "/.well-known/jwks.json" }

    /// `SITE/.well-known/crl`.
    public var crlDirectory: String { root + "/.well-known/crl" }

    /// `SITE/.well-known/crl/<kid>.json`.
    public func crlPath(kid: String) -> String { crlDirectory + "/" + kid + ".json" }

    /// The folder whose `<kid>.json` files are the CRLs of the key set at `keySetPath`: `crl` beside it.
    public static func crlDirectory(besideKeySet keySetPath: String) -> String {
        FileIO.parent(of: keySetPath) + "/crl"
    }

    /// The site's revocation lists, `SITE/.well-known/crl/<kid>.json`.
    public var revocationLists: FileRevocationListStore { FileRevocationListStore(directory: crlDirectory) }

    /// Reads `<directory>/<kid>.json`, or nil when there is none.
    /// - Throws: `HealthCardError(.validation)` for a malformed CRL or one whose `kid` differs from its
    ///   file name; `.io` when it exists but cannot be read.
    public static func readCRL(kid: String, in directory: String) throws -> CRL? {
        try FileRevocationListStore(directory: directory).list(kid: kid)
    }

    /// The CRL of `kid` in this site, or nil.
    public func readCRL(kid: String) throws -> CRL? { try revocationLists.list(kid: kid) }

    /// `keys` with each `crlVersion` set to the `ctr` of its CRL in `directory`, or removed when the
    /// key has no CRL there (a `crlVersion` without a CRL would send verifiers to a missing file).
    /// - Throws: as `readCRL(kid:in:)`.
    public static func applyingCRLVersions(to keys: [JWK], crlDirectory directory: String) throws -> [JWK] {
        try keys.map { key in
            var key = key
            key.crlVersion = try readCRL(kid: key.kid, in: directory)?.ctr
            return key
        }
    }

    /// The kids listed in the key set file at `path` (any key type), or an empty list when there is no file.
    /// - Throws: `HealthCardError(.key)` when the file exists but is not a JWK Set.
    public static func publishedKids(keySetAt path: String) throws -> [String] {
        guard FileIO.exists(path) else { return [] }
        let json = try KeySetFile.parse(try FileIO.read(path, maxBytes: InputBudget.cardFileBytes), source: path)
        return (json["keys"]?.arrayValue ?? []).compactMap { $0["kid"]?.stringValue }
    }

    /// Whether a key this site already publishes has a revocation list: the site was laid out with CRLs (or a
    /// key's cards were revoked), so its issuer's cards carry `vc.rid` and a new key needs a list too.
    /// - Throws: `HealthCardError(.key)` for a malformed key set.
    public func publishesRevocationLists() throws -> Bool {
        try Self.publishedKids(keySetAt: keySetPath).contains { FileIO.exists(crlPath(kid: $0)) }
    }

    /// What `publish` did.
    public struct PublishResult: Sendable, Equatable {
        /// Kids whose CRL file was created (empty, `ctr` 1).
        public var createdCRLs: [String] = []
        /// Kids that were in the previous key set and are not in the new one.
        public var removedKids: [String] = []
        /// Files written, in order.
        public var written: [String] = []
    }

    /// Lays out the whole site: CRLs, then `jwks.json`, then the host header rules.
    ///
    /// - Parameters:
    ///   - keys: the JWK entries to publish, in order (several entries may share a kid when a key has
    ///     several certificate chains). Their `crlVersion` is replaced by the CRLs' `ctr`.
    ///   - createCRLs: give every key without a CRL an empty one (`ctr` 1, no rids), so it supports
    ///     revocation from now on. Existing CRLs are never reset or removed.
    ///   - pathPrefix: the path part of `iss` (e.g. `/examples/issuer`, or empty), for the `_headers` file.
    ///   - issuer: the issuer URL to record in `healthcards-site.json` (`SiteRecord`), written last; nil
    ///     keeps the record as it is.
    /// - Throws: `HealthCardError(.validation)` for a malformed existing CRL, `.key` for a malformed
    ///   existing key set, `.configuration` when `issuer` differs from the issuer already recorded (an issuer URL
    ///   never changes: its cards carry it), `.io` when a file cannot be written. Everything is checked
    ///   before anything is written; files are written atomically one by one.
    public func publish(keys: [JWK], createCRLs: Bool, pathPrefix: String = "", issuer: String? = nil) throws
        -> PublishResult
    {
        var result = PublishResult()
        if let issuer, let recorded = try readRecord(), recorded.issuer != issuer {
            throw HealthCardError(
                .configuration,
                "\(root) is the site of \(recorded.issuer) (\(recordPath)), not of \(issuer); an issuer URL never "
                    + "changes, since every card carries it (docs/operations.md). Lay out the new issuer's site in "
                    + "another folder")
        }
        let newKids = keys.map(\.kid)
        result.removedKids = try Self.publishedKids(keySetAt: keySetPath).filter { !newKids.contains($0) }
            .reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        // Every existing CRL is read (and so checked) before anything is written.
        let existing = try Self.applyingCRLVersions(to: keys, crlDirectory: crlDirectory)
        if createCRLs {
            for key in existing where key.crlVersion == nil && !result.createdCRLs.contains(key.kid) {
                let kid = key.kid
                try revocationLists.replace(CRL(kid: kid, ctr: 1))
                result.createdCRLs.append(kid)
                result.written.append(crlPath(kid: kid))
            }
        }
        let published = try Self.applyingCRLVersions(to: keys, crlDirectory: crlDirectory)
        try FileIO.writeAtomically(JWKS(keys: published).fileBytes, to: keySetPath, access: .published)
        result.written.append(keySetPath)
        for file in HostRules.files(pathPrefix: pathPrefix) {
            let path = root + "/" + file.name
            try FileIO.writeAtomically(Array(file.text.utf8), to: path, access: .published)
            result.written.append(path)
        }
        if let issuer {
            // Public (every card carries the issuer) and read by other users (the web team, verify): 0644 like
            // the rest of the site; the host rules keep it from being served.
            try FileIO.writeAtomically(SiteRecord(issuer: issuer).fileBytes, to: recordPath, access: .published)
            result.written.append(recordPath)
        }
        return result
    }
}

/// Edits of a published `jwks.json` at the JSON level, so that keys and members this toolkit does not
/// model (other key types, `x5c`, extra members) are kept exactly.
package enum KeySetFile {
    /// Parses a JWK Set.
    /// - Throws: `HealthCardError(.key)` for text that is not JSON or has no `keys` array.
    public static func parse(_ bytes: [UInt8], source: String) throws -> JSONValue {
        let json: JSONValue
        do { json = try JSONParser.parseFailing(bytes) } catch {
            throw HealthCardError(.key, "\(source) is not JSON: \(error)")
        }
        guard json["keys"]?.arrayValue != nil else {
            throw HealthCardError(.key, #"\#(source) is not a JWK Set: expected {"keys":[...]}"#)
        }
        return json
    }

    /// The `crlVersion` values of the entries with `kid` (one per entry; nil where absent).
    public static func crlVersions(kid: String, in json: JSONValue) -> [Int?] {
        (json["keys"]?.arrayValue ?? []).filter { $0["kid"]?.stringValue == kid }
            .map { $0["crlVersion"]?.numberLexeme.flatMap { Int($0) } }
    }

    /// `json` with `crlVersion` set to `version` on every entry whose kid is `kid`.
    /// - Throws: `HealthCardError(.configuration)` when no entry has that kid.
    public static func settingCRLVersion(_ version: Int, kid: String, in json: JSONValue, source: String) throws
        -> JSONValue
    {
        guard var root = json.objectValue, let keys = root["keys"]?.arrayValue else {
            throw HealthCardError(.key, #"\#(source) is not a JWK Set: expected {"keys":[...]}"#)
        }
        var found = false
        let updated: [JSONValue] = keys.map { entry in
            guard var object = entry.objectValue, object["kid"]?.stringValue == kid else { return entry }
            found = true
            object["crlVersion"] = .integer(Int64(version))
            return .object(object)
        }
        guard found else {
            throw HealthCardError(
                .configuration, code: .keyNotPublished,
                "\(source) does not publish key \(kid); publish it in the site's key set first "
                    + "(a CRL is useless to verifiers without its key)")
        }
        root["keys"] = .array(updated)
        return .object(root)
    }

    /// Pretty JSON with a final newline, as `JWKS.fileBytes` writes.
    public static func bytes(_ json: JSONValue) -> [UInt8] { JSONWriter.pretty(json) + [0x0A] }
}
