// libFuzzer target: PEM key loading (labels, encrypted/public/unsupported keys) through OpenSSL.
// Property: any input either loads a P-256 key or throws HealthCardError(.key); a loaded key has
// 32-byte coordinates.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPEM(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for requirePrivate in [false, true] {
        do {
            let key = try P256Key.load(pem: bytes, source: "fuzz", requirePrivate: requirePrivate)
            precondition(key.x.count == 32 && key.y.count == 32)
            precondition(!requirePrivate || key.hasPrivateKey)
        } catch let error as HealthCardError {
            precondition(error.kind == .key || error.kind == .crypto, "unexpected error kind \(error.kind)")
        } catch {
            fatalError("unexpected error type \(error)")
        }
    }
    _ = PEMLabel.all(in: String(decoding: bytes, as: UTF8.self))
    return 0
}
