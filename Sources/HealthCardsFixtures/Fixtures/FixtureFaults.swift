import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// The broken cards of the catalogue: each made by the pipeline with one stage replaced, so everything
/// but the fault is what a valid card has. Expected codes are the rules each fault breaks
/// (docs/error-codes.md), written down here, never read back from `verify`.
extension FixtureCatalogue {
    mutating func addFaults() throws {
        try addSignatureFaults()
        try addPayloadFaults()
        try addBundleFaults()
        try addQRFaults()
        try addFileFaults()
    }

    /// A fault card: `name`'s own synthetic person (one COVID-19 dose) through `pipeline`.
    func faultCard(
        _ name: String, _ pipeline: FixturePipeline = FixturePipeline(), claims: FixturePipeline.Claims? = nil,
        signer: FixtureSigner? = nil, record: FixtureRecord? = nil
    ) throws -> JWS {
        try card(record ?? covidRecord(name), pipeline, claims: claims, signer: signer).jws
    }

    // MARK: - JWS header and signature

    mutating func addSignatureFaults() throws {
        var pipeline = FixturePipeline()
        pipeline.signature = .otherKey(unpublishedKey)
        addCardFile(
            "invalid", "bad-signature", [try faultCard("bad-signature", pipeline)],
            "The signature is a valid ES256 signature made by another key than the one the header's kid names.",
            stage: "sign", errors: [.sigInvalid], reference: ["JWS_VERIFICATION_ERROR"])

        for (name, highR, highS, what) in [
            ("der-signature", false, false, "r and s both below 2^255 (32-byte INTEGERs)"),
            (
                "der-signature-r-high", true, false,
                "r with its top bit set (a 33-byte INTEGER with a leading zero byte)"
            ),
            (
                "der-signature-s-high", false, true,
                "s with its top bit set (a 33-byte INTEGER with a leading zero byte)"
            ),
            ("der-signature-rs-high", true, true, "r and s both with their top bit set (33-byte INTEGERs)"),
        ] {
            pipeline = FixturePipeline()
            pipeline.signature = .der(highBitR: highR, highBitS: highS)
            addCardFile(
                "invalid", name, [try faultCard(name, pipeline)],
                "The signature is written as ASN.1 DER instead of the 64-byte R‖S of JWS ES256; \(what). "
                    + "Converted, it verifies.", stage: "sign", errors: [.sigDER], reference: ["SIGNATURE_FORMAT_ERROR"]
            )
        }

        pipeline = FixturePipeline()
        pipeline.header = .kid(JWK(key: unpublishedKey.key).kid)
        addCardFile(
            "invalid", "kid-wrong", [try faultCard("kid-wrong", pipeline)],
            "The header's kid is the thumbprint of another key; the issuer's key signed the card.",
            stage: "header", errors: [.kidWrong], reference: ["JWS_VERIFICATION_ERROR"])

        pipeline = FixturePipeline()
        pipeline.header = .withoutKid
        addCardFile(
            "invalid", "kid-missing", [try faultCard("kid-missing", pipeline)],
            "The header has no kid: {\"zip\":\"DEF\",\"alg\":\"ES256\"}.", stage: "header",
            errors: [.headerKidMissing, .kidWrong], reference: ["JWS_HEADER_ERROR", "JWS_VERIFICATION_ERROR"])

        pipeline = FixturePipeline()
        pipeline.header = .withoutZip
        addCardFile(
            "invalid", "zip-missing", [try faultCard("zip-missing", pipeline)],
            "The header has no zip, though the payload is raw DEFLATE.", stage: "header",
            errors: [.headerZip], reference: ["JWS_HEADER_ERROR"])

        pipeline = FixturePipeline()
        pipeline.header = .withoutAlg
        addCardFile(
            "invalid", "alg-missing", [try faultCard("alg-missing", pipeline)],
            "The header has no alg, though the signature is ES256.", stage: "header",
            errors: [.headerAlg], reference: ["JWS_HEADER_ERROR"])

        let foreign = try FixtureSigner(testKey: otherIssuerKey)
        addCardFile(
            "invalid", "key-not-from-issuer", [try faultCard("key-not-from-issuer", signer: foreign)],
            "The card says it is from \(options.issuer) but is signed by a key of \(otherIssuer), published in that "
                + "issuer's key set (key-not-from-issuer/site); a key vouches only for its own issuer's cards.",
            stage: "sign", errors: [.keyNotFromIssuer], keySets: [Self.site, Self.otherSite],
            checker: .cannotJudge(
                "it binds no key set to an issuer and keeps only the last key set given: given this entry's key sets in "
                    + "order it verifies the card with the other issuer's key and accepts it"),
            file: "key-not-from-issuer/card")
    }

