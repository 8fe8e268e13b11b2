import Foundation

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures

/// Makes deliberately broken cards, key sets and QR codes for the verify tests, from synthetic data.
struct VerifyForge {
    let key: P256Key
    let dir: URL
    static let now: Int64 = 1_700_000_000
    static let issuer = "https://issuer.example.org"

    init() throws {
        key = try P256Key.generate()
        dir = try TestSupport.tempDir("verify")
    }

    var kid: String { JWK(key: key).kid }

    /// `bundle` with the first resource of `type` changed by `change`.
    static func changing(_ bundle: inout JSONObject, _ type: String, _ change: (inout JSONObject) -> Void) {
        var entries = bundle["entry"]!.arrayValue!
        let i = entries.firstIndex { $0["resource"]?["resourceType"]?.stringValue == type }!
        var entry = entries[i].objectValue!
        var r = entry["resource"]!.objectValue!
        change(&r)
        entry["resource"] = .object(r)
        entries[i] = .object(entry)
        bundle["entry"] = .array(entries)
    }

    /// A good minimized vaccination Bundle (Patient + `doses` Immunizations with CVX 207, three a month
    /// from 2021-01-15 (the 15th, 20th and 25th), so none repeats another, they are in date order, and 40
    /// of them end in 2022, before `now` and the claims' `nbf`).
    static func bundle(doses: Int = 2, distinctLots: Bool = false) -> JSONValue {
        var entries: [JSONValue] = [
            .object(["fullUrl": "resource:0", "resource": .object([
                "resourceType": "Patient", "name": [.object(["family": "Testperson", "given": ["Ada"]])], "birthDate": "1960-01-01",
            ])]),
        ]
        for i in 0..<doses {
            entries.append(.object(["fullUrl": .string("resource:\(i + 1)"), "resource": .object([
                "resourceType": "Immunization", "status": "completed",
                "vaccineCode": .object(["coding": [.object(["system": .string(Terminology.cvx), "code": "207"])]]),
                "patient": .object(["reference": "resource:0"]), "occurrenceDateTime": .string(String(format: "%04d-%02d-%02d", 2021 + i / 36, 1 + (i / 3) % 12, 15 + 5 * (i % 3))),
                "performer": [.object(["actor": .object(["display": "ABC General Hospital"])])], "lotNumber": .string(distinctLots ? String(UUID().uuidString.prefix(18)) : "0000001"),
            ])]))
        }
        return .object(["resourceType": "Bundle", "type": "collection", "entry": .array(entries)])
    }

    /// A good payload object.
    static func claims(bundle: JSONValue = bundle(), nbf: String = "1690000000") -> JSONObject {
        Payload(issuer: issuer, notBefore: nbf, types: [.healthCard], fhirBundle: bundle).json.objectValue!
    }

    /// A compact JWS from parts that can each be broken.
    func jws(header: [UInt8]? = nil, payload: [UInt8], compress: ([UInt8]) throws -> [UInt8] = { try RawDeflater().deflate($0) },
             signer: P256Key? = nil, signature: (([UInt8]) throws -> [UInt8])? = nil) throws -> String {
        var input = Base64URL.encode(header ?? JWS.headerBytes(kid: kid)) + "." + Base64URL.encode(try compress(payload))
        var s = try ES256Signer(key: signer ?? key)
        var sig = try s.sign(Array(input.utf8))
        if let signature { sig = try signature(sig) }
        input += "." + Base64URL.encode(sig)
        return input
    }

    func jws(claims: JSONObject) throws -> String { try jws(payload: JSONWriter.minified(.object(claims))) }

    /// Writes the key set `{"keys":[…]}` (this key, plus `extra` members) as `site/.well-known/jwks.json`.
    @discardableResult
    func writeKeySet(_ keys: [JSONValue]? = nil, site: String = "site") throws -> String {
        let url = dir.appendingPathComponent("\(site)/.well-known/jwks.json")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(JSONWriter.pretty(.object(["keys": .array(keys ?? [JWK(key: key).json])]))).write(to: url)
        return url.path
    }

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url.path
    }

    func write(_ text: String, _ name: String) throws -> String { try write(Array(text.utf8), name) }

    /// A `.smart-health-card` file for a JWS.
    func card(_ jws: String, _ name: String = "card.smart-health-card") throws -> String {
        try write(JSONWriter.minified(.object(["verifiableCredential": [.string(jws)]])), name)
    }

    /// Verifies paths with the library and returns every report.
    func verify(_ paths: [String], keySets: [String]? = nil, now: Int64 = VerifyForge.now) throws -> [CredentialReport] {
        let sets = try keySets ?? [writeKeySet()]
        let verifier = try FileVerifier(keySets: sets, now: now)
        return verifier.keySetReports + (try verifier.verify(paths))
    }

    /// The codes found for paths.
    func codes(_ paths: [String], keySets: [String]? = nil, now: Int64 = VerifyForge.now) throws -> Set<String> {
        Set(try verify(paths, keySets: keySets, now: now).flatMap(\.findings).map(\.code.rawValue))
    }

    /// A PNG of a module matrix (4-module quiet zone, 4 px per module), for QR symbols our encoder refuses
    /// to make (forced versions, other error correction levels, one segment): written by `QRImage`, so no
    /// Python is needed.
    func png(size: Int, modules: [Bool], name: String) throws -> String {
        try write(try QRImage(scale: 4, quietZone: 4).png(size: size, modules: modules), name)
    }

    /// zlib (RFC 1950) wrapping of raw DEFLATE: header 78 9C, the stream, Adler-32 big-endian.
    static func zlibWrap(_ data: [UInt8]) throws -> [UInt8] {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = b << 16 | a
        return [0x78, 0x9C] + (try RawDeflater().deflate(data)) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: adler >> $0) }
    }
}
