// Verifies the SMART Health Cards spec's example cards from bytes in memory, as a verifier app does with a
// card it was handed (a file, HealthKit's `HKVerifiableClinicalRecord.jws`, a scanned QR): the spec's key
// set and revocation list go into a trust store, then a card file and a bare compact JWS are verified.
// Public API only; prints each finding's code, severity and location. Exits 0 when every answer is the
// spec's: example 00 verifies as a card file and as a bare JWS, example 03 is revoked by the spec's CRL, a
// changed byte fails. (Example 01 is signed by the key whose example x5c leaf expired before the card was made:
// JWK_X5C_VALIDITY, an error.)
import HealthCardsCore
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The repository's root: the working folder when it holds Tests/Fixtures (swift run from the root), else
/// found from this file's place (Examples/verify-bytes/main.swift).
let root: String = {
    if access("Tests/Fixtures/spec-examples", F_OK) == 0 { return "." }
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
    return path
}()
let spec = root + "/Tests/Fixtures/spec-examples"

/// A whole file's bytes (the fixtures are small), or exit 1 saying which file.
func read(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else {
        print("verify-bytes: cannot open \(path)")
        exit(1)
    }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n == 0 { break }
        bytes += buffer[0..<n]
    }
    return bytes
}

/// Prints a report's verdict and each finding: code, severity, location.
func show(_ title: String, _ report: VerificationReport) {
    for credential in report.reports {
        let which = credential.index.map { " credential \($0)" } ?? ""
        let verdict =
            credential.isVerified
            ? "verified" : (credential.isValid ? "valid, signature \(credential.signature.rawValue)" : "INVALID")
        print("\(title)\(which): \(verdict) (\(credential.errorCount) error(s), \(credential.warningCount) warning(s))")
        for finding in credential.findings {
            let location = finding.location.description
            print("  \(finding.code.rawValue) \(finding.severity.rawValue)\(location.isEmpty ? "" : " at \(location)")")
        }
    }
}

// The spec's issuer, its key set and its one revocation list, read into memory.
let issuer = "https://spec.smarthealth.cards/examples/issuer"
let kid = "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"
let jwks = read(spec + "/issuer/.well-known/jwks.json")
let crl = read(spec + "/issuer/.well-known/crl/\(kid).json")
// A fixed time (2023-11-14), after the examples were issued and before example 03 expires: seconds since 1970.
let now: Int64 = 1_700_000_000

var trust = TrustStore()
do {
    let keySet = try trust.add(issuer: issuer, jwks: jwks, crls: [kid: crl], now: now)
    print("key set of \(issuer): \(keySet.errorCount) error(s), \(keySet.warningCount) warning(s)")
    for finding in keySet.findings {
        print("  \(finding.code.rawValue) \(finding.severity.rawValue) at \(finding.location.description)")
    }
} catch {
    print("verify-bytes: \(error)")
    exit(1)
}
let verifier = HealthCardVerifier(trustStore: trust)

// A .smart-health-card file's bytes.
let card = verifier.verify(cardFile: read(spec + "/example-00-e-file.smart-health-card"), name: "example-00", now: now)
show("example-00 card file", card)

// A bare compact JWS, as HealthKit hands it over (the file's final newline is not part of it).
var jwsText = String(decoding: read(spec + "/example-00-d-jws.txt"), as: UTF8.self)
while jwsText.last == "\n" || jwsText.last == "\r" { jwsText.removeLast() }
let jws = verifier.verify(jws: jwsText, now: now)
show("example-00 JWS", jws)

// Example 03 is the spec's revoked card: its rid is on the CRL.
let revoked = verifier.verify(cardFile: read(spec + "/example-03-e-file.smart-health-card"), now: now)
show("example-03 card file", revoked)

// One character of the signature changed: the signature no longer verifies.
var tampered = Array(jwsText.utf8)
tampered[tampered.count - 2] = tampered[tampered.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
let forged = verifier.verify(jws: String(decoding: tampered, as: UTF8.self), now: now)
show("example-00 JWS, one character changed", forged)

let answers =
    card.isVerified && jws.isVerified && revoked.findings.contains { $0.code == .revoked }
    && forged.findings.contains { $0.code == .sigInvalid } && !forged.isVerified
print(answers ? "verify-bytes: every answer is the spec's" : "verify-bytes: an answer differs from the spec's")
exit(answers ? 0 : 1)
