// libFuzzer target: QR images as `verify` reads them (`QRImageCheck.read(image:)` without its file budget):
// the format told by its first bytes, libpng or libjpeg (CJPEG: header size first, memory and scan limits),
// then zbar, zxing-cpp (through the CZXing C++ shim), the enlarging and binarizing passes, the module grid in
// any orientation, Reed–Solomon correction, the bit stream and the symbol checks.
// Properties: never traps; a decoded image has width × height pixels within its budget; every symbol read has
// a version 1…40 or none, segments that concatenate to exactly its bytes or none, and every finding a code.
@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsFixtures

/// A smaller pixel budget than `verify`'s (8192 × 8192) keeps each input fast; the code paths are the same.
let fuzzImagePixels = 1 << 18

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzImage(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let image = try? GrayImage(imageBytes: bytes, maxPixels: fuzzImagePixels) else { return 0 }
    precondition(image.width > 0 && image.height > 0 && image.width * image.height <= fuzzImagePixels, "image size out of budget")
    precondition(image.pixels.count == image.width * image.height, "pixel count does not match the size")
    guard let decoder = try? QRDecoder(), let symbols = try? decoder.decode(image) else { return 0 }
    for symbol in symbols {
        if let version = symbol.version { precondition((1...40).contains(version), "version \(version)") }
        if let segments = symbol.segments { precondition(segments.flatMap(\.data) == symbol.bytes, "segments are not the bytes") }
        let findings = QRImageCheck.symbolFindings(symbol, file: "fuzz", chunk: nil)
        precondition(findings.allSatisfy { !$0.message.isEmpty }, "a finding without a message")
    }
    return 0
}