    // MARK: - Compression and claims

    mutating func addPayloadFaults() throws {
        var pipeline = FixturePipeline()
        pipeline.compression = .none
        addCardFile(
            "invalid", "not-deflated", [try faultCard("not-deflated", pipeline)],
            "The payload is the minified JSON itself, not compressed, though the header says zip \"DEF\".",
            stage: "compress", errors: [.deflateInvalid], reference: ["INFLATION_ERROR"])

        pipeline = FixturePipeline()
        pipeline.compression = .zlib
        addCardFile(
            "invalid", "zlib-wrapped", [try faultCard("zlib-wrapped", pipeline)],
            "The payload is a zlib stream (78 9C header, Adler-32 trailer) instead of raw DEFLATE.",
            stage: "compress", errors: [.deflateZlibWrapped], reference: ["INFLATION_ERROR"])

        pipeline = FixturePipeline()
        pipeline.serializePretty = true
        addCardFile(
            "invalid", "payload-not-minified", [try faultCard("payload-not-minified", pipeline)],
            "The payload JSON is pretty-printed (whitespace outside strings) before compression.",
            stage: "serialize", errors: [.payloadWhitespace])

        addCardFile(
            "invalid", "nbf-milliseconds",
            [try faultCard("nbf-milliseconds", claims: claims(nbf: notBefore * 1_000))],
            "nbf is in milliseconds (\(notBefore * 1_000)) instead of seconds.", stage: "claims",
            errors: [.nbfMilliseconds], reference: ["NOT_YET_VALID"])

        addCardFile(
            "invalid", "nbf-future", [try faultCard("nbf-future", claims: claims(nbf: options.now + 365 * 86_400))],
            "nbf is a year after now: the card is not valid yet.", stage: "claims",
            errors: [.nbfNotYetValid], reference: ["NOT_YET_VALID"])

        addCardFile(
            "invalid", "expired",
            [try faultCard("expired", claims: claims(nbf: options.now - 30 * 86_400, expires: options.now - 86_400))],
            "exp is a day before now: the card has expired.", stage: "claims",
            errors: [.expExpired], reference: ["EXPIRATION_ERROR"])

        var http = claims()
        http.issuer = "http://" + options.issuer.dropFirst("https://".count)
        addCardFile(
            "invalid", "iss-http", [try faultCard("iss-http", claims: http)],
            "iss is \(http.issuer): http, not https. The issuer's keys vouch only for cards of its https iss.",
            stage: "claims", errors: [.issNotHTTPS, .keyNotFromIssuer], reference: ["INVALID_ISSUER_URL"])

        var slash = claims()
        slash.issuer = options.issuer + "/"
        addCardFile(
            "invalid", "iss-trailing-slash", [try faultCard("iss-trailing-slash", claims: slash)],
            "iss ends with '/' (\(slash.issuer)): verifiers would fetch …//.well-known/jwks.json. The issuer's keys "
                + "vouch only for cards of its exact iss.",
            stage: "claims", errors: [.issTrailingSlash, .keyNotFromIssuer], reference: ["INVALID_ISSUER_URL"])

        pipeline = FixturePipeline()
        pipeline.editClaims = { claims in
            guard var vc = claims["vc"]?.objectValue else { return }
            vc.removeValue(forKey: "type")
            claims["vc"] = .object(vc)
        }
        addCardFile(
            "invalid", "vc-type-missing", [try faultCard("vc-type-missing", pipeline)],
            "vc has no type, so not https://smarthealth.cards#health-card.", stage: "claims",
            errors: [.vcTypeHealthCard], reference: ["SCHEMA_ERROR"])

        let revoked = covidRecord("revoked")
        addCardFile(
            "invalid", "revoked", [try faultCard("revoked", claims: claims(rid: rid(revoked)), record: revoked)],
            "The card's vc.rid is listed in the issuer's CRL (site/.well-known/crl/<kid>.json) without a time: "
                + "every card with it is revoked.", stage: "claims", errors: [.revoked], reference: ["REVOCATION_ERROR"]
        )

        let ridPerson = covidRecord("rid")
        addCardFile(
            "invalid", "revoked-before",
            [
                try faultCard(
                    "rid", claims: claims(nbf: options.now - 30 * 86_400, rid: rid(ridPerson)), record: ridPerson)
            ],
            "An earlier card of the person of valid/rid-not-revoked: the CRL entry \"<rid>.\(ridCutoff)\" revokes "
                + "the cards with this rid issued before \(Clock.describe(ridCutoff)), and this one was.",
            stage: "claims", errors: [.revoked], reference: ["REVOCATION_ERROR"])
    }

