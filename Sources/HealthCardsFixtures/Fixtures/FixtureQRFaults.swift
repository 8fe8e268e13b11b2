import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// The broken QR codes, files and key sets of the catalogue (see `FixtureFaults.swift` for the cards).
extension FixtureCatalogue {
    /// A QR text fault: `invalid/<name>.qr.txt`.
    mutating func addQRText(
        _ name: String, _ text: [UInt8], _ description: String, stage: String, errors: [RuleCode] = [],
        warnings: [RuleCode] = [], reference: [String], checker: FixtureEntry.Checker = .judges
    ) {
        let path = "invalid/\(name).qr.txt"
        add(path, text)
        add(
            entry(
                name, [path], kind: "qr-text", description, stage: stage, errors: errors, warnings: warnings,
                reference: reference, checker: checker))
    }

    /// A QR image fault: `invalid/<name>.png`.
    mutating func addQRImage(
        _ name: String, _ symbol: QRCode, _ description: String, stage: String, errors: [RuleCode] = [],
        warnings: [RuleCode] = [], reference: [String], checker: FixtureEntry.Checker = .judges
    ) throws {
        let path = "invalid/\(name).png"
        add(path, try QRImage().png(symbol))
        add(
            entry(
                name, [path], kind: "qr-image", description + " (version \(symbol.version))", stage: stage,
                errors: errors,
                warnings: warnings, reference: reference, checker: checker))
    }

    /// A QR chunk set fault: `invalid/<name>/chunk-<i>.qr.txt`.
    mutating func addQRChunks(
        _ name: String, _ texts: [[UInt8]], _ description: String, stage: String, errors: [RuleCode] = [],
        warnings: [RuleCode] = [], reference: [String], checker: FixtureEntry.Checker = .judges
    ) {
        var paths: [String] = []
        for (i, text) in texts.enumerated() {
            paths.append("invalid/\(name)/chunk-\(i + 1).qr.txt")
            add(paths[i], text)
        }
        add(
            entry(
                name, paths, kind: "qr-text", description, stage: stage, errors: errors, warnings: warnings,
                reference: reference, checker: checker))
    }

