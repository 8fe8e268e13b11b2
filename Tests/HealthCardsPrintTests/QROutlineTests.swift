import Foundation
import Testing

import HealthCardsCore
@testable import HealthCardsQR
import HealthCardsQRReading
@testable import HealthCardsPrint
import HealthCardsTestSupport

/// The printed QR code's outlines (`QRSymbol.outlines`) cover exactly the dark modules: filled with the nonzero
/// rule, as Cairo and PDF readers fill them, every module's centre is inside when the module is dark and outside
/// when it is light.
@Suite struct QROutlineTests {
    /// The winding number of the outlines around (px, py): vertical edges crossed by a ray to the right, +1 going
    /// down, -1 going up.
    static func winding(_ loops: [[(x: Int, y: Int)]], _ px: Double, _ py: Double) -> Int {
        var w = 0
        for loop in loops {
            for (i, a) in loop.enumerated() {
                let b = loop[(i + 1) % loop.count]
                guard a.x == b.x, Double(a.x) > px else { continue }
                let (low, high) = (min(a.y, b.y), max(a.y, b.y))
                if Double(low) < py && py < Double(high) { w += b.y > a.y ? 1 : -1 }
            }
        }
        return w
    }

    @Test func outlinesFillExactlyTheDarkModules() throws {
        // Versions 1 to 22 (the SHC range), texts of every length class.
        for length in [3, 40, 200, 500, 900, 1195] {
            let jws = String((0..<length).map { i in Character(UnicodeScalar(UInt8(45 + (i * 7 + length) % 78))) })
            let code = try QRCode(jws: jws)
            let loops = QRSymbol.outlines(code)
            var dark = 0
            for y in 0..<code.size {
                for x in 0..<code.size {
                    let inside = Self.winding(loops, Double(x) + 0.5, Double(y) + 0.5) != 0
                    #expect(inside == code[x, y], "version \(code.version): module (\(x), \(y))")
                    if code[x, y] { dark += 1 }
                }
            }
            // Every loop is closed and rectilinear, with corners only (no point in the middle of a straight side).
            for loop in loops {
                #expect(loop.count >= 4 && loop.count % 2 == 0)
                for (i, a) in loop.enumerated() {
                    let b = loop[(i + 1) % loop.count], c = loop[(i + 2) % loop.count]
                    #expect(a.x == b.x || a.y == b.y)
                    #expect(!(a.x == b.x && b.x == c.x) && !(a.y == b.y && b.y == c.y))
                }
            }
            // Fewer points than the four corners of every dark module.
            #expect(loops.map(\.count).reduce(0, +) < 4 * dark)
        }
    }
}
