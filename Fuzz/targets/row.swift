// libFuzzer target (structure-aware): one to three CSV rows of one patient for the shipped COVID-19
// template (templates/covid19-vaccination.json; run from the repository root), their dates, zones, codes,
// ids and names bent by the fuzzer's bytes, rendered (typed placeholders, minimization, validation) and issued.
// Properties: never traps; a card issue signs is one verify accepts.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

let template = try? Template(
    bytes: FileIO.read("templates/covid19-vaccination.json"), source: "covid19-vaccination.json")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRow(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let template else { fatalError("run from the repository root: templates/covid19-vaccination.json not found") }
    let problems = FuzzShapes.checkRow(Array(UnsafeBufferPointer(start: data, count: size)), template: template)
    precondition(problems.isEmpty, problems.joined(separator: "; "))
    return 0
}
