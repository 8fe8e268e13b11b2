// libFuzzer target (structure-aware): a well-formed card signed with a fixed key, its claims, dates, time
// zones, codes, references, member types and QR chunk headers bent by the fuzzer's bytes
// (Tests/HealthCardsIssuingTests/FuzzShapes.swift), verified as a .smart-health-card file, a bare JWS and QR texts,
// so every rule runs on hostile values behind a valid signature.
// Properties: never traps; every report prints and its JSON parses again; the unbent card has no error.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCard(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let problems = FuzzShapes.checkCard(Array(UnsafeBufferPointer(start: data, count: size)))
    precondition(problems.isEmpty, problems.joined(separator: "; "))
    return 0
}
