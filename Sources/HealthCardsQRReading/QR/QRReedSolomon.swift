/// Reed–Solomon error correction of one QR error correction block (ISO/IEC 18004:2015, 7.5.2 and Annex B):
/// codewords over GF(2⁸) with the field polynomial x⁸ + x⁴ + x³ + x² + 1 (0x11D), and a generator polynomial
/// whose roots are α⁰ … α^(n−1) for n error correction codewords.
///
/// `verify` uses it to read the segment headers from a module grid sampled from an image, where a few modules
/// come out wrong (blur, JPEG, perspective); the decoders (zbar, zxing-cpp) correct their own reading but do not
/// report the corrected bit stream. Decoding: syndromes, Berlekamp–Massey for the error locator, Chien search
/// for its roots, Forney for the error values; a block whose errors are not all found is left uncorrected
/// (nil), never guessed at. What comes out is checked again by the caller against the decoder's data.
enum QRReedSolomon {
    /// α^i for i in 0..<510 (doubled, so products need no modulo), and log_α of 1…255.
    private static let tables: (exp: [UInt8], log: [Int]) = {
        var exp = [UInt8](repeating: 0, count: 512)
        var log = [Int](repeating: 0, count: 256)
        var x = 1
        for i in 0..<255 {
            exp[i] = UInt8(x)
            log[x] = i
            x <<= 1
            if x & 0x100 != 0 { x ^= 0x11D }
        }
        for i in 255..<512 { exp[i] = exp[i - 255] }
        return (exp, log)
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        guard a != 0, b != 0 else { return 0 }
        return tables.exp[tables.log[Int(a)] + tables.log[Int(b)]]
    }

    static func divide(_ a: UInt8, _ b: UInt8) -> UInt8 {
        precondition(b != 0, "division by zero in GF(256)")
        guard a != 0 else { return 0 }
        return tables.exp[(tables.log[Int(a)] + 255 - tables.log[Int(b)]) % 255]
    }

    /// α^power for any power ≥ 0.
    static func alphaPower(_ power: Int) -> UInt8 { tables.exp[power % 255] }

    /// p(x) at x, for a polynomial given lowest degree first.
    private static func evaluate(_ p: [UInt8], at x: UInt8) -> UInt8 {
        var result: UInt8 = 0
        for coefficient in p.reversed() { result = multiply(result, x) ^ coefficient }
        return result
    }

    /// The error correction codewords of `data` (as an encoder appends them), for tests: the remainder of
    /// data(x)·x^ecc divided by the generator.
    static func eccCodewords(_ data: [UInt8], ecc: Int) -> [UInt8] {
        // Generator, highest degree first: ∏ (x − α^i).
        var generator: [UInt8] = [1]
        for i in 0..<ecc {
            var next = [UInt8](repeating: 0, count: generator.count + 1)
            for (j, g) in generator.enumerated() {
                next[j] ^= g
                next[j + 1] ^= multiply(g, alphaPower(i))
            }
            generator = next
        }
        var remainder = data + [UInt8](repeating: 0, count: ecc)
        for i in 0..<data.count where remainder[i] != 0 {
            let factor = remainder[i]
            for (j, g) in generator.enumerated() { remainder[i + j] ^= multiply(g, factor) }
        }
        return Array(remainder.suffix(ecc))
    }

    /// `block` (data codewords then `ecc` error correction codewords, as a symbol holds them) with its errors
    /// corrected, and how many codewords were wrong.
    /// - Returns: nil when the block has more errors than can be found (at most ⌊ecc/2⌋), or when what is found
    ///   does not make every syndrome zero.
    static func correct(_ block: [UInt8], ecc: Int) -> (codewords: [UInt8], errors: Int)? {
        let n = block.count
        guard ecc > 0, ecc < n, n <= 255 else { return nil }
        // The codeword at index j is the coefficient of x^(n−1−j). S_i = r(α^i).
        func syndromes(_ r: [UInt8]) -> [UInt8] {
            let reversed = Array(r.reversed())  // lowest degree first
            return (0..<ecc).map { evaluate(reversed, at: alphaPower($0)) }
        }
        let s = syndromes(block)
        if s.allSatisfy({ $0 == 0 }) { return (block, 0) }
        // Berlekamp–Massey: the shortest error locator Λ(x) (lowest degree first) generating the syndromes.
        var locator: [UInt8] = [1]
        var previous: [UInt8] = [1]
        var length = 0
        var shift = 1
        var lastDiscrepancy: UInt8 = 1
        for k in 0..<ecc {
            var discrepancy = s[k]
            if length >= 1 {
                for i in 1...length where i < locator.count { discrepancy ^= multiply(locator[i], s[k - i]) }
            }
            if discrepancy == 0 {
                shift += 1
                continue
            }
            let factor = divide(discrepancy, lastDiscrepancy)
            var updated = locator
            if updated.count < previous.count + shift { updated += [UInt8](repeating: 0, count: previous.count + shift - updated.count) }
            for (i, b) in previous.enumerated() { updated[i + shift] ^= multiply(factor, b) }
            if 2 * length <= k {
                previous = locator
                length = k + 1 - length
                lastDiscrepancy = discrepancy
                shift = 1
            } else {
                shift += 1
            }
            locator = updated
        }
        while locator.count > 1 && locator.last == 0 { locator.removeLast() }
        let degree = locator.count - 1
        guard degree == length, degree >= 1, 2 * degree <= ecc else { return nil }
        // Chien search: an error at power p (index n−1−p) makes Λ(α^−p) zero.
        var positions: [Int] = []
        for p in 0..<n where evaluate(locator, at: alphaPower(255 - p % 255)) == 0 { positions.append(p) }
        guard positions.count == degree else { return nil }
        // Forney (first root α⁰): e = X · Ω(X⁻¹) / Λ'(X⁻¹), Ω = S·Λ mod x^ecc.
        var omega = [UInt8](repeating: 0, count: ecc)
        for (i, si) in s.enumerated() {
            for (j, lj) in locator.enumerated() where i + j < ecc { omega[i + j] ^= multiply(si, lj) }
        }
        var derivative = [UInt8](repeating: 0, count: max(1, locator.count - 1))
        for i in stride(from: 1, to: locator.count, by: 2) { derivative[i - 1] = locator[i] }
        var corrected = block
        for p in positions {
            let x = alphaPower(p), xInverse = alphaPower(255 - p % 255)
            let denominator = evaluate(derivative, at: xInverse)
            guard denominator != 0 else { return nil }
            corrected[n - 1 - p] ^= multiply(x, divide(evaluate(omega, at: xInverse), denominator))
        }
        guard syndromes(corrected).allSatisfy({ $0 == 0 }) else { return nil }
        return (corrected, degree)
    }
}