    // MARK: - FHIR Bundle: minimization and the IG

    mutating func addBundleFaults() throws {
        for (name, step, code, what, reference) in [
            (
                "min-resource-id", BundleMinimizer.Steps.resourceID, RuleCode.minResourceID, "Resource.id is kept",
                "FHIR_SCHEMA_ERROR"
            ),
            ("min-narrative", .narrative, .minText, "the narrative (DomainResource.text) is kept", "FHIR_SCHEMA_ERROR"),
            ("min-coding-display", .codingDisplay, .minCodingDisplay, "Coding.display is kept", "FHIR_SCHEMA_ERROR"),
            (
                "min-codeableconcept-text", .codeableConceptText, .minCodeableConceptText,
                "CodeableConcept.text is kept",
                "FHIR_SCHEMA_ERROR"
            ),
            ("min-meta", .meta, .minMeta, "meta (versionId, lastUpdated) is kept", "FHIR_SCHEMA_ERROR"),
        ] {
            var pipeline = FixturePipeline()
            pipeline.minimization = BundleMinimizer.Steps.all.subtracting(step)
            pipeline.validate = false
            // Coding.display left in is the issuer's defect alone (the reference validator warns too): verify warns.
            let display = code == .minCodingDisplay
            addCardFile(
                "invalid", name, [try faultCard(name, pipeline)],
                "The Bundle is minimized except that \(what).", stage: "minimize", errors: display ? [] : [code],
                warnings: display ? [code] : [], reference: [reference],
                checker: display ? .differs(invalid: true, why: "it calls Coding.display an error") : .judges)
        }
        var pipeline = FixturePipeline()
        pipeline.minimization = BundleMinimizer.Steps.all.subtracting(.references)
        pipeline.validate = false
        addCardFile(
            "invalid", "min-references", [try faultCard("min-references", pipeline)],
            "The Bundle is minimized except that references stay as exported (Patient/<id>), not resource:N.",
            stage: "minimize", errors: [.referenceUnresolved, .immunizationPatient], reference: ["SCHEMA_ERROR"])

        // The Bundle's content breaks an IG rule; `issue` refuses such a record, so the gate is off.
        pipeline = FixturePipeline()
        pipeline.validate = false
        var record = covidRecord("ig-immunization-status")
        record.doses[0].status = "not-done"
        addCardFile(
            "invalid", "ig-immunization-status", [try faultCard("", pipeline, record: record)],
            "Immunization.status is \"not-done\"; only completed doses go on a card.", stage: "validate",
            errors: [.immunizationStatus])

        record = covidRecord("ig-occurrence-missing")
        record.doses[0].date = nil
        addCardFile(
            "invalid", "ig-occurrence-missing", [try faultCard("", pipeline, record: record)],
            "The Immunization has no occurrenceDateTime.", stage: "validate",
            errors: [.immunizationOccurrence], reference: ["FHIR_SCHEMA_ERROR"])

        record = covidRecord("ig-cvx-unknown")
        record.doses[0].cvx = "2070"
        addCardFile(
            "invalid", "ig-cvx-unknown", [try faultCard("", pipeline, record: record)],
            "vaccineCode is CVX 2070, which is no CVX code (a typo of 207).", stage: "validate",
            errors: [.codeCVXUnknown], checker: .cannotJudge("it has no CVX code list, so any CVX code passes"))
    }
}
