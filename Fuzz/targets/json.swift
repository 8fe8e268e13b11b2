// libFuzzer target: JSONParser (strict RFC 8259, ordered members, number lexemes) and the JWK/JWKS readers.
// Property: what parses, written minified and parsed again, is the same value; written again, the same bytes.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let value = try? JSONParser.parse(bytes) {
        let written = JSONWriter.minified(value)
        guard let again = try? JSONParser.parse(written) else { fatalError("minified output does not parse again") }
        precondition(again == value, "round trip changed the value")
        precondition(JSONWriter.minified(again) == written, "writing is not stable")
        _ = JSONWriter.pretty(value)
    }
    if let keys = try? JWKS.publicKeys(jsonFile: bytes, source: "fuzz") {
        let published = JWKS(keys: keys).fileBytes
        guard let parsed = try? JSONParser.parse(published) else { fatalError("JWKS output does not parse") }
        for key in parsed["keys"]?.arrayValue ?? [] {
            precondition(
                key.objectValue?.keys.contains { JWK.privateMembers.contains($0) } == false, "private member published")
        }
    }
    return 0
}
