import HealthCardsCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One error model (issue 31, point 3): what a client calls first throws `HealthCardError` with the specific rule
/// code of what went wrong, and the library declares at most two public `Error` types.
@Suite struct OnePublicErrorTypeTests {
    /// `JSONParser.parse`, which every issuer calls, says JSON_INVALID and where: the message, the line and the
    /// 0-based byte offset of the first byte it could not read.
    @Test func jsonParserThrowsItsCodeAndOffset() {
        // `{"a":1,}`: the `}` at byte 7 is where a member name was expected.
        let bad = Array(#"{"a":1,}"#.utf8)
        do {
            _ = try JSONParser.parse(bad)
            Issue.record("bad JSON was parsed")
        } catch {
            #expect(error.code == .jsonInvalid)
            #expect(error.code?.rawValue == "JSON_INVALID")
            #expect(error.kind == .input)
            #expect(error.location.offset == 7)
            #expect(error.location.line == 1)
            #expect(error.message == "expected a member name in double quotes at line 1, column 8 (byte 7)")
        }
        // A later line: the offset counts bytes from the start, the line counts newlines.
        do {
            _ = try JSONParser.parse("[1,\n2,\n03]")
            Issue.record("a number with a leading zero was parsed")
        } catch {
            #expect(error.code == .jsonInvalid)
            #expect(error.location.offset == 8)
            #expect(error.location.line == 3)
        }
        // A byte order mark is refused at byte 0.
        #expect(throws: HealthCardError.self) { try JSONParser.parse([0xEF, 0xBB, 0xBF, 0x31]) }
    }

    /// A JWE whose ciphertext was altered, or opened with another key, is SHL_DECRYPT_FAILED; one that is not
    /// five parts is SHL_JWE_FORM; a header that is not `dir`/`A256GCM` is SHL_JWE_HEADER.
    @Test func jweFailuresCarryTheirCodes() throws {
        let key = try AES256Key.random()
        let plaintext = Array(#"{"verifiableCredential":["a.b.c"]}"#.utf8)
        let jwe = try JWE.encrypt(plaintext, key: key)
        #expect(try jwe.decrypt(key: key).plaintext == plaintext)

        var parts = jwe.compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var ciphertext = try #require(Base64URL.decode(parts[3]))
        ciphertext[0] ^= 0x01
        parts[3] = Base64URL.encode(ciphertext)
        let tampered = JWE(compact: parts.joined(separator: "."))
        #expect(code { try tampered.decrypt(key: key) } == .shlDecryptFailed)
        #expect(code { try jwe.decrypt(key: try AES256Key.random()) } == .shlDecryptFailed)
        #expect(code { try JWE(compact: "a.b.c").decrypt(key: key) } == .shlJWEForm)

        var header = jwe.compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        header[0] = Base64URL.encode(Array(#"{"alg":"A256KW","enc":"A256GCM"}"#.utf8))
        #expect(code { try JWE(compact: header.joined(separator: ".")).parts() } == .shlJWEHeader)

        do {
            _ = try tampered.decrypt(key: key)
        } catch {
            #expect(error.kind == .link)
            #expect(error.message.hasPrefix("the file does not decrypt with the link's key"))
        }
    }

    /// RawInflate says which DEFLATE rule the data breaks: not DEFLATE at all, zlib-wrapped, bytes after the end.
    @Test func inflateFailuresCarryTheirCodes() throws {
        let text = Array(#"{"iss":"https://spec.smarthealth.cards/examples/issuer"}"#.utf8)
        let raw = try RawDeflater(level: 9).deflate(text)
        #expect(try RawInflate.inflate(raw) == text)

        #expect(code { try RawInflate.inflate([0xFF, 0xFF, 0xFF, 0xFF]) } == .deflateInvalid)
        let zlib = try RawDeflater(level: 9, wrapping: .zlib).deflate(text)
        #expect(zlib.prefix(2) == [0x78, 0xDA])
        #expect(code { try RawInflate.inflate(zlib) } == .deflateZlibWrapped)
        #expect(code { try RawInflate.inflate(raw + [0, 0, 0]) } == .deflateTrailingData)
        // Stopping at the end of the stream reads the same card and counts what follows.
        let stopped = try RawInflate.inflateStoppingAtEnd(raw + [0, 0, 0])
        #expect(stopped.output == text && stopped.trailing == 3)
        do {
            _ = try RawInflate.inflate([0xFF, 0xFF])
        } catch {
            #expect(error.kind == .compression)
        }
    }

    /// The spec's example x5c chain (leaf, CA, root) verifies; given in another order it is JWK_X5C_CHAIN, a
    /// certificate cut short is JWK_X5C_UNDECODABLE.
    @Test func badX5CChainCarriesItsCode() throws {
        let json = try JSONParser.parse(try Fixtures.specJWKS())
        let x5c = (json["keys"]?[1]?["x5c"]?.arrayValue ?? []).compactMap(\.stringValue)
        try #require(x5c.count == 3)
        let der = x5c.compactMap(Base64URL.decodeStandard)
        try #require(der.count == 3)
        #expect(try X509Chain(der: der, source: "spec").certificates.count == 3)

        #expect(code { try X509Chain(der: [der[1], der[0], der[2]], source: "swapped") } == .jwkX5CChain)
        #expect(code { try X509Chain(der: [Array(der[0].prefix(40))], source: "cut") } == .jwkX5CUndecodable)
        #expect(code { try X509Chain(x5c: [x5c[1], x5c[0], x5c[2]], source: "swapped") } == .jwkX5CChain)
        do {
            _ = try X509Chain(der: [der[1], der[0], der[2]], source: "swapped")
        } catch {
            #expect(error.kind == .key)
        }
    }

    /// The library's public `Error` types, counted in its sources: `public struct|enum|class|actor Name…:` with
    /// `Error` among what it conforms to. The issue's bar is at most two; `HealthCardError` is the one meant to stay.
    @Test func atMostTwoPublicErrorTypes() throws {
        let found = try Self.swiftFiles(under: Self.sources).flatMap { path in
            Self.publicErrorTypes(in: String(decoding: try Fixtures.bytes(path), as: UTF8.self)).map {
                "\($0) (\(path.dropFirst(Self.sources.count + 1)))"
            }
        }
        #expect(found.count >= 1, "no Swift file was read under \(Self.sources)")
        #expect(found.contains { $0.hasPrefix("HealthCardError ") }, "\(found)")
        #expect(found.count <= 2, "public Error types: \(found)")
    }

    /// The counter itself, on text: what it counts and what it leaves alone.
    @Test func publicErrorTypeCounter() {
        let text = """
            public struct A: Error, Sendable {
            public enum B: Swift.Error {
                public final class C: Sendable, LocalizedError {
            package struct D: Error {
            struct E: Error {
            public struct F: Sendable, Equatable {
            public struct G<T>: Sendable, Error where T: Sendable {
            public enum Errors: Sendable {
            """
        #expect(Self.publicErrorTypes(in: text) == ["A", "B", "C", "G"])
    }

    // MARK: helpers

    /// The code of the `HealthCardError` that `body` throws; nil when it throws nothing or another error (the
    /// `do`/`catch` blocks above read `error.code` with no cast: the functions throw `HealthCardError` by type).
    private func code<T>(_ body: () throws -> T) -> RuleCode? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? HealthCardError)?.code
        }
    }

    /// The Sources folder of this package, from this file's place (Tests/HealthCardsPublicAPITests/…).
    static let sources: String = {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/Sources"
    }()

    /// The names of the public types declared in `text` that conform to `Error` (or `Swift.Error`,
    /// `LocalizedError`).
    static func publicErrorTypes(in text: String) -> [String] {
        let declaration = #/^\s*public\s+(?:final\s+)?(?:struct|enum|class|actor)\s+(\w+)\s*(?:<[^>]*>)?\s*:([^{]*)/#
        var names: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let match = try? declaration.firstMatch(in: String(line)) else { continue }
            let conformances = match.output.2.split(separator: " where ").first ?? ""
            let list = conformances.split(separator: ",").map { $0.trimmingWhitespace() }
            if list.contains(where: { ["Error", "Swift.Error", "LocalizedError", "Foundation.LocalizedError"].contains($0) }) {
                names.append(String(match.output.1))
            }
        }
        return names
    }

    /// Every `.swift` file under `folder`, recursively.
    static func swiftFiles(under folder: String) throws -> [String] {
        guard let dir = opendir(folder) else { throw Fixtures.Missing(path: folder) }
        defer { closedir(dir) }
        var files: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            let path = folder + "/" + name
            if entry.pointee.d_type == UInt8(DT_DIR) {
                files += try swiftFiles(under: path)
            } else if name.hasSuffix(".swift") {
                files.append(path)
            }
        }
        return files.sorted()
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
