// Reads a SMART Health Card's QR image back into its shc:/ text with HealthCardsQRReading (zbar, then
// zxing-cpp; PNG or JPEG), as a verifier does with an image it was sent: the image is made in memory with
// HealthCardsQR from the spec's example 00 JWS, decoded, and the text verified against the spec's key set.
// Public API only; nothing is written. Exits 0 when the text read is exactly the spec's numeric QR text, the
// symbol is version 18 at error correction L, and the card verifies.
import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ what: String) -> Never {
    print("qr-read-back: \(what)")
    exit(1)
}

/// The repository's root: the working folder when it holds Tests/Fixtures, else found from this file's place.
let root: String = {
    if access("Tests/Fixtures", F_OK) == 0 { return "." }
    return "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
}()
let spec = root + "/Tests/Fixtures/spec-examples"
let now: Int64 = 1_700_000_000  // 2023-11-14, seconds since 1970: after example 00 was issued

do {
    var jwsText = String(decoding: try FileIO.read(spec + "/example-00-d-jws.txt"), as: UTF8.self)
    while jwsText.last == "\n" { jwsText.removeLast() }
    let png = try QRImage().png(try QRCode(jws: jwsText))
    print("made a PNG of \(png.count) bytes from a JWS of \(jwsText.utf8.count) characters")

    let symbols = try QRDecoder().decode(image: png)
    print("zbar \(QRDecoder.zbarRuntimeVersion), zxing-cpp \(QRDecoder.zxingBuildVersion): \(symbols.count) symbol(s)")
    guard symbols.count == 1, let symbol = symbols.first else { fail("expected one QR symbol, found \(symbols.count)") }
    let expected = String(decoding: try FileIO.read(spec + "/example-00-f-qr-code-numeric-value-0.txt"), as: UTF8.self)
    print("read \(symbol.text.prefix(24))… (\(symbol.text.utf8.count) characters), version \(symbol.version.map(String.init) ?? "?"), "
        + "ECC \(symbol.errorCorrection?.rawValue ?? "?")")
    guard symbol.text == expected else { fail("the text read differs from the spec's example-00-f-qr-code-numeric-value-0.txt") }
    guard symbol.version == 18, symbol.errorCorrection == .L else { fail("expected version 18 at ECC L") }

    var trust = TrustStore()
    try trust.add(issuer: "https://spec.smarthealth.cards/examples/issuer",
                  jwks: try FileIO.read(spec + "/issuer/.well-known/jwks.json"), now: now)
    let report = HealthCardVerifier(trustStore: trust).verify(qrTexts: [symbol.text], now: now)
    print("verified: \(report.isVerified) (\(report.errorCount) error(s), \(report.warningCount) warning(s))")
    for finding in report.findings { print("  \(finding.code.rawValue) \(finding.severity.rawValue)") }
    guard report.isVerified else { fail("the card read back does not verify") }
} catch {
    fail("\(error)")
}
print("qr-read-back: OK")
