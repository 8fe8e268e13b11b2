import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// Key sets, revocation lists and QR texts and images, each broken one way and asserting its code.
@Suite struct VerifyKeySetQRTests {
    static let specJWKS = TestSupport.spec("issuer/.well-known/jwks.json")

    func specKeys() throws -> [JSONValue] {
        try JSONParser.parse(try VerifyFixtures.bytes(Self.specJWKS))["keys"]!.arrayValue!
    }

    func keySetCodes(_ keys: [JSONValue]) throws -> Set<String> {
        let forge = try VerifyForge()
        let path = try forge.writeKeySet(keys)
        return Set(KeySetCheck.check(bytes: try VerifyFixtures.bytes(URL(fileURLWithPath: path)), file: path, now: Clock.nowSeconds()).findings.map(\.code.rawValue))
    }

    func modified(_ key: JSONValue, _ change: (inout JSONObject) -> Void) -> JSONValue {
        var o = key.objectValue!
        change(&o)
        return .object(o)
    }

    /// Clean while its example leaf certificate is valid (2021-06-01 to 2022-06-01); after that the leaf's
    /// validity is a warning.
    @Test func specKeySetIsClean() throws {
        let bytes = try VerifyFixtures.bytes(Self.specJWKS)
        #expect(KeySetCheck.check(bytes: bytes, file: Self.specJWKS.path, now: 1_640_000_000).findings.isEmpty)
        #expect(try keySetCodes(try specKeys()) == ["JWK_X5C_VALIDITY"])
    }

    @Test func brokenKeySets() throws {
        let keys = try specKeys()
        let good = keys[0]
        let withX5C = keys[1]
        let cases: [(String, [JSONValue])] = [
            ("JWK_PRIVATE_MEMBER", [modified(good) { $0["d"] = "AAAA" }]),
            ("JWK_KID_MISMATCH", [modified(good) { $0["kid"] = "some-other-kid" }]),
            ("JWK_KID_MISSING", [modified(good) { $0["kid"] = nil }]),
            ("JWK_USE", [modified(good) { $0["use"] = "signature" }]),
            ("JWK_ALG", [modified(good) { $0["alg"] = "RS256" }]),
            ("JWK_CRV", [modified(good) { $0["crv"] = "P-384" }]),
            ("JWK_COORDINATES", [modified(good) { $0["x"] = "AAAA" }]),
            ("JWK_NOT_SHC_KEY", [good, .object(["kty": "RSA", "n": "AQAB", "e": "AQAB"])]),
            ("JWKS_NO_KEYS", [.object(["kty": "RSA", "n": "AQAB", "e": "AQAB"])]),
            ("JWK_X5C_KEY_MISMATCH", [modified(good) { $0["x5c"] = withX5C["x5c"] }]),
            ("JWK_X5C_ENCODING", [modified(withX5C) { o in
                let chain = o["x5c"]!.arrayValue!.map { JSONValue.string(Base64URL.encode(Base64URL.decodeStandard($0.stringValue!)!)) }
                o["x5c"] = .array(chain)
            }]),
            ("JWK_X5C_UNDECODABLE", [modified(withX5C) { $0["x5c"] = ["bm90IGEgY2VydGlmaWNhdGU="] }]),
        ]
        for (code, set) in cases {
            let codes = try keySetCodes(set)
            #expect(codes.contains(code), "\(code): got \(codes.sorted())")
        }
        let forge = try VerifyForge()
        let notJSON = try forge.write("{keys:", "jwks.json")
        #expect(Set(KeySetCheck.check(bytes: Array("{keys:".utf8), file: notJSON, now: Clock.nowSeconds()).findings.map(\.code.rawValue)) == ["JWKS_NOT_JSON"])
        // A jwks.json given as PATH is checked as a key set.
        let leaked = try forge.writeKeySet([modified(good) { $0["d"] = "AAAA" }], site: "leaky")
        #expect(try forge.codes([leaked], keySets: []).contains("JWK_PRIVATE_MEMBER"))
    }

