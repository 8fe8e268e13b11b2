import Testing

import HealthCardsCore
import HealthCardsVerify
@testable import HealthCardsSite
import HealthCardsTestSupport

/// The compact structures behind the CSV index (docs/performance.md, "Memory and scale").
@Suite struct BatchIndexMemoryTests {
    @Test func hashIndexFindsEveryKeyThroughGrowth() {
        var index = HashIndex(capacity: 16)
        var generator = SystemRandomNumberGenerator()
        let keys = (0..<5000).map { _ in UInt64.random(in: 2...UInt64.max, using: &generator) }
        for (i, key) in keys.enumerated() { index.set(key, Int32(i)) }
        #expect(index.count == keys.count)
        for (i, key) in keys.enumerated() { #expect(index.find(key) == Int32(i)) }
        #expect(index.find(1) == nil)
        index.set(keys[7], -3)
        #expect(index.find(keys[7]) == -3 && index.count == keys.count)
    }

    @Test func zeroHashIsStoredAsOne() {
        var index = HashIndex()
        index.set(0, 5)
        #expect(index.find(0) == 5)
        #expect(index.find(1) == 5)  // the documented merge: equal hashes are "maybe the same key"
        #expect(index.count == 1)
    }

    @Test func offsetsPastFourGiBComeBackWhole() {
        let wraps: [Int32] = [3, 7]  // rows 3..6 are in the second 4 GiB, rows 7... in the third
        #expect(CSVTemplateInput.offset(low: 100, wraps: wraps, row: 2) == 100)
        #expect(CSVTemplateInput.offset(low: 100, wraps: wraps, row: 3) == (1 << 32) + 100)
        #expect(CSVTemplateInput.offset(low: 0xFFFF_FFFF, wraps: wraps, row: 6) == (1 << 32) + 0xFFFF_FFFF)
        #expect(CSVTemplateInput.offset(low: 9, wraps: wraps, row: 7) == (2 << 32) + 9)
        #expect(CSVTemplateInput.offset(low: 9, wraps: [], row: 1_000_000) == 9)
    }
}
