/// Values by key, up to `maxBytes` (each value's `size`) and `maxCount` entries; past either it starts again empty,
/// so memory stays bounded whatever is asked for. A value over a quarter of `maxBytes` is not kept. Guarded by a
/// pthread mutex (`Locked`): the request threads share it.
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    let maxBytes: Int
    let maxCount: Int
    private let size: @Sendable (Value) -> Int
    private let state: Locked<(values: [Key: Value], bytes: Int)> = Locked(([:], 0))

    init(maxBytes: Int, maxCount: Int = .max, size: @escaping @Sendable (Value) -> Int) {
        self.maxBytes = maxBytes
        self.maxCount = maxCount
        self.size = size
    }

    /// Setting nil forgets the key.
    subscript(key: Key) -> Value? {
        get { state.withLock { $0.values[key] } }
        set {
            state.withLock { state in
                if let old = state.values.removeValue(forKey: key) { state.bytes -= size(old) }
                guard let value = newValue, size(value) <= maxBytes / 4 else { return }
                if state.bytes + size(value) > maxBytes || state.values.count >= maxCount { state = ([:], 0) }
                state.values[key] = value
                state.bytes += size(value)
            }
        }
    }
}
