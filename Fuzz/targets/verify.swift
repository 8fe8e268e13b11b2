// libFuzzer target: what `healthcards verify` parses from outside files: a .smart-health-card file
// (JSON, then every JWS: header, raw DEFLATE, payload, claims, FHIR Bundle), a bare JWS, shc:/ QR texts
// (chunk headers, digit pairs, chunk assembly) and a jwks.json.
// Property: never crashes; a QR text that decodes re-encodes to the same digits.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVerify(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let checker = JWSCheck(keys: [], now: 1_700_000_000)
    _ = CardFile.check(bytes, file: "fuzz", checker: checker)
    var report = CredentialReport(source: .jws, file: "fuzz")
    let text = CardFile.cleanText(bytes, file: "fuzz", findings: &report.findings)
    checker.check(text, into: &report)
    let pieces = bytes.split(separator: 0x0A).prefix(8).map { QRPiece(text: Array($0), file: "fuzz") }
    for piece in pieces {
        guard let jws = piece.jws else { continue }
        guard let digits = try? QRNumeric.digits(jws) else { fatalError("decoded QR text does not encode again") }
        precondition(digits.count == jws.utf8.count * 2)
    }
    _ = QRAssembly.assemble(pieces)
    _ = KeySetCheck.check(bytes: bytes, file: "fuzz", now: 1_700_000_000)
    return 0
}
