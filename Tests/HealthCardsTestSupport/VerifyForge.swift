import Foundation

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite

/// Makes deliberately broken cards, key sets and QR codes for the verify tests, from synthetic data.
package struct VerifyForge {
    package let key: P256Key
    package let dir: URL
    package static let now: Int64 = 1_700_000_000
    package static let issuer = "https://issuer.example.org"

    package init() throws {
        key = try P256Key.generate()
        dir = try TestSupport.tempDir("verify")
    }

    package var kid: String { JWK(key: key).kid }

    /// `bundle` with the first resource of `type` changed by `change`.
    package static func changing(_ bundle: inout JSONObject, _ type: String, _ change: (inout JSONObject) -> Void) {
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
    package static func bundle(doses: Int = 2, distinctLots: Bool = false) -> JSONValue {
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
    package static func claims(bundle: JSONValue = bundle(), nbf: String = "1690000000") -> JSONObject {
        Payload(issuer: issuer, notBefore: nbf, types: [.healthCard], fhirBundle: bundle).json.objectValue!
    }

    /// A compact JWS from parts that can each be broken.
    package func jws(header: [UInt8]? = nil, payload: [UInt8], compress: ([UInt8]) throws -> [UInt8] = { try RawDeflater().deflate($0) },
             signer: P256Key? = nil, signature: (([UInt8]) throws -> [UInt8])? = nil) throws -> String {
        var input = Base64URL.encode(header ?? JWS.headerBytes(kid: kid)) + "." + Base64URL.encode(try compress(payload))
        var s = try ES256Signer(key: signer ?? key)
        var sig = try s.sign(Array(input.utf8))
        if let signature { sig = try signature(sig) }
        input += "." + Base64URL.encode(sig)
        return input
    }

    package func jws(claims: JSONObject) throws -> String { try jws(payload: JSONWriter.minified(.object(claims))) }

    /// Writes the key set `{"keys":[…]}` (this key, plus `extra` members) as `site/.well-known/jwks.json`.
    @discardableResult
    package func writeKeySet(_ keys: [JSONValue]? = nil, site: String = "site") throws -> String {
        let url = dir.appendingPathComponent("\(site)/.well-known/jwks.json")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(JSONWriter.pretty(.object(["keys": .array(keys ?? [JWK(key: key).json])]))).write(to: url)
        return url.path
    }

    package func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let url = dir.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: url)
        return url.path
    }

    package func write(_ text: String, _ name: String) throws -> String { try write(Array(text.utf8), name) }

    /// A `.smart-health-card` file for a JWS.
    package func card(_ jws: String, _ name: String = "card.smart-health-card") throws -> String {
        try write(JSONWriter.minified(.object(["verifiableCredential": [.string(jws)]])), name)
    }

    /// zlib (RFC 1950) wrapping of raw DEFLATE: header 78 9C, the stream, Adler-32 big-endian.
    package static func zlibWrap(_ data: [UInt8]) throws -> [UInt8] {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = b << 16 | a
        return [0x78, 0x9C] + (try RawDeflater().deflate(data)) + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: adler >> $0) }
    }
}
