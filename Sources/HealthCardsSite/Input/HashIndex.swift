import HealthCardsCore
import HealthCardsVerify

/// An open-addressing table from 64-bit key hashes to `Int32` values (linear probing, at most 7/8
/// full), for indexing millions of CSV rows by patient: 12 bytes a slot, about half what a
/// `Dictionary<UInt64, Int32>` takes at its 3/4 load, and growth by doubling only.
///
/// The hash 0 marks an empty slot, so a key whose hash is 0 is stored as 1; callers treat equal
/// hashes as "maybe the same key" and compare the keys themselves later anyway.
package struct HashIndex {
    private var keys: [UInt64]
    private var values: [Int32]
    private var mask: Int
    /// Number of keys stored.
    private(set) var count = 0

    /// - Parameter capacity: slots to start with (rounded up to a power of two, at least 16).
    package init(capacity: Int = 1024) {
        var size = 16
        while size < capacity { size <<= 1 }
        keys = [UInt64](repeating: 0, count: size)
        values = [Int32](repeating: 0, count: size)
        mask = size - 1
    }

    private static func stored(_ key: UInt64) -> UInt64 { key == 0 ? 1 : key }

    /// The value for `key`, or nil.
    package func find(_ key: UInt64) -> Int32? {
        let k = Self.stored(key)
        var i = Int(truncatingIfNeeded: k) & mask
        while true {
            let slot = keys[i]
            if slot == k { return values[i] }
            if slot == 0 { return nil }
            i = (i + 1) & mask
        }
    }

    /// Sets the value for `key` (adding it when absent).
    package mutating func set(_ key: UInt64, _ value: Int32) {
        if (count + 1) * 8 > keys.count * 7 { grow() }
        let k = Self.stored(key)
        var i = Int(truncatingIfNeeded: k) & mask
        while keys[i] != 0 && keys[i] != k { i = (i + 1) & mask }
        if keys[i] == 0 { count += 1 }
        keys[i] = k
        values[i] = value
    }

    private mutating func grow() {
        let oldKeys = keys
        let oldValues = values
        keys = [UInt64](repeating: 0, count: oldKeys.count * 2)
        values = [Int32](repeating: 0, count: oldKeys.count * 2)
        mask = keys.count - 1
        for (key, value) in zip(oldKeys, oldValues) where key != 0 {
            var i = Int(truncatingIfNeeded: key) & mask
            while keys[i] != 0 { i = (i + 1) & mask }
            keys[i] = key
            values[i] = value
        }
    }
}
