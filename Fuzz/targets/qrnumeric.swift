// libFuzzer target: the numeric shc:/ segment decoder (QRNumeric.jws(fromDigits:)).
// Property: digits that decode re-encode to the same digits.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQRNumeric(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let jws = try? QRNumeric.jws(fromDigits: Substring(text).utf8) {
        guard let digits = try? QRNumeric.digits(jws) else { fatalError("decoded JWS text does not encode again") }
        precondition(digits == Array(text.utf8), "digits do not round-trip")
    }
    return 0
}
