import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// Slow clients over real sockets: the request deadline covers the whole head and body however slowly it
/// trickles (an idle timeout alone never closes a client that sends a byte a second), and the per-address
/// connection cap keeps one address's slow connections from locking others out.
@Suite struct SlowClientTests {
    /// Sends `bytes` one a second (at most `seconds` of them) until the server closes the connection; returns
    /// how many it sent before the close, or nil when it never closed.
    static func trickle(_ fd: Int32, _ bytes: [UInt8], seconds: Int) -> Int? {
        for (index, byte) in bytes.prefix(seconds).enumerated() {
            var one = byte
            if send(fd, &one, 1, Int32(MSG_NOSIGNAL)) != 1 { return index }
            // A closed connection shows as end of stream (or a reset) within the second.
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pollfd, 1, 1000) > 0 {
                var buffer = [UInt8](repeating: 0, count: 512)
                if recv(fd, &buffer, buffer.count, 0) <= 0 { return index + 1 }
            }
        }
        return nil
    }

    /// One header byte a second, with an idle timeout of 10 s that it never reaches: closed by the 2 s deadline
    /// after about 2 bytes, long before its 12 are sent. The close is the deadline's (the server counts it).
    @Test func aClientSendingAByteASecondIsClosedByTheDeadline() throws {
        let s = try InProcessServer(http: {
            $0.connectionTimeoutSeconds = 10
            $0.requestDeadlineSeconds = 2
        })
        let fd = ServerLimitsTests.connect(from: "127.0.0.1", port: s.port)
        try #require(fd >= 0)
        defer { close(fd) }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: a-slow-client\r\n\r\n".utf8)
        let sent = Self.trickle(fd, request, seconds: 12)
        #expect(sent != nil, "the slow client was never closed")
        #expect((sent ?? 99) <= 6, "closed after \(sent ?? -1) bytes")
        #expect(s.server.connectionsClosedByDeadline == 1)
        // A client that sends its request at once is answered as ever.
        let quick = RawHTTP.exchange("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port)
        #expect(quick?.status == 200)
    }

    /// A body trickled after complete headers is cut off by the same deadline (not per read).
    @Test func aBodyTrickledAfterItsHeadersIsClosedByTheDeadline() throws {
        let s = try InProcessServer(http: {
            $0.connectionTimeoutSeconds = 10
            $0.requestDeadlineSeconds = 2
        })
        let link = try s.create()
        let fd = ServerLimitsTests.connect(from: "127.0.0.1", port: s.port)
        try #require(fd >= 0)
        defer { close(fd) }
        let head = Array("POST /shl/\(link.id) HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n".utf8)
        #expect(head.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == head.count)
        let sent = Self.trickle(fd, Array(#"{"recipient":"slow"}"#.utf8), seconds: 12)
        #expect(sent != nil && (sent ?? 99) <= 6, "closed after \(sent ?? -1) body bytes")
        #expect(try s.store.audit(linkID: link.id).isEmpty)
    }

    /// 40 slow connections from 127.0.0.2 (a cap of 8 per address, 32 in all): 8 are taken, the rest refused, and
    /// a client from 127.0.0.3 is answered while they are open.
    @Test func slowConnectionsFromOneAddressDoNotLockOutAnother() throws {
        let s = try InProcessServer(http: {
            $0.maxConnections = 32
            $0.maxConnectionsPerClient = 8
            $0.connectionTimeoutSeconds = 30
            $0.requestDeadlineSeconds = 30
        })
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        for _ in 0..<40 {
            let fd = ServerLimitsTests.connect(from: "127.0.0.2", port: s.port, timeoutSeconds: 2)
            guard fd >= 0 else { continue }
            _ = "G".withCString { send(fd, $0, 1, Int32(MSG_NOSIGNAL)) }
            slow.append(fd)
        }
        usleep(200_000)
        // The server closes those over the cap at once: their reads end.
        var open = 0
        for fd in slow {
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pollfd, 1, 50) == 0 { open += 1 }
        }
        #expect(open == 8, "\(open) slow connections held")
        let other = RawHTTP.exchange(
            "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", port: s.port, from: "127.0.0.3")
        #expect(other?.status == 200, "another address was locked out")
    }
}
