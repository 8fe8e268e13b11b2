import HealthCardsCore
import HealthCardsVerify

/// What `healthcards site --issuer URL` records about an issuer site: `SITE/healthcards-site.json`,
/// `{"issuer":"https://…"}` (pretty JSON, final newline).
///
/// The issuer is public (every card carries it as `iss`), but this file is the toolkit's own bookkeeping,
/// not something verifiers fetch: it sits at the site root beside `.well-known/`, not in it, and the host
/// rules `site` writes (`HostRules`) refuse to serve it. It is how `verify --jwks SITE` knows whose keys
/// the site's `jwks.json` holds, and how `issue --site SITE` catches a mistyped `--issuer`.
public struct SiteRecord: Sendable, Equatable {
    /// The record's file name at the site root.
    public static let fileName = "healthcards-site.json"

    /// The issuer URL (`iss`) the site is published at.
    public var issuer: String

    public init(issuer: String) { self.issuer = issuer }

    /// Parses a record.
    /// - Throws: `HealthCardError(.configuration)` for text that is not `{"issuer":"https://…"}` with an issuer URL
    ///   `Payload.validateIssuer` accepts (the file is written by `site`; anything else was edited by hand).
    public init(bytes: [UInt8], source: String) throws {
        let remedy = "it is written when the site is laid out with its issuer URL; lay the site out again to rewrite it"
        guard let json = try? JSONParser.parse(bytes), let issuer = json["issuer"]?.stringValue else {
            throw HealthCardError(.configuration, "\(source) is not a site record {\"issuer\":\"https://…\"}; \(remedy)")
        }
        do { try Payload.validateIssuer(issuer) } catch {
            // The issuer rule's own code (ISS_NOT_HTTPS, ISS_TRAILING_SLASH, …), not the general one.
            throw HealthCardError(.configuration, "\(source): \(error.text); \(remedy)", code: error.code)
        }
        self.issuer = issuer
    }

    /// The file's bytes: `{"issuer": "…"}` pretty-printed with a final newline.
    public var fileBytes: [UInt8] { JSONWriter.pretty(.object(["issuer": .string(issuer)])) + [0x0A] }
}

extension IssuerSite {
    /// `SITE/healthcards-site.json`.
    public var recordPath: String { root + "/" + SiteRecord.fileName }

    /// The site's record, or nil when `site` was never given `--issuer` for it.
    /// - Throws: `HealthCardError(.configuration)` for a malformed record, `.io` when it cannot be read.
    public func readRecord() throws -> SiteRecord? {
        guard FileIO.exists(recordPath) else { return nil }
        return try SiteRecord(bytes: try FileIO.read(recordPath), source: recordPath)
    }

    /// The site folder a key set file belongs to, when it is `SITE/.well-known/jwks.json`.
    public static func containing(keySet path: String) -> IssuerSite? {
        let wellKnown = FileIO.parent(of: path)
        guard FileIO.basename(path) == "jwks.json", FileIO.basename(wellKnown) == ".well-known" else { return nil }
        return IssuerSite(root: FileIO.parent(of: wellKnown))
    }
}

/// An issuer site folder read back by a command that works for its issuer: `issue --site SITE` checks
/// its `--issuer` and signing key against it before a batch; SMART Health Links keep their files in it.
public struct PublishedSite: Sendable {
    /// The folder.
    public let site: IssuerSite
    /// The issuer `site --issuer` recorded.
    public let issuer: String
    /// The kids its `.well-known/jwks.json` publishes, in order.
    public let kids: [String]

    /// Reads the site's record and key set.
    /// - Throws: `HealthCardError(.configuration)` when `root` holds no `.well-known/jwks.json`, records no issuer
    ///   (it was laid out without `--issuer`), or either file is malformed.
    public init(root: String) throws {
        let site = IssuerSite(root: root)
        guard FileIO.isDirectory(site.root), FileIO.exists(site.keySetPath) else {
            throw HealthCardError(
                .configuration, code: .siteNotLaidOut,
                "site \(root) is not an issuer site folder (no .well-known/jwks.json); lay it out with its issuer URL and keys"
            ).about("site")
        }
        guard let record = try site.readRecord() else {
            throw HealthCardError(
                .configuration, code: .siteNotLaidOut,
                "site \(root) records no issuer (no \(SiteRecord.fileName)); lay it out once more with the issuer URL it is "
                    + "published at (and its keys)"
            ).about("site")
        }
        let kids: [String]
        do { kids = try IssuerSite.publishedKids(keySetAt: site.keySetPath) } catch let error as HealthCardError {
            throw HealthCardError(.configuration, error.text)
        }
        self.site = site
        self.issuer = record.issuer
        self.kids = kids
    }

    /// Refuses to sign for this site as `issuer` with the key `kid` unless both are the site's, and, when the
    /// site publishes the key with an `x5c` chain, unless that chain verifies and its leaf is valid at `now`: cards
    /// signed otherwise are rejected by every verifier, which fetches `<iss>/.well-known/jwks.json` (a card whose
    /// key's leaf certificate is not valid is `JWK_X5C_VALIDITY`, an error).
    /// - Parameter now: the signing time, in seconds since 1970.
    /// - Throws: `HealthCardError(.configuration)` naming what differs and what to do; for the chain, the code of
    ///   its rule (`JWK_X5C_CHAIN`, `JWK_X5C_VALIDITY`, …).
    public func checkSigner(issuer: String, kid: String, now: Int64) throws {
        guard issuer == self.issuer else {
            throw HealthCardError(
                .configuration,
                "issuer \(issuer) is not the issuer of site \(site.root), which is published at \(self.issuer) "
                    + "(\(site.recordPath)); verifiers fetch keys from <iss>/.well-known/jwks.json, so these cards would "
                    + "not verify. Give the issuer \(self.issuer), or the site of \(issuer)"
            ).about("issuer")
        }
        guard kids.contains(kid) else {
            throw HealthCardError(
                .configuration, code: .keyNotPublished,
                "the signing key (kid \(kid)) is not in \(site.keySetPath) (it publishes \(kids.isEmpty ? "no key" : kids.joined(separator: ", "))); "
                    + "verifiers would not find it. Publish it first in site \(site.root) of issuer \(self.issuer) "
                    + "(with the keys already there), or sign with a published key")
        }
        let entry = (try? JSONParser.parse(FileIO.read(site.keySetPath)))?["keys"]?.arrayValue?
            .first { $0["kid"]?.stringValue == kid }
        guard let x5c = entry?["x5c"]?.arrayValue?.compactMap(\.stringValue), !x5c.isEmpty else { return }
        let chain: X509Chain
        do { chain = try X509Chain(x5c: x5c, source: "\(site.keySetPath) (key \(kid))") } catch {
            throw HealthCardError(
                .configuration, "\(error.text); every verifier would reject these cards. Publish the key with a whole, valid "
                    + "chain (or without x5c)", code: error.code)
        }
        let leaf = chain.validity[0]
        guard leaf.contains(now) else {
            throw HealthCardError(
                .configuration, code: .jwkX5CValidity,
                "the signing key (kid \(kid)) is published in \(site.keySetPath) with an x5c leaf certificate valid from "
                    + "\(Clock.describe(leaf.notBefore)) to \(Clock.describe(leaf.notAfter)), not now (\(Clock.describe(now))): "
                    + "every verifier would reject these cards (JWK_X5C_VALIDITY). Renew the certificate and publish the new "
                    + "chain, or sign with another published key")
        }
    }
}
