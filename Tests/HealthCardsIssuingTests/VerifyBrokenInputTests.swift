import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures
import HealthCardsTestSupport

/// Deliberately broken cards made here from synthetic data, each asserting the exact code `verify` reports.
@Suite struct VerifyBrokenInputTests {
    typealias Case = (code: String, make: @Sendable (VerifyForge) throws -> (paths: [String], keySets: [String]?))

    /// Payload and JWS cases: the card file is checked with a key set holding the signing key.
    static let jwsCases: [Case] = [
        ("SIG_DER", { f in ([try f.card(try f.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), signature: { try ES256.derSignature(fromRaw: $0) }))], nil) }),
        ("SIG_LENGTH", { f in ([try f.card(try f.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), signature: { Array($0.prefix(63)) }))], nil) }),
        ("SIG_INVALID", { f in ([try f.card(try f.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), signature: { sig in
            var s = sig; s[40] ^= 0x01; return s }))], nil) }),
        ("KID_WRONG", { f in ([try f.card(try f.jws(header: JWS.headerBytes(kid: "not-the-thumbprint"), payload: JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("KID_UNKNOWN", { f in
            let other = try P256Key.generate()
            return ([try f.card(try f.jws(header: JWS.headerBytes(kid: JWK(key: other).kid), payload: JSONWriter.minified(.object(VerifyForge.claims())), signer: other))], nil)
        }),
        ("SIG_NOT_CHECKED", { f in ([try f.card(try f.jws(claims: VerifyForge.claims()))], []) }),
        ("DEFLATE_ZLIB_WRAPPED", { f in ([try f.card(try f.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), compress: VerifyForge.zlibWrap))], nil) }),
        ("DEFLATE_INVALID", { f in ([try f.card(try f.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), compress: { $0 }))], nil) }),
        ("DEFLATE_TRAILING_DATA", { f in ([try f.card(try f.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), compress: { try RawDeflater().deflate($0) + [1, 2, 3] }))], nil) }),
        ("PAYLOAD_BOM", { f in ([try f.card(try f.jws(payload: [0xEF, 0xBB, 0xBF] + JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("PAYLOAD_WHITESPACE", { f in ([try f.card(try f.jws(payload: JSONWriter.pretty(.object(VerifyForge.claims()))))], nil) }),
        ("PAYLOAD_NOT_JSON", { f in ([try f.card(try f.jws(payload: Array("{\"iss\":".utf8)))], nil) }),
        ("JWS_HEADER_ALG", { f in ([try f.card(try f.jws(header: Array(#"{"zip":"DEF","alg":"ES384","kid":"\#(f.kid)"}"#.utf8), payload: JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("JWS_HEADER_ZIP", { f in ([try f.card(try f.jws(header: Array(#"{"alg":"ES256","kid":"\#(f.kid)"}"#.utf8), payload: JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("JWS_HEADER_KID_MISSING", { f in ([try f.card(try f.jws(header: Array(#"{"zip":"DEF","alg":"ES256"}"#.utf8), payload: JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("JWS_HEADER_EXTRA_MEMBER", { f in ([try f.card(try f.jws(header: Array(#"{"zip":"DEF","alg":"ES256","kid":"\#(f.kid)","typ":"JWT"}"#.utf8), payload: JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("JWS_HEADER_NOT_JSON", { f in ([try f.card(try f.jws(header: Array("zip=DEF".utf8), payload: JSONWriter.minified(.object(VerifyForge.claims()))))], nil) }),
        ("JWS_COMPACT_FORM", { f in ([try f.card("eyJhbGciOiJFUzI1NiJ9.abcd")], nil) }),
        ("JWS_BASE64URL", { f in ([try f.card("eyJhbGciOiJFUzI1NiJ9.abcde.abcd")], nil) }),
        ("JWS_TOO_LONG", { f in ([try f.card(try f.jws(claims: VerifyForge.claims(bundle: VerifyForge.bundle(doses: 40, distinctLots: true))))], nil) }),
        ("NBF_MILLISECONDS", { f in ([try f.card(try f.jws(claims: VerifyForge.claims(nbf: "1690000000000")))], nil) }),
        ("NBF_NOT_YET_VALID", { f in ([try f.card(try f.jws(claims: VerifyForge.claims(nbf: "1800000000")))], nil) }),
        ("NBF_FRACTIONAL", { f in ([try f.card(try f.jws(claims: VerifyForge.claims(nbf: "1690000000.5")))], nil) }),
        ("NBF_NOT_NUMBER", { f in var c = VerifyForge.claims(); c["nbf"] = "1690000000"; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("NBF_MISSING", { f in var c = VerifyForge.claims(); c["nbf"] = nil; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("EXP_EXPIRED", { f in var c = VerifyForge.claims(); c["exp"] = .integer(1_695_000_000); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("EXP_MILLISECONDS", { f in var c = VerifyForge.claims(); c["exp"] = .integer(1_900_000_000_000); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("EXP_NOT_NUMBER", { f in var c = VerifyForge.claims(); c["exp"] = "soon"; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("EXP_BEFORE_NBF", { f in var c = VerifyForge.claims(); c["exp"] = .integer(1_600_000_000); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("ISS_TRAILING_SLASH", { f in var c = VerifyForge.claims(); c["iss"] = "https://issuer.example.org/"; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("ISS_NOT_HTTPS", { f in var c = VerifyForge.claims(); c["iss"] = "http://issuer.example.org"; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("ISS_MALFORMED", { f in var c = VerifyForge.claims(); c["iss"] = "https://issuer.example.org?x=1"; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("ISS_MISSING", { f in var c = VerifyForge.claims(); c["iss"] = nil; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("VC_MISSING", { f in var c = VerifyForge.claims(); c["vc"] = nil; return ([try f.card(try f.jws(claims: c))], nil) }),
        ("VC_TYPE_HEALTH_CARD", { f in var c = VerifyForge.claims(); var vc = c["vc"]!.objectValue!; vc["type"] = ["https://smarthealth.cards#immunization"]; c["vc"] = .object(vc); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("VC_TYPE_LEGACY", { f in var c = VerifyForge.claims(); var vc = c["vc"]!.objectValue!; vc["type"] = ["VerifiableCredential", "https://smarthealth.cards#health-card"]; c["vc"] = .object(vc); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("VC_CONTEXT", { f in var c = VerifyForge.claims(); var vc = c["vc"]!.objectValue!; vc["@context"] = ["https://www.w3.org/2018/credentials/v1"]; c["vc"] = .object(vc); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("VC_FHIR_VERSION", { f in var c = VerifyForge.claims(); var vc = c["vc"]!.objectValue!; var cs = vc["credentialSubject"]!.objectValue!; cs["fhirVersion"] = "R4"; vc["credentialSubject"] = .object(cs); c["vc"] = .object(vc); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("VC_BUNDLE_MISSING", { f in var c = VerifyForge.claims(); var vc = c["vc"]!.objectValue!; vc["credentialSubject"] = .object(["fhirVersion": "4.0.1"]); c["vc"] = .object(vc); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("RID_INVALID", { f in var c = VerifyForge.claims(); var vc = c["vc"]!.objectValue!; vc["rid"] = "not/base64url+and-far-too-long-for-a-rid"; c["vc"] = .object(vc); return ([try f.card(try f.jws(claims: c))], nil) }),
        ("REFERENCE_UNRESOLVED", { f in
            var bundle = VerifyForge.bundle().objectValue!
            var entries = bundle["entry"]!.arrayValue!
            var imm = entries[1]["resource"]!.objectValue!
            imm["patient"] = .object(["reference": "Patient/123"])
            entries[1] = .object(["fullUrl": "resource:1", "resource": .object(imm)])
            bundle["entry"] = .array(entries)
            return ([try f.card(try f.jws(claims: VerifyForge.claims(bundle: .object(bundle))))], nil)
        }),
        ("FILE_TRAILING_CHARACTERS", { f in ([try f.write(try f.jws(claims: VerifyForge.claims()) + "\n\n", "card.jws.txt")], nil) }),
        ("FILE_BOM", { f in ([try f.write([0xEF, 0xBB, 0xBF] + Array(try f.jws(claims: VerifyForge.claims()).utf8), "bom.txt")], nil) }),
        ("FILE_NOT_JSON", { f in ([try f.write("verifiableCredential: nope", "bad.smart-health-card")], nil) }),
        ("FILE_NO_CREDENTIALS", { f in ([try f.write(#"{"verifiableCredential":[]}"#, "empty.smart-health-card")], nil) }),
        ("FILE_UNKNOWN_TYPE", { f in ([try f.write("hello", "notes.md")], nil) }),
    ]

    @Test func eachBrokenCardReportsItsCode() throws {
        for (code, make) in Self.jwsCases {
            let forge = try VerifyForge()
            let (paths, keySets) = try make(forge)
            let reports = try forge.verify(paths, keySets: keySets)
            let codes = Set(reports.flatMap(\.findings).map(\.code.rawValue))
            #expect(codes.contains(code), "\(code): got \(codes.sorted())")
            let finding = reports.flatMap(\.findings).first { $0.code.rawValue == code }
            #expect(finding?.message.isEmpty == false)
        }
    }

    /// A good card from the forge has no finding at all: the broken cases differ from it in one thing.
    @Test func unbrokenForgedCardIsClean() throws {
        let forge = try VerifyForge()
        let reports = try forge.verify([try forge.card(try forge.jws(claims: VerifyForge.claims()))])
        #expect(reports.flatMap(\.findings).isEmpty, "\(reports.flatMap(\.findings))")
        #expect(reports.last?.signature == .verified)
    }

    @Test func derSignatureIsNamedAndStillConvertible() throws {
        let forge = try VerifyForge()
        let path = try forge.card(try forge.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), signature: { try ES256.derSignature(fromRaw: $0) }))
        let finding = try #require(try forge.verify([path]).flatMap(\.findings).first { $0.code == .sigDER })
        #expect(finding.message.contains("DER"))
        #expect(finding.severity == .error)
        #expect(finding.location.path == "signature")
    }

    @Test func zlibWrappedPayloadGetsTheSpecificMessageAndContentIsStillChecked() throws {
        let forge = try VerifyForge()
        let path = try forge.card(try forge.jws(payload: JSONWriter.minified(.object(VerifyForge.claims())), compress: VerifyForge.zlibWrap))
        let reports = try forge.verify([path])
        let finding = try #require(reports.flatMap(\.findings).first { $0.code == .deflateZlibWrapped })
        #expect(finding.message.contains("78 9C"))
        #expect(reports.last?.payload?["iss"]?.stringValue == VerifyForge.issuer)
    }

    @Test func nbfInMillisecondsSuggestsSeconds() throws {
        let forge = try VerifyForge()
        let reports = try forge.verify([try forge.card(try forge.jws(claims: VerifyForge.claims(nbf: "1690000000000")))])
        let finding = try #require(reports.flatMap(\.findings).first { $0.code == .nbfMilliseconds })
        #expect(finding.message.contains("1690000000"))
        #expect(!reports.flatMap(\.findings).contains { $0.code == .nbfNotYetValid })
    }

    @Test func findingsCarryCredentialIndexAndFHIRPath() throws {
        let forge = try VerifyForge()
        var bundle = VerifyForge.bundle().objectValue!
        var entries = bundle["entry"]!.arrayValue!
        var imm = entries[2]["resource"]!.objectValue!
        imm["status"] = "not-done"
        entries[2] = .object(["fullUrl": "resource:2", "resource": .object(imm)])
        bundle["entry"] = .array(entries)
        let good = try forge.jws(claims: VerifyForge.claims())
        let bad = try forge.jws(claims: VerifyForge.claims(bundle: .object(bundle)))
        let path = try forge.write(JSONWriter.minified(.object(["verifiableCredential": [.string(good), .string(bad)]])), "two.smart-health-card")
        let reports = try forge.verify([path]).filter { $0.source == .smartHealthCard }
        #expect(reports.count == 2)
        #expect(reports[0].isValid)
        let finding = try #require(reports[1].findings.first { $0.code == .immunizationStatus })
        #expect(finding.location == Finding.Location(file: path, credential: 1, path: "Bundle.entry[2].resource.status"))
    }
}
