// libFuzzer target: template placeholders ({{column|type}}), typed values, and whole template files.
// Property: any input either parses or throws HealthCardError; typed values never crash.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTemplate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let pieces = try? Placeholder.pieces(of: text) {
        // Every placeholder names a column; literal text never holds an opening {{.
        for case .text(let t) in pieces { precondition(!t.contains("{{"), "text piece holds {{") }
        precondition(
            pieces.allSatisfy { if case .placeholder(let p) = $0 { return !p.column.isEmpty } else { return true } })
    }
    for type in Placeholder.ValueType.allCases { _ = try? Template.typedValue(text, as: type) }
    _ = FHIRDate.isValidDate(text)
    _ = FHIRDate.isValidDateTime(text)
    if let template = try? Template(bytes: bytes, source: "fuzz") {
        var values: [String: String] = [:]
        for column in template.columns { values[column.name] = "1" }
        _ = template.render(rows: [
            TemplateRow(values: values, source: "fuzz:1"), TemplateRow(values: values, source: "fuzz:2"),
        ], now: 1_700_000_000)
    }
    return 0
}