    /// Revocation: a CRL beside the key set revokes a card whose rid it lists; `rid.ts` only before ts.
    @Test func revocationListsBesideTheKeySet() throws {
        let forge = try VerifyForge()
        func card(rid: String, nbf: String, name: String) throws -> String {
            var c = VerifyForge.claims(nbf: nbf)
            var vc = c["vc"]!.objectValue!
            vc["rid"] = .string(rid)
            c["vc"] = .object(vc)
            return try forge.card(try forge.jws(claims: c), name)
        }
        var jwk = JWK(key: forge.key)
        jwk.crlVersion = 2
        let keySet = try forge.writeKeySet([jwk.json])
        let crlDir = URL(fileURLWithPath: keySet).deletingLastPathComponent().appendingPathComponent("crl")
        let crl = CRL(kid: forge.kid, ctr: 2, entries: [.init(rid: "revokedRid1"), .init(rid: "timedRid22", before: 1_690_000_100)])
        _ = try forge.write(crl.fileBytes, "site/.well-known/crl/\(forge.kid).json")
        #expect(try forge.codes([try card(rid: "revokedRid1", nbf: "1690000000", name: "a.smart-health-card")], keySets: [keySet]).contains("REVOKED"))
        #expect(try forge.codes([try card(rid: "timedRid22", nbf: "1690000000", name: "b.smart-health-card")], keySets: [keySet]).contains("REVOKED"))
        #expect(try forge.codes([try card(rid: "timedRid22", nbf: "1690000200", name: "c.smart-health-card")], keySets: [keySet]).isEmpty)
        #expect(try forge.codes([try card(rid: "otherRid333", nbf: "1690000000", name: "d.smart-health-card")], keySets: [keySet]).isEmpty)

        // Broken lists.
        let crlPath = crlDir.appendingPathComponent("\(forge.kid).json").path
        let broken: [(String, String)] = [
            ("CRL_INVALID", #"{"kid":"\#(forge.kid)","method":"hash","ctr":2,"rids":[]}"#),
            ("CRL_INVALID", #"{"kid":"\#(forge.kid)","method":"rid","ctr":2,"rids":["not base64url!"]}"#),
            ("CRL_INVALID", #"{"kid":"\#(forge.kid)","method":"rid","ctr":2,"rids":["ABCDEFGHIJKLMNOPQRSTUVWXYZ"]}"#),
            ("CRL_VERSION_MISMATCH", #"{"kid":"\#(forge.kid)","method":"rid","ctr":3,"rids":[]}"#),
            ("CRL_KID_MISMATCH", #"{"kid":"another","method":"rid","ctr":2,"rids":[]}"#),
            ("CRL_DUPLICATE_RID", #"{"kid":"\#(forge.kid)","method":"rid","ctr":2,"rids":["abc","abc.1690000000"]}"#),
        ]
        for (code, text) in broken {
            try Data(text.utf8).write(to: URL(fileURLWithPath: crlPath))
            let bytes = try VerifyFixtures.bytes(URL(fileURLWithPath: keySet))
            let crls = FileVerifier.revocationLists(besideKeySet: keySet, bytes, limits: VerifyLimits())
            let findings = KeySetCheck.check(bytes: bytes, file: keySet, crls: crls, now: VerifyForge.now).findings
            #expect(findings.contains { $0.code.rawValue == code }, "\(code): got \(findings.map(\.code.rawValue))")
        }
    }

    @Test func brokenQRTexts() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let digits = String(decoding: try QRNumeric.digits(jws), as: UTF8.self)
        let long = try forge.jws(claims: VerifyForge.claims(bundle: VerifyForge.bundle(doses: 40, distinctLots: true)))
        let chunks = QRNumeric.chunks(long)
        #expect(chunks.count >= 2)
        let cases: [(String, [String])] = [
            ("QR_PREFIX_CASE", ["SHC:/" + digits]),
            ("QR_PREFIX", ["shc:" + digits]),
            ("QR_ODD_DIGITS", ["shc:/" + digits + "5"]),
            ("QR_NON_DIGIT", ["shc:/" + digits.prefix(10) + "x" + digits.dropFirst(11)]),
            ("QR_PAIR_OUT_OF_RANGE", ["shc:/99" + digits.dropFirst(2)]),
            ("QR_CHUNK_HEADER", ["shc:/1/1/" + digits]),
            ("QR_CHUNK_HEADER", ["shc:/3/2/" + digits]),
            ("QR_TOO_LONG", ["shc:/" + String(decoding: try QRNumeric.digits(long), as: UTF8.self)]),
            ("QR_CHUNK_MISSING", [try QRNumeric.text(jws: String(chunks[0]), chunk: 1, of: chunks.count)]),
            ("QR_CHUNKED", try chunks.enumerated().map { try QRNumeric.text(jws: String($1), chunk: $0 + 1, of: chunks.count) }),
            ("QR_CHUNK_UNBALANCED", [try QRNumeric.text(jws: String(long.prefix(1191)), chunk: 1, of: 2), try QRNumeric.text(jws: String(long.dropFirst(1191)), chunk: 2, of: 2)]),
            ("QR_CHUNK_TOO_LONG", [try QRNumeric.text(jws: String(long.prefix(1200)), chunk: 1, of: 2), try QRNumeric.text(jws: String(long.dropFirst(1200)), chunk: 2, of: 2)]),
        ]
        for (n, (code, texts)) in cases.enumerated() {
            let paths = try texts.enumerated().map { try forge.write($1, "case\(n)/qr-\($0).txt") }
            let codes = try forge.codes(paths)
            #expect(codes.contains(code), "\(code): got \(codes.sorted())")
        }
        // Chunks given in any order, and found in one folder, reassemble into the signed JWS.
        let dir = forge.dir.appendingPathComponent("chunks")
        for (i, chunk) in chunks.enumerated().reversed() {
            _ = try forge.write(try QRNumeric.text(jws: String(chunk), chunk: i + 1, of: chunks.count), "chunks/part-\(chunks.count - i).txt")
        }
        let reports = try forge.verify([dir.path]).filter { $0.source == .qrText }
        #expect(reports.count == 1)
        #expect(reports.first?.jws == long)
        #expect(reports.first?.signature == .verified)
        #expect(reports.first?.findings.map(\.code) == [.qrChunked])
    }

    @Test func qrImagesVersionSegmentsAndECC() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let text = Array(try QRNumeric.text(jws: jws).utf8)
        let segments = QRVersionProbe.shcSegments(text)
        func image(_ name: String, _ symbol: (version: Int, size: Int, modules: [Bool])?) throws -> String {
            let s = try #require(symbol)
            return try forge.png(size: s.size, modules: s.modules, name: name)
        }
        // Our own encoder's PNG is clean.
        let good = try forge.write(try QRImage().png(try QRCode(jws: jws)), "good.png")
        let goodReports = try forge.verify([good])
        #expect(goodReports.flatMap(\.findings).isEmpty, "\(goodReports.flatMap(\.findings))")
        let smallest = try #require(QRVersionProbe.smallestVersion(segments, level: .L))
        #expect(goodReports.last?.qrSymbols.first?.version == smallest)

        let single = try image("single.png", QRVersionProbe.encode([(.byte, text)], level: .L))
        #expect(try forge.codes([single]).contains("QR_SINGLE_SEGMENT"))
        let forced = try image("forced.png", QRVersionProbe.encode(segments, level: .L, version: 22))
        let forcedCodes = try forge.codes([forced])
        #expect(forcedCodes.contains("QR_VERSION_NOT_MINIMAL"), "\(forcedCodes)")
        let v23 = try image("v23.png", QRVersionProbe.encode(segments, level: .L, version: 23))
        #expect(try forge.codes([v23]).contains("QR_VERSION_TOO_HIGH"))
        let eccM = try image("m.png", QRVersionProbe.encode(segments, level: .M))
        let mCodes = try forge.codes([eccM])
        #expect(mCodes.contains("QR_ECC_LEVEL") && !mCodes.contains("QR_VERSION_NOT_MINIMAL"), "\(mCodes)")
        let blank = try forge.png(size: 21, modules: Array(repeating: false, count: 441), name: "blank.png")
        #expect(try forge.codes([blank]) == ["QR_NO_SYMBOL"])
        let garbage = try forge.write("not a png", "garbage.png")
        #expect(try forge.codes([garbage]) == ["QR_IMAGE_UNREADABLE"])
    }

    /// Every `source` a `--json` credential object can carry is named in docs/verify.md (`unknown`, which an
    /// empty folder's NOTHING_TO_CHECK carries, was not), and that report has it.
    @Test func everyJSONSourceIsDocumented() throws {
        let page = VerifyFixtures.repoRoot.appendingPathComponent("docs/verify.md")
        let doc = try String(contentsOf: page, encoding: .utf8)
        let json = try #require(doc.range(of: "- `--json`:").map { String(doc[$0.lowerBound...].prefix(1500)) })
        let missing = CredentialReport.Source.allCases.filter { !json.contains("`\($0.rawValue)`") }
        #expect(missing.isEmpty, "undocumented: \(missing.map(\.rawValue))")
        let empty = try TestSupport.tempDir("verify-empty")
        let run = try TestSupport.cli(["verify", "--json", empty.path])
        #expect(run.status == 1)
        let credential = try JSONParser.parse(Array(run.stdout.utf8))["other"]?[0]
        #expect(credential?["source"]?.stringValue == "unknown" && credential?["index"] == nil)
        #expect(credential?["findings"]?[0]?["code"]?.stringValue == "NOTHING_TO_CHECK")
    }

    /// Every code has its line in docs/error-codes.md.
    @Test func everyCodeIsDocumented() throws {
        let doc = try String(contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("docs/error-codes.md"), encoding: .utf8)
        let missing = RuleCode.allCases.filter { !doc.contains("`\($0.rawValue)`") }
        #expect(missing.isEmpty, "undocumented: \(missing.map(\.rawValue))")
    }
}
