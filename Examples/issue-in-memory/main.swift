// Issues a SMART Health Card from a FHIR Bundle held in memory, as a server or an app issuing one card at a
// time does: a PKCS#8 key (the repository's public demo key), a fixed clock, Core's `CardIssuer`; then verifies
// the card with the Verify layer against the key's own key set, and shows what a Bundle the rules refuse gives:
// an error value with its rule code, kind and place. Public API only. Exits 0 when every answer is the expected
// one: the card verifies, and the refused Bundle names IMMUNIZATION_STATUS at its FHIR path.
import HealthCardsCore
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The repository's root: the working folder when it holds keys/ (swift run from the root), else found from
/// this file's place (Examples/issue-in-memory/main.swift).
let root: String = {
    if access("keys", F_OK) == 0 { return "." }
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
    return path
}()

/// A whole file's bytes (the key is small), or exit 1 saying which file.
func read(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else {
        print("issue-in-memory: cannot open \(path)")
        exit(1)
    }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n == 0 { break }
        bytes += buffer[0..<n]
    }
    return bytes
}

func fail(_ what: String) -> Never {
    print("issue-in-memory: \(what)")
    exit(1)
}

// The public demo key (keys/README.md: public test material; a real issuer's key comes from keygen or an HSM).
let keyFile = root + "/keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem"
let key: P256PrivateKey
do { key = try P256PrivateKey(pem: read(keyFile), source: keyFile) } catch { fail("\(error)") }
print("key \(key.publicKey.kid) (\(key.location == .software ? "in memory" : "in a token"))")

// The time: fixed, so that the card and its checks are the same on every run (2023-11-14, seconds since 1970).
let clock = FixedWallClock(1_700_000_000)
let issuerURL = "https://issuer.example.org"
let settings = IssueSettings(issuer: issuerURL, notBefore: 1_699_999_000, typePolicy: .minimal)

// A Bundle as an EHR exports it: ids, a narrative and absolute references; the issuer minimizes it.
let bundleText = """
    {"resourceType":"Bundle","type":"collection","entry":[
     {"fullUrl":"https://ehr.example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1",
      "text":{"status":"generated","div":"<div>Ada Testperson</div>"},
      "name":[{"family":"Testperson","given":["Ada"]}],"birthDate":"1960-04-12"}},
     {"fullUrl":"https://ehr.example.org/fhir/Immunization/i1","resource":{"resourceType":"Immunization","id":"i1",
      "status":"completed","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"207"}]},
      "patient":{"reference":"Patient/p1"},"occurrenceDateTime":"2021-01-15",
      "performer":[{"actor":{"display":"ABC General Hospital"}}],"lotNumber":"0000001"}}]}
    """
let bundle: JSONValue
do { bundle = try JSONParser.parse(Array(bundleText.utf8)) } catch { fail("the example Bundle is not JSON: \(error)") }

let issuer: CardIssuer
do { issuer = try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: clock) } catch {
    fail("\(error)")
}
let card: IssuedCard
do { card = try issuer.issue(bundle: bundle, patientID: "P-1001") } catch { fail("the Bundle was refused: \(error)") }
print("issued a card: JWS of \(card.jws.compact.utf8.count) characters, .smart-health-card file of \(card.fileBytes.count) bytes")

// Verify it as a verifier would: the issuer's key set (its public key only) in a trust store, the card's bytes.
let keySet = JWKS(keys: [JWK(key: key.publicKey)]).fileBytes
var trust = TrustStore()
do { try trust.add(issuer: issuerURL, jwks: keySet, now: clock.nowSeconds()) } catch { fail("\(error)") }
let report = HealthCardVerifier(trustStore: trust).verify(cardFile: card.fileBytes, now: clock.nowSeconds())
for credential in report.credentials {
    print("verified: \(credential.isVerified) (\(credential.errorCount) error(s), \(credential.warningCount) warning(s))")
    for finding in credential.findings {
        print("  \(finding.code.rawValue) \(finding.severity.rawValue) at \(finding.location): \(finding.message)")
    }
}
guard report.isVerified else { fail("the card did not verify") }

// A Bundle the rules refuse: a dose that was not given (status "not-done"). The error says which rule, where.
let refusedText = bundleText.replacing("\"completed\"", with: "\"not-done\"")
do {
    _ = try issuer.issue(bundle: try JSONParser.parse(Array(refusedText.utf8)), patientID: "P-1001")
    fail("a Bundle with a dose not given was signed")
} catch {
    // `issue` and `JSONParser.parse` throw `HealthCardError` by type: no cast.
    for one in error.all {
        print("refused: \(one.reportedCode.rawValue) (\(one.kind)) at \(one.location): \(one.message)")
    }
    guard error.all.contains(where: { $0.code == .immunizationStatus && $0.location.path?.hasPrefix("Bundle.entry[1]") == true })
    else { fail("the refusal did not name IMMUNIZATION_STATUS at the Immunization") }
}
print("issue-in-memory: OK")
