import HealthCardsCore
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The spec's examples and the cases under Tests/Fixtures, read as a client reads its inputs: bytes from files
/// (no Foundation, no `@testable`).
enum Fixtures {
    /// Tests/Fixtures, found from this file's place.
    static let root: String = {
        var path = #filePath
        for _ in 0..<2 { path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]) }
        return path + "/Fixtures"
    }()
    static let spec = root + "/spec-examples"
    static let cases = root + "/cases"
    /// The repository's public demo key (keys/README.md: public test material).
    static let demoKey = root + "/../../keys/demo-issuer.DO-NOT-USE-IN-PRODUCTION.pkcs8.pem"

    static let issuer = "https://spec.smarthealth.cards/examples/issuer"
    static let kid = "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"
    /// After the examples were issued (2023-06-22) and before example 03's exp (2024-06-21).
    static let now: Int64 = 1_700_000_000

    static func bytes(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw Missing(path: path) }
        defer { fclose(file) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n == 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// A text file without its final newline.
    static func text(_ path: String) throws -> String {
        var text = String(decoding: try bytes(path), as: UTF8.self)
        while text.last == "\n" || text.last == "\r\n" { text.removeLast() }
        return text
    }

    struct Missing: Error { var path: String }

    /// The spec's key set and CRL.
    static func specJWKS() throws -> [UInt8] { try bytes(spec + "/issuer/.well-known/jwks.json") }
    static func specCRL() throws -> [UInt8] { try bytes(spec + "/issuer/.well-known/crl/\(kid).json") }

    /// A trust store holding the spec's issuer (with its CRL unless `crl` is false).
    static func specTrust(crl: Bool = true) throws -> TrustStore {
        var trust = TrustStore()
        try trust.add(issuer: issuer, jwks: try specJWKS(), crls: crl ? [kid: try specCRL()] : [:], now: now)
        return trust
    }

    static func codes(_ report: VerificationReport) -> [String] { report.findings.map(\.code.rawValue) }
}
