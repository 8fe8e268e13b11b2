// libFuzzer target (structure-aware): a FHIR Bundle built from the fuzzer's bytes (dates, zones, codes,
// references, statuses, member types bent; ids, narratives and absolute references for minimization to
// undo) issued by CardIssuer: minimized, validated, signed, read back, QR and PNG (now and then).
// Properties: never traps; a card issue signs is one verify accepts (no error finding at the same time).
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIssue(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let problems = FuzzShapes.checkIssue(Array(UnsafeBufferPointer(start: data, count: size)))
    precondition(problems.isEmpty, problems.joined(separator: "; "))
    return 0
}
