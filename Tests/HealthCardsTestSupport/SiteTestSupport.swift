import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite

/// Helpers for the key lifecycle tests (rotation, x5c, revocation, site, HSM): they drive the real CLI.
package enum SiteTestSupport {
    package static let issuer = "https://issuer.example.org"
    package static let templates = VerifyFixtures.repoRoot.appendingPathComponent("templates")

    /// Runs `healthcards ARGS` and records stderr when the status is not the expected one.
    @discardableResult
    package static func cli(_ arguments: [String], expect status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> TestSupport.Run
    {
        let run = try TestSupport.cli(arguments)
        #expect(
            run.status == status, "healthcards \(arguments.first ?? ""): \(run.stderr)", sourceLocation: sourceLocation)
        return run
    }

    /// Issues the vaccination sample CSV (patients P-1001…) signed by `key`, without QR images.
    @discardableResult
    package static func issueSample(
        key: String, out: URL, nbf: String = "1700000000", extra: [String] = [], expect status: Int32 = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> TestSupport.Run {
        try cli(
            [
                "issue", "--issuer", issuer, "--key", key, "--template",
                templates.appendingPathComponent("covid19-vaccination.json").path,
                "--out", out.path, "--nbf", nbf, "--no-qr", "--quiet",
            ] + extra
                + [templates.appendingPathComponent("covid19-vaccination.sample.csv").path],
            expect: status, sourceLocation: sourceLocation)
    }

    /// The JWS of `out/cards/<id>.smart-health-card`.
    package static func jws(in out: URL, id: String) throws -> String {
        let card = try JSONParser.parse(
            try VerifyFixtures.bytes(BatchTestSupport.cardFile(out, id: id)))
        return try #require(card["verifiableCredential"]?[0]?.stringValue)
    }

    /// The kid in a JWS header.
    package static func kid(of jws: String) throws -> String {
        let header = try #require(Base64URL.decode(String(jws.prefix { $0 != "." })))
        return try #require(try JSONParser.parse(header)["kid"]?.stringValue)
    }

    /// A new key made by `healthcards keygen`; returns its path and kid.
    package static func keygen(_ name: String, in dir: URL) throws -> (path: String, kid: String) {
        let path = dir.appendingPathComponent(name).path
        let run = try cli(["keygen", "--out", path])
        return (path, run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    package static func json(_ path: String) throws -> JSONValue {
        try JSONParser.parse(try VerifyFixtures.bytes(URL(fileURLWithPath: path)))
    }

    package static func bytes(_ path: String) throws -> [UInt8] { try VerifyFixtures.bytes(URL(fileURLWithPath: path)) }

    /// Runs `openssl ARGS` in `dir`; records a failure with its stderr.
    @discardableResult
    package static func openssl(_ arguments: [String], in dir: URL) throws -> TestSupport.Run {
        let run = try TestSupport.run("/usr/bin/openssl", arguments, cwd: dir)
        #expect(run.status == 0, "openssl \(arguments.joined(separator: " ")): \(run.stderr)")
        return run
    }

    /// Makes an X.509 chain for the signing key `keyPath` exactly as docs/operations.md shows: a P-256
    /// CA, and a leaf for the key with SAN URI = iss, keyUsage digitalSignature, CA:FALSE, signed by
    /// the CA. Returns the paths of chain.pem (leaf, then CA), leaf.crt and ca.crt in `dir`.
    package static func makeChain(forKey keyPath: String, in dir: URL, san: String = issuer, name: String = "chain")
        throws -> (chain: String, leaf: String, ca: String)
    {
        let ca = "\(name)-ca.crt"
        let caKey = "\(name)-ca.key"
        try openssl(
            [
                "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", caKey, "-out", ca, "-days", "3650", "-subj", "/CN=Example SHC Issuer CA",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: dir)
        try openssl(
            ["req", "-new", "-key", keyPath, "-subj", "/CN=Example SHC Issuer", "-out", "\(name)-leaf.csr"], in: dir)
        try TestSupport.write(
            """
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature
            subjectAltName=URI:\(san)
            subjectKeyIdentifier=hash
            authorityKeyIdentifier=keyid,issuer

            """, to: "\(name)-leaf.ext", in: dir)
        try openssl(
            [
                "x509", "-req", "-in", "\(name)-leaf.csr", "-CA", ca, "-CAkey", caKey, "-CAcreateserial",
                "-days", "365", "-sha256", "-extfile", "\(name)-leaf.ext", "-out", "\(name)-leaf.crt",
            ], in: dir)
        let leafText = try String(contentsOf: dir.appendingPathComponent("\(name)-leaf.crt"), encoding: .utf8)
        let caText = try String(contentsOf: dir.appendingPathComponent(ca), encoding: .utf8)
        let chain = try TestSupport.write(leafText + caText, to: "\(name).pem", in: dir)
        return (chain, dir.appendingPathComponent("\(name)-leaf.crt").path, dir.appendingPathComponent(ca).path)
    }

    /// The DER of a PEM certificate file as standard base64 (what x5c holds), computed by openssl.
    package static func derBase64(ofCertificate path: String, in dir: URL) throws -> String {
        let der = dir.appendingPathComponent(UUID().uuidString + ".der").path
        try openssl(["x509", "-in", path, "-outform", "DER", "-out", der], in: dir)
        return try Data(contentsOf: URL(fileURLWithPath: der)).base64EncodedString()
    }
}

/// An issuer site with a CRL for one key, and cards issued into `out` with a rid secret: what the revocation
/// tests (`RevokeTests`, `SiteLockTests`) set up, each in its own way, and then revoke from.
package struct RevocationSite {
    package let dir: URL
    /// The signing key file.
    package let key: String
    package let kid: String
    /// The rid secret file the cards were issued with.
    package let secret: String
    package let site: URL
    package let out: URL

    package init(dir: URL, key: String, kid: String, secret: String, site: URL, out: URL) {
        self.dir = dir
        self.key = key
        self.kid = kid
        self.secret = secret
        self.site = site
        self.out = out
    }

    package var keySetPath: String { site.path + "/.well-known/jwks.json" }
    package var crlPath: String { site.path + "/.well-known/crl/\(kid).json" }
    /// The issue run's report.
    package var report: String { out.path + "/report.ndjson" }

    package func crl() throws -> CRL { try CRL(bytes: try SiteTestSupport.bytes(crlPath), source: crlPath) }
    package func crlVersion() throws -> Int? {
        try JWKS(bytes: try SiteTestSupport.bytes(keySetPath), source: "jwks").key(kid: kid)?.crlVersion
    }
    /// The arguments of `revoke` with the site, key, secret and the run's report, plus `extra`.
    package func revokeArguments(_ extra: [String]) -> [String] {
        ["revoke", "--site", site.path, "--key", key, "--rid-secret", secret, "--report", report] + extra
    }
    /// Runs `revoke` with `revokeArguments(extra)`.
    @discardableResult
    package func revoke(_ extra: [String], expect status: Int32 = 0, sourceLocation: SourceLocation = #_sourceLocation)
        throws -> TestSupport.Run
    {
        try SiteTestSupport.cli(revokeArguments(extra), expect: status, sourceLocation: sourceLocation)
    }
    /// The vc.rid of a patient's card.
    package func rid(of patient: String) throws -> String {
        try #require(
            try TestSupport.payload(of: try SiteTestSupport.jws(in: out, id: patient))["vc"]?["rid"]?.stringValue)
    }
}
