// libFuzzer target: SMART Health Links as `verify` reads them: link text (`SHLinkText.parse`, `SHLCheck`
// on the payload) and link files (`JWE.parts`, `JWE.decrypt` with a fixed key).
// Properties: a link that parses, written again by `SHLink.text`, parses to the same link; no key reaches a
// report; a JWE that splits into parts keeps its first part as the AAD; decrypting never crashes (the IG
// example seed opens with this key, so mutations of it reach the inflate and content paths).
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

/// One key for every input: the IG example's, so the seed `ig-example-file.jwe` decrypts.
let fuzzKey = AES256Key.decode(base64url: "rxTgYlOaKJPFtcEd0qcceN8wEU4p94SqAwIWQe6uX7Q")!

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSHL(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let link = try? SHLinkText.parse(text) {
        precondition(
            (try? SHLinkText.parse(link.text)) == link, "a parsed link does not round-trip through SHLink.text")
    }
    let check = SHLCheck(files: NoSHLFiles(), now: 1_700_000_000, checker: JWSCheck(now: 1_700_000_000))
    for report in check.check(text: text, file: "fuzz", ivs: SHLCheck.IVRegister()) {
        precondition(
            report.payload?["key"] == nil || report.payload?["key"] == "(not shown)", "a key reached the report")
    }
    let jwe = JWE(compact: text)
    if let parts = try? jwe.parts() {
        precondition(parts.aad == Array(text.utf8.prefix { $0 != UInt8(ascii: ".") }), "the AAD is not the first part")
        do { _ = try jwe.decrypt(key: fuzzKey) } catch {
            _ = error.description
        }
    }
    return 0
}
