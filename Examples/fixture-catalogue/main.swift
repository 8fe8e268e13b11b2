// Makes the fixture catalogue for verifier developers with HealthCardsFixtures (valid cards of every shape and
// cards broken in one known way each, with the verdict a verifier must reach) in a temporary folder, from a
// seed and a fixed time, then checks the single card files against the Verify layer with the catalogue's own
// key set and revocation list. Public API only. Exits 0 when every one of them gets the manifest's verdict:
// the valid ones verify, each broken one is refused with the codes the manifest lists.
import HealthCardsCore
import HealthCardsFixtures
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The temporary folder this program made, removed at the end whatever the outcome.
var temporary = ""

@MainActor func fail(_ what: String) -> Never {
    print("fixture-catalogue: \(what)")
    removeTree(temporary)
    exit(1)
}

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
var template = Array("/tmp/fixture-catalogue-XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fail("cannot make a temporary folder") }
temporary = String(cString: made)
let folder = temporary + "/catalogue"
defer { removeTree(temporary) }

let issuer = "https://fixtures.example.org"
let now: Int64 = 1_700_000_000  // 2023-11-14, seconds since 1970: every verdict holds at this time
do {
    // A key derived from the seed and the issuer: a public test key, so the catalogue is the same bytes every run.
    let manifest = try FixtureCatalogue.make(.derived(issuer: issuer, now: now, seed: 7), in: folder)
    let valid = manifest.entries.filter { $0.conformance == .valid }.count
    print("catalogue of \(manifest.entries.count) entries (\(valid) valid), kid \(manifest.kid)")

    var trust = TrustStore()
    let site = folder + "/site/.well-known"
    let crl = site + "/crl/\(manifest.kid).json"
    try trust.add(issuer: issuer, jwks: try FileIO.read(site + "/jwks.json"),
                  crls: FileIO.exists(crl) ? [manifest.kid: try FileIO.read(crl)] : [:], now: now)
    let verifier = HealthCardVerifier(trustStore: trust)

    var checked = 0
    for entry in manifest.entries where entry.files.count == 1 && entry.keySets == ["site"] {
        guard let file = entry.files.first, file.hasSuffix(".smart-health-card") else { continue }
        let report = verifier.verify(cardFile: try FileIO.read(folder + "/" + file), name: file, now: now)
        let found = Set(report.findings.map(\.code))
        let missing = entry.errors.filter { !found.contains($0) }
        let right = entry.errors.isEmpty ? report.isVerified : !report.isVerified && missing.isEmpty
        guard right else {
            fail("\(file): expected \(entry.errors.isEmpty ? "verified" : "refused with \(entry.errors.map(\.rawValue))"), "
                + "got verified \(report.isVerified) with \(found.map(\.rawValue).sorted())")
        }
        checked += 1
        if entry.name == "bad-signature" || entry.errors.isEmpty && checked < 3 {
            print("  \(file): \(entry.errors.isEmpty ? "verified" : "refused, \(entry.errors.map(\.rawValue))")")
        }
    }
    print("\(checked) card files got the manifest's verdict")
    guard checked >= 10 else { fail("expected at least 10 single card files in the catalogue, found \(checked)") }
} catch {
    fail("\(error)")
}
print("fixture-catalogue: OK")
