import Foundation
import Testing

import HealthCardsCore
import HealthCardsServer
import HealthCardsTestSupport

/// A real `HTTPServer` started in this process on 127.0.0.1 (an ephemeral port) in front of a `LinkService` on a
/// SQLite store in a temporary folder, with a clock the test moves: for what is about sockets (framing, slow
/// clients, connection caps, concurrency), without starting the program.
final class InProcessServer {
    let dir: URL
    let clock: TestClock
    let store: DatabaseLinkStore
    let database: Database
    let publisher: LinkPublisher
    let service: LinkService
    let server: HTTPServer
    let log = MemoryLog()
    let port: UInt16
    let card: [UInt8]
    static let base = "https://links.example.org/shl"

    init(
        db path: String? = nil, http: (inout HTTPServer.Configuration) -> Void = { _ in },
        service configure: (inout LinkService.Configuration) -> Void = { _ in }, passcodeChecks: Int = 2,
        passcodeQueue: Int = 64, writeWaits: Database.WriteWaits = .init()
    ) throws {
        dir = try TestSupport.tempDir("in-process-server")
        clock = TestClock(LinkServiceTests.start)
        database = try Database(
            url: .sqlite(path: path ?? dir.appendingPathComponent("links.db").path), role: .server, create: true,
            maxConnections: 12, writeWaits: writeWaits, now: LinkServiceTests.start)
        store = DatabaseLinkStore(database: database)
        let baseURL = try BaseURL(Self.base)
        publisher = LinkPublisher(store: store, baseURL: baseURL)
        var configuration = LinkService.Configuration(baseURL: baseURL)
        // Every request comes from 127.0.0.1 here: no budget unless a test sets one.
        configuration.requestBudgetPerMinute = 0
        configure(&configuration)
        service = LinkService(
            configuration: configuration, store: store, clock: clock, log: log, passcodeChecksAtOnce: passcodeChecks,
            passcodeQueueLimit: passcodeQueue)
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.port = 0
        httpConfiguration.threads = 4
        http(&httpConfiguration)
        server = HTTPServer(configuration: httpConfiguration, router: Router(routes: service.routes), log: log)
        port = try server.start()
        card = try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))
    }

    deinit {
        server.stop(graceSeconds: 1)
        service.stop()
        database.close()
    }

    func create(_ options: LinkPublisher.Options = .init(), files: [LinkContent]? = nil) throws
        -> LinkPublisher.Created
    {
        try publisher.create(
            files ?? [LinkContent(contentType: JWE.smartHealthCard, bytes: card)], options: options, now: clock.now)
    }

    /// A cheap passcode for tests whose subject is not the hash's cost.
    static func passcode(_ text: String, attempts: Int = 10) -> LinkPublisher.Options {
        var options = LinkPublisher.Options()
        options.passcode = Array(text.utf8).withUnsafeBytes { SecretBytes(copying: $0) }
        options.passcodeFunction = .pbkdf2SHA256(iterations: 1000)
        options.maxAttempts = attempts
        return options
    }
}

/// Raw HTTP/1.1 over a socket, for what a client library would not send (or would hide).
enum RawHTTP {
    struct Answer {
        var status: Int
        var head: String
        var body: [UInt8]
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    /// Sends `request` on a new connection from `source` and reads until the server closes it or `seconds` pass
    /// (send `Connection: close`); nil when nothing came back.
    static func exchange(
        _ request: String, port: UInt16, from source: String = "127.0.0.1", seconds: Int = 5, head: Bool = false
    ) -> Answer? {
        let fd = ServerLimitsTests.connect(from: source, port: port, timeoutSeconds: seconds)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let bytes = Array(request.utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            return nil
        }
        return read(fd)
    }

    /// Reads an answer until the connection closes (or the socket's receive timeout).
    static func read(_ fd: Int32) -> Answer? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while data.count < 1 << 22 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += buffer[0..<n]
        }
        return parse(data)
    }

    static func parse(_ data: [UInt8]) -> Answer? {
        guard let end = (0..<max(0, data.count - 3)).first(where: { data[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) })
        else { return nil }
        let head = String(decoding: data[0..<end], as: UTF8.self)
        guard head.hasPrefix("HTTP/1.1 "), let status = Int(head.dropFirst(9).prefix(3)) else { return nil }
        return Answer(status: status, head: head, body: Array(data[(end + 4)...]))
    }

    /// A POST of a JSON body.
    static func post(_ path: String, _ body: String, close: Bool = true) -> String {
        "POST \(path) HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + (close ? "Connection: close\r\n" : "") + "\r\n" + body
    }
}

/// A value shared by the threads of a test, behind a lock (a class, so that escaping closures can hold it).
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ value: T) { self.value = value }
    func withLock<R>(_ body: (inout T) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
