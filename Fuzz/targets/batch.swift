// libFuzzer target (structure-aware): the batch worker path, one record in: a patient's CSV rows with the
// COVID-19 template, or one NDJSON Bundle line, built and bent from the fuzzer's bytes, issued by
// BatchIssuer with one worker (into a scratch folder), sometimes run twice so the second run resumes.
// Properties: the run never stops or traps; the one record is reported issued or rejected, on one report
// line; an issued card verifies.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBatch(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let problems = FuzzShapes.checkBatch(
        Array(UnsafeBufferPointer(start: data, count: size)),
        templatePath: "templates/covid19-vaccination.json")
    precondition(problems.isEmpty, problems.joined(separator: "; "))
    return 0
}