    mutating func addQRFaults() throws {
        // The QR symbol stage.
        var jws = try faultCard("qr-one-byte-segment")
        let text = Array(("shc:/" + String(decoding: try FixtureOutput.digits(jws.compact), as: UTF8.self)).utf8)
        let single = try QRCode(segments: [(.byte, text)], level: .L)
        try addQRImage(
            "qr-one-byte-segment", single,
            "The QR holds the whole shc:/ text in one byte segment instead of byte "
                + "shc:/ then numeric digits; eight bits per digit instead of about 3.3, so it also needs a version above 22",
            stage: "qr-symbol", errors: [.qrSingleSegment, .qrVersionTooHigh],
            reference: ["INVALID_QR", "INVALID_QR_VERSION"])

        jws = try faultCard("qr-forced-v22")
        let (prefix, digits) = FixtureOutput.segments(try FixtureOutput.qrTexts(jws)[0])
        let forced = try QRCode(segments: [(.byte, prefix), (.numeric, digits)], level: .L, minimumVersion: 22)
        try addQRImage(
            "qr-forced-v22", forced,
            "The QR is forced to version 22 instead of the smallest version that fits "
                + "(allowed, but denser and harder to scan)", stage: "qr-symbol", warnings: [.qrVersionNotMinimal],
            reference: ["INVALID_QR_VERSION"])

        jws = try faultCard("qr-ecc-m")
        let (prefixM, digitsM) = FixtureOutput.segments(try FixtureOutput.qrTexts(jws)[0])
        let eccM = try QRCode(segments: [(.byte, prefixM), (.numeric, digitsM)], level: .M)
        try addQRImage(
            "qr-ecc-m", eccM,
            "The QR uses error correction M instead of L (allowed; the 1195-character "
                + "limit assumes L)", stage: "qr-symbol", warnings: [.qrECCLevel], reference: [])

        let long = try card(try chunkedRecord()).jws
        let (longPrefix, longDigits) = FixtureOutput.segments(
            Array("shc:/".utf8) + (try FixtureOutput.digits(long.compact)))
        let tooLong = try QRCode(segments: [(.byte, longPrefix), (.numeric, longDigits)], level: .L)
        try addQRImage(
            "qr-too-long", tooLong,
            "A \(long.compact.utf8.count)-character JWS (valid/covid19-chunked) put in "
                + "one QR instead of chunks: more than 1195 characters, above version 22", stage: "qr-chunk",
            errors: [.qrTooLong, .qrVersionTooHigh], reference: ["INVALID_QR_VERSION"])

        // The QR text stage.
        jws = try faultCard("qr-odd-digits")
        addQRText(
            "qr-odd-digits", Array("shc:/".utf8) + (try FixtureOutput.digits(jws.compact, .truncated)),
            "The numeric part lost its last digit: an odd number of digits.", stage: "qr-text",
            errors: [.qrOddDigits], reference: ["INVALID_NUMERIC_QR"])

        jws = try faultCard("qr-pair-over-77")
        addQRText(
            "qr-pair-over-77", Array("shc:/".utf8) + (try FixtureOutput.digits(jws.compact, .offByOne)),
            "Each character is written as ord(c) − 44 instead of ord(c) − 45, so 'z' becomes the pair 78, above 77.",
            stage: "qr-text", errors: [.qrPairOutOfRange], reference: ["INVALID_NUMERIC_QR"])

        jws = try faultCard("qr-prefix-uppercase")
        addQRText(
            "qr-prefix-uppercase", Array("SHC:/".utf8) + (try FixtureOutput.digits(jws.compact)),
            "The text starts SHC:/ (upper case) instead of shc:/; schemes are case-insensitive, so it is read, with a "
                + "warning.", stage: "qr-text", warnings: [.qrPrefixCase], reference: ["INVALID_NUMERIC_QR_HEADER"],
            checker: .differs(invalid: true, why: "it requires the scheme in lower case"))

        jws = try faultCard("qr-chunk-header-1-1")
        addQRText(
            "qr-chunk-header-1-1", Array("shc:/1/1/".utf8) + (try FixtureOutput.digits(jws.compact)),
            "A single QR written as chunk 1 of 1 (shc:/1/1/…); a single QR has no chunk header.", stage: "qr-text",
            errors: [.qrChunkHeader], reference: ["INVALID_NUMERIC_QR_HEADER"],
            checker: .differs(invalid: false, why: "it only warns about shc:/1/1/ and reads the card"))

        // The chunking stage.
        jws = try faultCard("qr-needless-chunks")
        let half = (jws.compact.utf8.count + 1) / 2
        let halves = [jws.compact.utf8.prefix(half), jws.compact.utf8.dropFirst(half)].map {
            String(decoding: $0, as: UTF8.self)
        }
        addQRChunks(
            "qr-needless-chunks",
            try halves.enumerated().map { i, piece in
                Array("shc:/\(i + 1)/2/".utf8) + (try FixtureOutput.digits(piece))
            }, "A \(jws.compact.utf8.count)-character JWS, which fits one QR, split into two chunks.",
            stage: "qr-chunk",
            errors: [.qrChunkNeedless], warnings: [.qrChunked], reference: ["INVALID_QR"],
            checker: .differs(
                invalid: false,
                why: "it only warns about needless chunking (as the reference validator does) and reads the card"))

        let chunks = QRNumeric.chunks(long.compact)
        addQRChunks(
            "qr-chunk-index-out-of-range",
            try chunks.enumerated().map { i, piece in
                Array("shc:/\(i)/\(chunks.count)/".utf8) + (try FixtureOutput.digits(piece))
            },
            "The chunks of valid/covid19-chunked numbered from 0 (shc:/0/\(chunks.count)/…): chunk 0 is out of range "
                + "and chunk \(chunks.count) is missing.", stage: "qr-chunk",
            errors: [.qrChunkHeader, .qrChunkMissing],
            reference: ["INVALID_NUMERIC_QR_HEADER"])
    }

    // MARK: - The .smart-health-card file

    mutating func addFileFaults() throws {
        var jws = try faultCard("file-not-json")
        add("invalid/file-not-json.smart-health-card", Array(jws.compact.utf8))
        add(
            entry(
                "file-not-json", ["invalid/file-not-json.smart-health-card"], kind: "smart-health-card",
                "The .smart-health-card file holds the bare JWS, not {\"verifiableCredential\":[…]} JSON.",
                stage: "file",
                errors: [.fileNotJSON], reference: ["JSON_PARSE_ERROR"]))

        jws = try faultCard("file-no-verifiable-credential")
        add(
            "invalid/file-no-verifiable-credential.smart-health-card",
            JSONWriter.minified(.object(["verifiableCredentials": [.string(jws.compact)]])))
        add(
            entry(
                "file-no-verifiable-credential", ["invalid/file-no-verifiable-credential.smart-health-card"],
                kind: "smart-health-card",
                "The JWS is under \"verifiableCredentials\" (plural): the file has no "
                    + "verifiableCredential.", stage: "file", errors: [.fileNoCredentials], reference: ["SCHEMA_ERROR"])
        )

        jws = try faultCard("file-trailing-garbage")
        add(
            "invalid/file-trailing-garbage.smart-health-card",
            FixtureOutput.file([jws]) + Array("\n-- end of card --\n".utf8))
        add(
            entry(
                "file-trailing-garbage", ["invalid/file-trailing-garbage.smart-health-card"], kind: "smart-health-card",
                "Text follows the JSON object of the file.", stage: "file", errors: [.fileTrailingCharacters],
                reference: ["TRAILING_CHARACTERS"]))
    }

