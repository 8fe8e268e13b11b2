@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

// libFuzzer target: CSVReader (RFC 4180 records, BOM, line ends, UTF-8 checks) over arbitrary bytes.
// Property: any input either reads or throws HealthCardError; a record read again from its byte
// offset gives the same fields.
#if canImport(Glibc)
    import Glibc
#endif

/// One scratch file per process (in /dev/shm when present), rewritten for each input and removed at exit.
nonisolated(unsafe) var scratchFile: Int32 = -1
nonisolated(unsafe) var scratchPath = ""

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if scratchFile < 0 {
        let folder = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        scratchPath = "\(folder)/healthcards-fuzz-csv-\(getpid()).csv"
        scratchFile = open(scratchPath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        precondition(scratchFile >= 0, "cannot create \(scratchPath)")
        atexit { unlink(scratchPath) }
    }
    _ = ftruncate(scratchFile, 0)
    var written = 0
    while written < size {
        let n = pwrite(scratchFile, data + written, size - written, off_t(written))
        precondition(n > 0, "pwrite failed")
        written += n
    }
    let path = scratchPath
    guard let reader = try? CSVReader(path: path) else { return 0 }
    var records: [CSVReader.Record] = []
    do {
        while let record = try reader.next() { records.append(record) }
    } catch { return 0 }
    for record in records.prefix(8) {
        let again = try! CSVReader(path: path, offset: record.offset, line: record.line)
        guard let reread = try! again.next() else { fatalError("record at offset \(record.offset) not found again") }
        precondition(
            reread.fields == record.fields && reread.line == record.line, "re-read record differs at \(record.offset)")
    }
    return 0
}
