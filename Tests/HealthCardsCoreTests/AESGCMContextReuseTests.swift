import Foundation
import HealthCardsCore
import Testing

/// `AESGCM` reuses a key's cipher contexts across messages (only the IV set again): every message sealed or opened
/// on a much-used key, from many threads at once, with opens that fail (wrong tag, altered data) in between, gives
/// exactly what a key object used for the first time gives (a new context, the whole setup).
@Suite struct AESGCMContextReuseTests {
    /// Failures from many threads, behind an NSLock (a pthread mutex ThreadSanitizer sees; not `Mutex`'s futex).
    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [String] = []
        func withLock<R>(_ body: (inout [String]) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&list)
        }
    }

    @Test func reusedContextsGiveWhatNewOnesGive() throws {
        let shared = try AES256Key.random()
        let keyText = shared.base64url
        let wrong = Failures()
        let group = DispatchGroup()
        for thread in 0..<8 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var generator = SystemRandomNumberGenerator()
                for n in 0..<300 {
                    do {
                        let message = (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                            UInt8.random(in: 0...255, using: &generator)
                        }
                        let aad = Array("thread \(thread) message \(n)".utf8)
                        let iv = try AESGCM.randomIV()
                        let sealed = try AESGCM.seal(message, key: shared, iv: iv, aad: aad)
                        // A key object used once: new contexts, the whole setup.
                        let fresh = try #require(AES256Key.decode(base64url: keyText))
                        let expected = try AESGCM.seal(message, key: fresh, iv: iv, aad: aad)
                        if sealed.ciphertext != expected.ciphertext || sealed.tag != expected.tag {
                            wrong.withLock { $0.append("seal \(thread)/\(n)") }
                        }
                        // Opens that fail leave the context fit for the next message.
                        var badTag = sealed.tag
                        badTag[n % badTag.count] ^= 0x01
                        if try AESGCM.open(sealed.ciphertext, tag: badTag, key: shared, iv: iv, aad: aad) != nil {
                            wrong.withLock { $0.append("altered tag opened \(thread)/\(n)") }
                        }
                        if try AESGCM.open(sealed.ciphertext, tag: sealed.tag, key: shared, iv: iv, aad: aad + [0])
                            != nil
                        {
                            wrong.withLock { $0.append("altered aad opened \(thread)/\(n)") }
                        }
                        if try AESGCM.open(sealed.ciphertext, tag: sealed.tag, key: shared, iv: iv, aad: aad) != message
                        {
                            wrong.withLock { $0.append("open \(thread)/\(n)") }
                        }
                        // Another key's contexts are not this key's.
                        let other = try AES256Key.random()
                        if try AESGCM.open(sealed.ciphertext, tag: sealed.tag, key: other, iv: iv, aad: aad) != nil {
                            wrong.withLock { $0.append("other key opened \(thread)/\(n)") }
                        }
                    } catch {
                        wrong.withLock { $0.append("\(thread)/\(n): \(error)") }
                    }
                }
            }
        }
        group.wait()
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
    }
}
