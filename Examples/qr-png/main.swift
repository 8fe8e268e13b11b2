// Makes the QR image of a SMART Health Card in memory with HealthCardsQR (libqrencode, libpng): the spec's
// example 00 JWS in, one QR symbol and its PNG bytes out. Public API only; nothing is written. Exits 0 when the
// answers are the spec's: the symbol has the version of the spec's own QR (read from its SVG's size), and the
// PNG is that symbol drawn at the default scale with its quiet zone.
import HealthCardsCore
import HealthCardsQR

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ what: String) -> Never {
    print("qr-png: \(what)")
    exit(1)
}

/// The repository's root: the working folder when it holds Tests/Fixtures, else found from this file's place.
let root: String = {
    if access("Tests/Fixtures", F_OK) == 0 { return "." }
    return "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
}()
let spec = root + "/Tests/Fixtures/spec-examples"

do {
    var jwsText = String(decoding: try FileIO.read(spec + "/example-00-d-jws.txt"), as: UTF8.self)
    while jwsText.last == "\n" { jwsText.removeLast() }
    let images = try CardImages(jws: JWS(compact: jwsText), settings: QRSettings())
    guard images.codes.count == 1, images.pngs.count == 1, let code = images.codes.first else {
        fail("expected one QR for a JWS of \(jwsText.utf8.count) characters, got \(images.codes.count)")
    }
    print("JWS of \(jwsText.utf8.count) characters: QR version \(code.version), \(code.size)×\(code.size) modules")

    // The spec's QR of the same JWS: its SVG's viewBox is the symbol's modules plus a quiet zone of 4 each side.
    let svg = String(decoding: try FileIO.read(spec + "/example-00-g-qr-code-0.svg"), as: UTF8.self)
    guard let box = svg.firstRange(of: "viewBox=\"0 0 "),
        let side = Int(svg[box.upperBound...].prefix { $0.isNumber })
    else { fail("the spec's SVG has no viewBox") }
    print("the spec's QR: \(side - 8)×\(side - 8) modules (version \((side - 8 - 17) / 4))")
    guard code.size == side - 8, code.version == (code.size - 17) / 4, code.version <= QRCode.maxVersion else {
        fail("version \(code.version) differs from the spec's QR")
    }

    // The PNG: signature, then IHDR's width and height (big-endian) at bytes 16...23.
    let png = images.pngs[0]
    let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    func be32(_ at: Int) -> Int { png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
    let pixels = (code.size + 2 * 4) * QRImage.defaultScale
    print("PNG of \(png.count) bytes, \(be32(16))×\(be32(20)) pixels (libpng \(QRImage.libpngRuntimeVersion))")
    guard png.count > 24, Array(png[0..<8]) == signature, be32(16) == pixels, be32(20) == pixels else {
        fail("the PNG is not \(pixels)×\(pixels) pixels")
    }
} catch {
    fail("\(error)")
}
print("qr-png: OK")