    // MARK: - Key sets

    /// Key sets holding the issuer's key and one bad key (a derived test key, never the caller's), so each
    /// shows one fault and still has a usable key.
    mutating func addKeySetFaults() throws {
        let material = Array("healthcards-fixtures/\(options.seed)/key/key-set".utf8)
        let extra = JWK(key: try DerivedKey.p256(from: material))
        let x = Base64URL.encode(extra.x)
        let y = Base64URL.encode(extra.y)
        func entry(
            kid: String? = nil, use: String = "sig", alg: String = "ES256", crv: String = "P-256", x: String = x,
            y: String = y, d: String? = nil
        ) -> JSONValue {
            var o: JSONObject = [
                "kty": "EC", "kid": .string(kid ?? extra.kid), "use": .string(use), "alg": .string(alg),
                "crv": .string(crv), "x": .string(x), "y": .string(y),
            ]
            if let d { o["d"] = .string(d) }
            return .object(o)
        }
        let p384 = try DerivedKey.p384PublicPoint(from: material)
        let p384x = Base64URL.encode(p384.x)
        let p384y = Base64URL.encode(p384.y)
        let p384kid = Base64URL.encode(
            Digest.sha256(Array(#"{"crv":"P-384","kty":"EC","x":"\#(p384x)","y":"\#(p384y)"}"#.utf8)))
        let wrongOrder = Base64URL.encode(
            Digest.sha256(Array(#"{"kty":"EC","crv":"P-256","x":"\#(x)","y":"\#(y)"}"#.utf8)))
        let scalar = Base64URL.encode(try DerivedKey.p256PrivateScalar(from: material))
        for (name, bad, description, errors, warnings, reference, checker) in [
            (
                "keyset-wrong-curve", entry(kid: p384kid, alg: "ES384", crv: "P-384", x: p384x, y: p384y),
                "The second key is on P-384 (crv \"P-384\"); SMART Health Cards keys are P-256.", [RuleCode.jwkCurve],
                [RuleCode](),
                ["INVALID_KEY_WRONG_ALG"], FixtureEntry.Checker.judges
            ),
            (
                "keyset-wrong-use", entry(use: "enc"),
                "The second key, an ES256 P-256 key, says use \"enc\": verifiers ignore it for health cards (a warning; "
                    + "a card signed by it would not verify).", [], [.jwkNotSHCKey], ["INVALID_KEY_WRONG_USE"],
                .differs(
                    invalid: true,
                    why: "it calls use \"enc\" an error; verify ignores the key, as the spec says verifiers "
                        + "select keys after filtering on kty, use and alg")
            ),
            (
                "keyset-wrong-alg", entry(alg: "ES384"), "The second key, a P-256 key, says alg \"ES384\".", [.jwkAlg],
                [],
                ["INVALID_KEY_WRONG_ALG"], .judges
            ),
            (
                "keyset-kid-not-thumbprint", entry(kid: wrongOrder),
                "The second key's kid is SHA-256 of its members in the wrong order (kty before crv), not its RFC 7638 "
                    + "thumbprint.", [.jwkKidMismatch], [], ["INVALID_KEY_WRONG_KID"], .judges
            ),
            (
                "keyset-private-key", entry(d: scalar),
                "The second key is published with its private scalar d (a test key made from the seed, never yours).",
                [.jwkPrivateMember], [], ["INVALID_KEY_PRIVATE"], .judges
            ),
        ] {
            let keySet = JSONValue.object(["keys": [JWK(key: options.key.publicKey).json, bad]])
            let path = "invalid/\(name).json"
            add(path, KeySetFile.bytes(keySet))
            add(
                self.entry(
                    name, [path], kind: "key-set", description, stage: "key-set", errors: errors, warnings: warnings,
                    reference: reference, keySets: [], checker: checker))
        }
    }
}
