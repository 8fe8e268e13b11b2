// libFuzzer target: what `shl audit` and `verify` read from outside for links: access-log lines (nginx combined,
// Apache common/combined) through `SHLAudit` and `AccessLogLine`, gzip data through `GzipStream`, and FHIR content
// through `SharedBundleCheck`.
// Properties: a parsed line's path has no '?', its status is 100...599 and its bytes are not negative; the audit
// counts every line and keeps no more accesses than it read lines; the Bundle check always says what it saw.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAccessLog(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var audit = SHLAudit(issuer: "https://clinic.example.org/shc", maxAccesses: 64)
    let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    for line in lines {
        if let parsed = AccessLogLine.parse(line) {
            precondition(!parsed.path.contains("?") && (100...599).contains(parsed.status) && parsed.bytes >= 0)
            _ = parsed.parameter("recipient")
        }
        audit.add(line: line)
    }
    precondition(audit.lines == lines.count, "a line was not counted")
    precondition(audit.links.reduce(0) { $0 + $1.accesses.count } <= min(lines.count, 64), "more accesses than lines")
    _ = AccessLogLine.formDecode(String(decoding: bytes, as: UTF8.self))
    if let stream = try? GzipStream() {
        var out = 0
        try? stream.feed(bytes) { out += $0.count }
    }
    let checked = SharedBundleCheck.check(bytes)
    precondition(!checked.summary.isEmpty, "the Bundle check said nothing")
    return 0
}
