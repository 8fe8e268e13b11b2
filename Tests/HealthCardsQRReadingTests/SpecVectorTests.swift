import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
import HealthCardsTestSupport

/// Known answers from the spec's own example files (`../shared/fixtures/spec-examples`).
@Suite struct SpecVectorTests {
    static let specKid = "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"

    @Test func kidOfSpecKeyFromGeneratorConfigJWK() throws {
        let json = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("generator-config/issuer.jwks.private.json")))
        let first = try #require(json["keys"]?.arrayValue?.first)
        let x = try #require(first["x"]?.stringValue.flatMap(Base64URL.decode))
        let y = try #require(first["y"]?.stringValue.flatMap(Base64URL.decode))
        #expect(try JWK(x: x, y: y).kid == Self.specKid)
        #expect(first["kid"]?.stringValue == Self.specKid)
    }

    @Test func kidOfSpecKeyFromPKCS8() throws {
        let key = try TestSupport.specKey()
        #expect(key.hasPrivateKey)
        #expect(JWK(key: key).kid == Self.specKid)
        let publicPEM = try VerifyFixtures.bytes(TestSupport.spec("derived/pkcs8/EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw.public.spki.pem"))
        let other = try P256Key.load(pem: publicPEM, source: "spki", requirePrivate: false)
        #expect(!other.hasPrivateKey)
        #expect(JWK(key: other).kid == "EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw")
    }

    @Test(arguments: ["00", "01", "02", "03"])
    func rawDeflateLevel6ReproducesSpecPayload(example: String) throws {
        let minified = try VerifyFixtures.bytes(TestSupport.spec("example-\(example)-c-jws-payload-minified.json"))
        let jws = try VerifyFixtures.text(TestSupport.spec("example-\(example)-d-jws.txt"))
        let expected = try JWS(compact: jws).parts().payload
        let ours = try RawDeflater(level: 6).deflate(minified)
        #expect(ours == expected)
        #expect(ours.first != 0x78)
        #expect(try RawInflate.inflate(ours) == minified)
    }

    /// One deflater, reused across sizes: the small payloads go through its memLevel 5 stream, example 02
    /// (30 kB) through its memLevel 8 one, and each still gives the spec's bytes, whatever came before.
    @Test func oneDeflaterReproducesSmallAndLargeSpecPayloadsInTurn() throws {
        let deflater = try RawDeflater(level: 6)
        for example in ["00", "02", "03", "02", "01"] {
            let minified = try VerifyFixtures.bytes(TestSupport.spec("example-\(example)-c-jws-payload-minified.json"))
            let jws = try VerifyFixtures.text(TestSupport.spec("example-\(example)-d-jws.txt"))
            #expect((minified.count > RawDeflater.smallInputBytes) == (example == "02"))
            #expect(try deflater.deflate(minified) == JWS(compact: jws).parts().payload, "example \(example)")
        }
    }

    @Test func rawInflateNamesZlibWrappedPayload() throws {
        let minified = try VerifyFixtures.bytes(TestSupport.spec("example-00-c-jws-payload-minified.json"))
        let raw = try RawDeflater(level: 6).deflate(minified)
        // A zlib stream: header 78 9C, the same raw DEFLATE data, Adler-32 of the input.
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in minified {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = b << 16 | a
        let zlib = [0x78, 0x9C] + raw + [UInt8(adler >> 24), UInt8(adler >> 16 & 0xFF), UInt8(adler >> 8 & 0xFF), UInt8(adler & 0xFF)]
        #expect(throws: RawInflate.Failure.zlibWrapped) { try RawInflate.inflateFailing(zlib) }
    }

    @Test func minimizedGeneratorInputEqualsExample00Bundle() throws {
        let input = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("generator-input/covid-vaccines-bundle.json")))
        let expected = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json")))
        let ours = try BundleMinimizer.minimize(input)
        // The spec generator drops all of meta; the spec allows a meta that holds only security (the
        // IAL label), and we keep it. Removing exactly that from our output must give file a.
        var withoutSecurity = ours
        if case .object(var bundle) = ours, case .array(var entries)? = bundle["entry"] {
            var securityCount = 0
            for i in entries.indices {
                guard case .object(var entry) = entries[i], case .object(var resource)? = entry["resource"] else { continue }
                if let meta = resource["meta"] {
                    #expect(meta.objectValue?.keys == ["security"])
                    #expect(meta["security"]?.arrayValue?.first?["code"]?.stringValue == "IAL1.2")
                    resource.removeValue(forKey: "meta")
                    securityCount += 1
                }
                entry["resource"] = .object(resource)
                entries[i] = .object(entry)
            }
            #expect(securityCount == 3)
            bundle["entry"] = .array(entries)
            withoutSecurity = .object(bundle)
        }
        #expect(withoutSecurity.isEquivalent(to: expected))
        #expect(!ours.isEquivalent(to: expected))
    }

    @Test func minimizingExample00BundleAgainChangesNothing() throws {
        let bundle = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json")))
        #expect(try BundleMinimizer.minimize(bundle) == bundle)
    }

    @Test func payloadFromExample00BundleIsByteEqualToSpec() throws {
        let bundle = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json")))
        let payload = Payload(issuer: "https://spec.smarthealth.cards/examples/issuer", notBefore: "1687450764.656",
                              types: Payload.types(for: bundle, policy: .minimal, isCOVID19: Terminology.isCOVID19Code),
                              rid: "MKyCxh7p6uQ", fhirBundle: try BundleMinimizer.minimize(bundle))
        let expected = try VerifyFixtures.bytes(TestSupport.spec("example-00-c-jws-payload-minified.json"))
        #expect(payload.minifiedBytes == expected)
    }

    @Test func payloadWithExpMatchesExample03() throws {
        let bundle = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-03-a-fhirBundle.json")))
        let expected = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-03-c-jws-payload-minified.json")))
        // Example 03's exp is fractional (nbf + 31536000 s); our exp is integer seconds, so compare the rest.
        let payload = Payload(issuer: "https://spec.smarthealth.cards/examples/issuer",
                              notBefore: try #require(expected["nbf"]?.numberLexeme), expires: 1_718_986_765,
                              rid: "vwAjHdarZuc", fhirBundle: try BundleMinimizer.minimize(bundle))
        #expect(payload.json.objectValue?.keys == expected.objectValue?.keys)
        #expect(payload.json["vc"] == expected["vc"])
    }

    @Test func numericQRTextOfExample00() throws {
        let jws = try VerifyFixtures.text(TestSupport.spec("example-00-d-jws.txt"))
        let expected = try VerifyFixtures.text(TestSupport.spec("example-00-f-qr-code-numeric-value-0.txt"))
        #expect(try QRNumeric.text(jws: jws) == expected)
        #expect(try QRNumeric.jws(fromDigits: expected.dropFirst(5).utf8) == jws)
    }

    /// Compares our QR with the spec's module matrix. The spec's symbols were made by node `qrcode`;
    /// libqrencode evaluates the mask penalty differently and may pick another of the 8 data masks
    /// (both are valid; the mask only changes which modules are inverted). So: when the masks agree the
    /// matrices must be equal bit for bit; in every case, with each symbol's own mask removed, the data
    /// and error-correction modules and all function patterns except the format information (which
    /// encodes the mask) must be equal, and both must be error correction L.
    func expectSameSymbol(_ code: QRCode, asSpecRows rows: [String]) throws {
        let specDark = rows.map { $0.map { $0 == "1" } }
        #expect(specDark.count == code.size)
        let specFormat = try #require(QRFormatInfo.read(size: code.size, dark: { specDark[$1][$0] }))
        let ourFormat = try #require(QRFormatInfo.read(size: code.size, dark: { code[$0, $1] }))
        #expect(specFormat.errorCorrection == .L && ourFormat.errorCorrection == .L)
        if specFormat.mask == ourFormat.mask { #expect(code.rowsText == rows) }
        let ours = try #require(code.unmaskedModules)
        var differing = 0
        let formatModules = code.formatModules, functionModules = code.functionModules
        for index in ours.indices where !formatModules[index] {
            let i = index / code.size, j = index % code.size
            var spec = specDark[i][j]
            if !functionModules[index] && QRCode.maskInverts(specFormat.mask, row: i, column: j) { spec.toggle() }
            if spec != ours[index] { differing += 1 }
        }
        #expect(differing == 0)
    }

    @Test(arguments: ["00", "01", "03"])
    func qrModulesEqualSpecSymbol(example: String) throws {
        let jws = try VerifyFixtures.text(TestSupport.spec("example-\(example)-d-jws.txt"))
        let expected = try VerifyFixtures.text(TestSupport.spec("derived/qr-modules/example-\(example)-g-qr-code-0.txt"))
            .split(separator: "\n").map(String.init)
        let code = try QRCode(jws: jws)
        #expect(code.version == 18)
        try expectSameSymbol(code, asSpecRows: expected)
    }

    @Test func chunkedQRModulesOfExample02EqualSpecSymbols() throws {
        let jws = try VerifyFixtures.text(TestSupport.spec("example-02-d-jws.txt"))
        let chunks = QRNumeric.chunks(jws)
        #expect(chunks.map(\.count) == [1095, 1095, 1095])
        for (i, chunk) in chunks.enumerated() {
            let code = try QRCode(jws: chunk, chunk: i + 1, of: chunks.count)
            let text = try VerifyFixtures.text(TestSupport.spec("example-02-f-qr-code-numeric-value-\(i).txt"))
            #expect(try QRNumeric.text(jws: String(chunk), chunk: i + 1, of: 3) == text)
            let expected = try VerifyFixtures.text(TestSupport.spec("derived/qr-modules/example-02-g-qr-code-\(i).txt"))
                .split(separator: "\n").map(String.init)
            #expect(code.version == 21)
            try expectSameSymbol(code, asSpecRows: expected)
        }
    }

    @Test func ourQRPNGDecodesBackToTheSpecText() throws {
        let jws = try VerifyFixtures.text(TestSupport.spec("example-00-d-jws.txt"))
        let png = try QRImage().png(try QRCode(jws: jws))
        let decoded = try SHCQRCodeReader.read(png: png)
        #expect(decoded.count == 1)
        #expect(decoded.first?.text == (try VerifyFixtures.text(TestSupport.spec("example-00-f-qr-code-numeric-value-0.txt"))))
        #expect(decoded.first?.version == 18)
        #expect(decoded.first?.errorCorrection == .L)
    }

    @Test func cardSignedWithSpecKeyVerifiesAgainstSpecJWKS() throws {
        let jwks = try JWKS(bytes: try VerifyFixtures.bytes(TestSupport.spec("issuer/.well-known/jwks.json")), source: "spec jwks")
        let bundle = try JSONParser.parse(try VerifyFixtures.bytes(TestSupport.spec("example-00-a-fhirBundle.json")))
        let issuer = try CardIssuer(signer: try ES256Signer(key: try TestSupport.specKey()),
                                    settings: IssueSettings(issuer: "https://spec.smarthealth.cards/examples/issuer", notBefore: 1_700_000_000), clock: SystemWallClock())
        let card = try issuer.issue(bundle: bundle)
        let parts = try card.jws.parts()
        #expect(parts.header == Array(#"{"zip":"DEF","alg":"ES256","kid":"3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s"}"#.utf8))
        #expect(parts.signature.count == 64)
        let jwk = try #require(jwks.key(kid: Self.specKid))
        let publicKey = try P256Key.publicKey(x: jwk.x, y: jwk.y)
        #expect(ES256.verify(signature: parts.signature, message: parts.signingInput, key: publicKey))
        var tampered = parts.signingInput
        tampered[tampered.count - 1] ^= 1
        #expect(!ES256.verify(signature: parts.signature, message: tampered, key: publicKey))
        #expect(try TestSupport.payload(of: card.jws.compact) == JSONParser.parse(card.payload))
    }

    @Test(arguments: ["00", "01", "02", "03"])
    func specSignaturesVerifyWithOurES256(example: String) throws {
        let jwks = try JWKS(bytes: try VerifyFixtures.bytes(TestSupport.spec("issuer/.well-known/jwks.json")), source: "spec jwks")
        let jws = JWS(compact: try VerifyFixtures.text(TestSupport.spec("example-\(example)-d-jws.txt")))
        let parts = try jws.parts()
        let kid = try #require(try JSONParser.parse(parts.header)["kid"]?.stringValue)
        let jwk = try #require(jwks.key(kid: kid))
        #expect(ES256.verify(signature: parts.signature, message: parts.signingInput, key: try P256Key.publicKey(x: jwk.x, y: jwk.y)))
    }
}
