// libFuzzer target: compact JWS parsing (JWS.parts, base64url without padding).
// Property: a JWS that splits into parts re-encodes to the same compact text.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let parts = try? JWS(compact: text).parts() {
        let rebuilt =
            Base64URL.encode(parts.header) + "." + Base64URL.encode(parts.payload) + "."
            + Base64URL.encode(parts.signature)
        precondition(rebuilt == text, "JWS parts do not re-encode to the input")
        precondition(parts.signingInput == Array(text.utf8.prefix(parts.signingInput.count)))
        _ = try? RawInflate.inflate(parts.payload)
    }
    _ = Base64URL.decode(bytes)
    return 0
}
