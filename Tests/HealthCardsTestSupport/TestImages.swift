import Foundation

/// Images made by hand for the QR readers, independent of the encoders under test.
package enum TestImages {
    /// A white 8-bit gray PNG, written by hand (zlib stream of stored blocks) so no encoder under test is involved.
    package static func whitePNG(side: Int) -> [UInt8] {
        func be32(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) } }
        func crc32(_ bytes: [UInt8]) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for b in bytes {
                c ^= UInt32(b)
                for _ in 0..<8 { c = c & 1 == 1 ? (c >> 1) ^ 0xEDB8_8320 : c >> 1 }
            }
            return ~c
        }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return be32(UInt32(data.count)) + body + be32(crc32(body))
        }
        let raw = (0..<side).flatMap { _ in [0] + [UInt8](repeating: 255, count: side) }  // filter 0 + pixels
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        let len = UInt16(raw.count)  // one stored block; side 64 gives 4160 bytes
        let zlib: [UInt8] = [0x78, 0x01, 0x01, UInt8(len & 0xFF), UInt8(len >> 8), UInt8(~len & 0xFF), UInt8(~len >> 8)]
            + raw + be32(b << 16 | a)
        let ihdr = be32(UInt32(side)) + be32(UInt32(side)) + [8, 0, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", zlib) + chunk("IEND", [])
    }
}
