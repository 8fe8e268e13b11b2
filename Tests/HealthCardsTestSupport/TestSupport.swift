import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite

/// Running the real `healthcards` executable and the independent checker from tests.
package enum TestSupport {
    /// The folder holding the built products (the test bundle sits beside the `healthcards` binary).
    package static let binDir: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("healthcards").path) { return url }
            url.deleteLastPathComponent()
        }
        return VerifyFixtures.repoRoot.appendingPathComponent(".build/debug")
    }()

    package static var healthcards: String { binDir.appendingPathComponent("healthcards").path }

    /// Every report object of a `verify --json` document: key sets, credentials, links, then other inputs.
    package static func allReports(_ document: JSONValue) -> [JSONValue] {
        ["keySets", "credentials", "links", "other"].flatMap { document[$0]?.arrayValue ?? [] }
    }
    package static let checker = VerifyFixtures.shared.appendingPathComponent("conformance/shc_check.py").path

    /// The Python of the virtual environment `make test` makes under the build folder
    /// (`.build/test-venv`, with the checker's packages and `Tests/requirements.txt`); never the system
    /// Python, whose packages Debian manages. `HEALTHCARDS_TEST_PYTHON` overrides it.
    package static let python: String? = {
        if let path = ProcessInfo.processInfo.environment["HEALTHCARDS_TEST_PYTHON"], !path.isEmpty { return path }
        let venv = VerifyFixtures.repoRoot.appendingPathComponent(".build/test-venv/bin/python3").path
        return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
    }()

    /// Whether the independent checker can run: `../shared/conformance/shc_check.py` is beside the
    /// repository and the test Python is there. Tests that run it carry
    /// `.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing)`, so a plain clone shows them
    /// as skipped instead of failing.
    package static let checkerAvailable = FileManager.default.fileExists(atPath: checker) && python != nil

    /// Why checker tests are skipped, shown by `swift test`.
    package static var checkerMissing: Comment {
        if !FileManager.default.fileExists(atPath: checker) {
            return "the independent checker \(checker) is not beside this clone (../shared)"
        }
        return "no test Python at .build/test-venv (run `make test`, which makes it)"
    }
    /// True when the tests (and so the CLI they run) are built with the thread sanitizer (`make sanitize`).
    package static let threadSanitizer = dlsym(nil, "__tsan_init") != nil

    package static let demoKeySource = VerifyFixtures.repoRoot.appendingPathComponent("keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem")

    package struct Run {
        package var status: Int32
        package var stdout: String
        package var stderr: String

        package init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// Runs a program to completion and captures its output. Its environment is this process's, with
    /// `environment` added and the names in `unset` removed.
    package static func run(
        _ executable: String, _ arguments: [String], cwd: URL? = nil, environment: [String: String]? = nil,
        unset: [String] = []
    ) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let cwd { process.currentDirectoryURL = cwd }
        var childEnvironment = ProcessInfo.processInfo.environment
        // `make sanitize`: LeakSanitizer checks each program the tests run (HEALTHCARDS_CHILD_ASAN_OPTIONS), not
        // the test runner, whose Swift Testing tasks and OpenSSL per-thread generators are alive when it exits.
        if let options = childEnvironment["HEALTHCARDS_CHILD_ASAN_OPTIONS"] { childEnvironment["ASAN_OPTIONS"] = options }
        childEnvironment.merge(environment ?? [:]) { $1 }
        for name in unset { childEnvironment[name] = nil }
        process.environment = childEnvironment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                   stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Starts `healthcards ARGS` without waiting, its stdout and stderr going to the files `dir/<log>.out`
    /// and `dir/<log>.err` (files, not pipes: nothing blocks however much it writes; read them after it ends).
    package static func start(_ arguments: [String], log name: String, in dir: URL) throws -> (Process, URL, URL) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: healthcards)
        process.arguments = arguments
        let out = dir.appendingPathComponent("\(name).out")
        let err = dir.appendingPathComponent("\(name).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        return (process, out, err)
    }

    /// Runs `healthcards` with arguments.
    package static func cli(_ arguments: [String], cwd: URL? = nil) throws -> Run {
        try run(healthcards, arguments, cwd: cwd)
    }

    /// Runs the independent checker: `<test python> shc_check.py ARGS`. Only in tests enabled by
    /// `checkerAvailable`.
    package static func check(_ arguments: [String]) throws -> Run {
        guard let python, checkerAvailable else { throw HealthCardError(.configuration, "the checker is not available: \(checkerMissing)") }
        return try run(python, [checker] + arguments)
    }

    /// A listening-less Unix socket bound at `path`; close the descriptor when done.
    package static func socketFile(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.enumerated() where i < buffer.count - 1 { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0, "bind \(path)")
        return fd
    }

    /// The bytes of hex text, two digits a byte, either case (known-answer vectors, `openssl -text` dumps).
    /// Test data only: a character that is not a hex digit, or an odd number of digits, traps.
    package static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.utf8)
        precondition(digits.count % 2 == 0, "odd number of hex digits: \(text)")
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
        }
    }

    /// A new empty temporary folder.
    package static func tempDir(_ name: String = "hc") throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A copy of the demo key with mode 0600 in `dir`.
    package static func demoKey(in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("demo-key.pem").path
        try FileManager.default.copyItem(atPath: demoKeySource.path, toPath: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    /// Writes text to a file in `dir`.
    @discardableResult
    package static func write(_ text: String, to name: String, in dir: URL) throws -> String {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    /// The report lines of a run, parsed.
    package static func report(_ out: URL) throws -> [JSONValue] {
        let bytes = try VerifyFixtures.bytes(out.appendingPathComponent("report.ndjson"))
        return try bytes.split(separator: 0x0A).map { try JSONParser.parse($0) }
    }

    /// The spec fixture path `spec-examples/<name>`.
    package static func spec(_ name: String) -> URL { VerifyFixtures.specExamples.appendingPathComponent(name) }

    /// A copy of the spec's key set holding only its key 3Kfdg… (the one that signs examples 00, 02 and 03), in a new
    /// temporary folder: the spec set's other key carries an example x5c leaf that expired in 2022, an error on the
    /// key set at any later time, which tests about other things leave out.
    package static func specKeySetOfKey0() throws -> String {
        let json = try JSONParser.parse(try VerifyFixtures.bytes(spec("issuer/.well-known/jwks.json")))
        let key = json["keys"]?.arrayValue?.first { $0["kid"]?.stringValue == "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s" }
        let dir = try tempDir("spec-key0")
        let url = dir.appendingPathComponent("jwks.json")
        try Data(JSONWriter.pretty(.object(["keys": .array(key.map { [$0] } ?? [])]))).write(to: url)
        return url.path
    }

    /// The spec's signing key 3Kfdg… as PKCS#8.
    package static func specKey() throws -> P256Key {
        let pem = try VerifyFixtures.bytes(spec("derived/pkcs8/3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s.private.pkcs8.pem"))
        return try P256Key.load(pem: pem, source: "spec key", requirePrivate: true)
    }

    /// Decodes the payload JSON of a compact JWS (raw inflate).
    package static func payload(of jws: String) throws -> JSONValue {
        let parts = try JWS(compact: jws).parts()
        return try JSONParser.parse(try RawInflate.inflate(parts.payload))
    }
}

/// Number literals in tests (`.number("1.5")`); the library's `JSONNumber` has no literal initializer (one that
/// cannot throw would have to trap), so a test's own literal that is not a number stops the test.
extension JSONNumber: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        guard let number = JSONNumber(value) else { preconditionFailure("'\(value)' is not a JSON number literal") }
        self = number
    }
}
