import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// A small deterministic random stream (SplitMix64) for synthetic test content: the fixture catalogue's
/// names, lots and dates, the bench's synthetic CSV, the tests' reproducible shuffles. The catalogue seeds
/// it from SHA-256 of its seed and a label, so each kind of content has its own stream and adding one
/// never shifts another. Its own arithmetic, not the standard library's `random(in:using:)`, whose
/// algorithm may change between Swift releases: the same seed must give the same catalogue on every
/// toolchain. Never for keys, IVs or anything secret.
package struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    /// A stream for `label` under `seed` (the fixture catalogue's seeding).
    init(seed: UInt64, label: String) {
        let digest = Digest.sha256(Array("healthcards-fixtures/\(seed)/\(label)".utf8))
        state = digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A stream starting from the SplitMix64 state `state` as it is (no hashing): the same state always
    /// gives the same numbers.
    public init(state: UInt64) { self.state = state }

    /// The next 64 random bits (SplitMix64).
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (multiply-high: no modulo bias worth speaking of for these small bounds).
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// A number in `range`.
    mutating func int(in range: ClosedRange<Int>) -> Int { range.lowerBound + below(range.count) }

    /// One element of `items`.
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }

    /// `count` characters from `alphabet`.
    mutating func string(_ count: Int, from alphabet: String) -> String {
        let characters = Array(alphabet)
        return String((0..<count).map { _ in characters[below(characters.count)] })
    }
}
