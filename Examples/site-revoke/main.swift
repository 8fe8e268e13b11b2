// Lays out an issuer's site with HealthCardsSite (on Core and Verify only: libcrypto, zlib) in a temporary
// folder: the public demo key's key set with an empty revocation list, then revokes one person's cards by their
// rid. Public API only. Exits 0 when the list holds the rid with its counter raised to 2, the key set's
// crlVersion says the same, a verifier's trust store takes both without an error, and revoking again changes
// nothing.
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The temporary folder this program made, removed at the end whatever the outcome.
var temporary = ""

@MainActor func fail(_ what: String) -> Never {
    print("site-revoke: \(what)")
    removeTree(temporary)
    exit(1)
}

/// The repository's root: the working folder when it holds keys/, else found from this file's place.
let root: String = {
    if access("keys", F_OK) == 0 { return "." }
    return "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
}()
/// Removes what this program wrote under its temporary folder, depth first, following no symbolic link.
func removeTree(_ path: String) {
    var info = stat()
    guard !path.isEmpty, lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
        for name in FileIO.list(path) { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}
var template = Array("/tmp/site-revoke-XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fail("cannot make a temporary folder") }
temporary = String(cString: made)
let folder = temporary
defer { removeTree(temporary) }

let issuer = "https://issuer.example.org"
let now: Int64 = 1_700_000_000  // 2023-11-14, seconds since 1970
do {
    let keyFile = root + "/keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem"
    let key = try P256PrivateKey(pem: try FileIO.read(keyFile), source: keyFile)
    let kid = key.publicKey.kid
    let site = IssuerSite(root: folder + "/site")
    let published = try site.publish(keys: [JWK(key: key.publicKey)], createCRLs: true, issuer: issuer)
    print("laid out \(published.written.count) files; new revocation list for \(published.createdCRLs)")
    guard published.createdCRLs == [kid] else { fail("expected a new revocation list for \(kid)") }

    // A person's rid: derived from the issuer's secret (a fixed, public one here), the kid and their id.
    let secret = try RIDSecret(text: "ZXhhbXBsZSByZXZvY2F0aW9uIHNlY3JldCwgbm90IGZvciB1c2U")
    let rid = try RID.derive(secret: secret, kid: kid, patientID: "P-1001")
    let revoked = try site.revoke([CRL.Entry(rid: rid)], kid: kid)
    print("revoked \(rid): \(revoked.changes.map { "\($0.change)" }), ctr \(revoked.ctr), key set rewritten: \(revoked.wroteKeySet)")
    guard revoked.changes.first?.change == .added, revoked.ctr == 2, revoked.wroteCRL, revoked.wroteKeySet else {
        fail("the revocation was not added with ctr 2")
    }

    // Read back as a verifier would fetch them: <iss>/.well-known/jwks.json and crl/<kid>.json.
    let jwks = try FileIO.read(site.keySetPath)
    let crlBytes = try FileIO.read(site.crlPath(kid: kid))
    let crl = try CRL(bytes: crlBytes, source: site.crlPath(kid: kid))
    let version = try JSONParser.parse(jwks)["keys"]?.arrayValue?.first?["crlVersion"]
    print("CRL ctr \(crl.ctr), \(crl.entries.count) rid(s); jwks.json crlVersion \(version?.numberLexeme ?? "none")")
    guard crl.ctr == 2, crl.revokes(rid: rid, nbfSeconds: now), version?.numberLexeme == "2" else {
        fail("the published list and key set do not agree on the revocation")
    }
    var trust = TrustStore()
    let keySet = try trust.add(issuer: issuer, jwks: jwks, crls: [kid: crlBytes], now: now)
    for finding in keySet.findings { print("  \(finding.code.rawValue) \(finding.severity.rawValue)") }
    guard keySet.errorCount == 0 else { fail("the trust store found errors in the published site") }

    let again = try site.revoke([CRL.Entry(rid: rid)], kid: kid)
    print("revoked again: \(again.changes.map { "\($0.change)" }), CRL written: \(again.wroteCRL)")
    guard case .alreadyRevoked = again.changes.first?.change, !again.wroteCRL, again.ctr == 2 else {
        fail("revoking a revoked rid changed the list")
    }
} catch {
    fail("\(error)")
}
print("site-revoke: OK")
