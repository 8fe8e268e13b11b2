// A small batch run with HealthCardsIssuing: the shipped COVID-19 template and its sample CSV (7 doses of 4
// people), the public demo key and a fixed clock, into a temporary folder: a card, a QR image and a printed PDF
// per person, and the report. Then one card is verified with the Verify layer against the key's own key set.
// Public API only. Exits 0 when 4 cards are issued and none rejected, each has its QR and PDF, and Ada's card
// verifies.
import HealthCardsCore
import HealthCardsIssuing
import HealthCardsPrint
import HealthCardsSite
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The temporary folder this program made, removed at the end whatever the outcome.
var temporary = ""

@MainActor func fail(_ what: String) -> Never {
    print("issue-batch: \(what)")
    removeTree(temporary)
    exit(1)
}

/// The repository's root: the working folder when it holds templates/, else found from this file's place.
let root: String = {
    if access("templates", F_OK) == 0 { return "." }
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
var template = Array("/tmp/issue-batch-XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fail("cannot make a temporary folder") }
temporary = String(cString: made)
let out = temporary
defer { removeTree(temporary) }

let issuer = "https://issuer.example.org"
let clock = FixedWallClock(1_700_000_000)  // 2023-11-14, seconds since 1970
do {
    let keyFile = root + "/keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem"
    let key = try P256PrivateKey(pem: try FileIO.read(keyFile), source: keyFile)
    let templateFile = root + "/templates/covid19-vaccination.json"
    let covid = try Template(bytes: try FileIO.read(templateFile), source: templateFile)
    let settings = IssueSettings(issuer: issuer, notBefore: clock.nowSeconds() - 60, typePolicy: .minimal)

    let batch = BatchIssuer(outDir: out, jobs: 2) {
        try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: clock)
    }
    batch.pdf = PDFOptions(settings: PrintSettings(issuerName: "Example Issuer (demo)", today: Clock.todayUTC(clock.nowSeconds())), perCard: true)
    let summary = try batch.run([.csv(path: root + "/templates/covid19-vaccination.sample.csv", template: covid)])
    print("issued \(summary.issued), rejected \(summary.rejected), warnings \(summary.warnings), of \(summary.total)")
    guard summary.issued == 4, summary.rejected == 0, summary.total == 4 else { fail("expected 4 cards issued, none rejected") }

    let cards = FileIO.list(out + "/cards").filter { $0.hasSuffix(".smart-health-card") }.sorted()
    let pngs = FileIO.list(out + "/qr").filter { $0.hasSuffix(".png") }
    let pdfs = FileIO.list(out + "/pdf").filter { $0.hasSuffix(".pdf") }
    print("cards \(cards), \(pngs.count) QR image(s), \(pdfs.count) PDF(s)")
    guard cards.count == 4, pngs.count == 4, pdfs.count == 4 else { fail("expected a card, a QR and a PDF per person") }
    for pdf in pdfs where try FileIO.readPrefix(out + "/pdf/" + pdf, count: 5) != Array("%PDF-".utf8) {
        fail("\(pdf) is not a PDF")
    }

    var trust = TrustStore()
    try trust.add(issuer: issuer, jwks: JWKS(keys: [JWK(key: key.publicKey)]).fileBytes, now: clock.nowSeconds())
    guard let ada = cards.first(where: { $0.contains("P-1001") }) else { fail("no card for P-1001") }
    let report = HealthCardVerifier(trustStore: trust).verify(cardFile: try FileIO.read(out + "/cards/" + ada), now: clock.nowSeconds())
    let doses = report.credentials.first?.payload?["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue?.count ?? 0
    print("\(ada): verified \(report.isVerified), \(doses) Bundle entries (Patient and 3 doses)")
    guard report.isVerified, doses == 4 else { fail("Ada's card does not verify with her three doses") }
} catch {
    fail("\(error)")
}
print("issue-batch: OK")
