/// What a client of the in-memory issuer would otherwise write by hand: a card from a Bundle's bytes, and a
/// card's `shc:/` QR texts.
extension CardIssuer {
    /// Issues one card from a FHIR Bundle's JSON bytes (UTF-8, no BOM), as `issue(bundle:patientID:)`.
    /// - Parameters:
    ///   - bundleBytes: one FHIR R4 Bundle as JSON (at most `InputBudget.cardFileBytes`, 1 MiB; a larger one is
    ///     refused before it is parsed).
    ///   - patientID: the issuer's id of the person, for `vc.rid` (ignored without a rid secret).
    /// - Throws: `HealthCardError` with `INPUT_TOO_LARGE` (over the budget) or `INPUT_NOT_BUNDLE` (not JSON:
    ///   the parser's message with its line and column), else what `issue(bundle:patientID:)` throws.
    public func issue(bundleBytes: [UInt8], patientID: String? = nil) throws(HealthCardError) -> IssuedCard {
        guard bundleBytes.count <= InputBudget.cardFileBytes else {
            throw HealthCardError(
                .input, code: .inputTooLarge,
                "the Bundle is \(bundleBytes.count) bytes; at most \(InputBudget.describe(bytes: InputBudget.cardFileBytes)) are read")
        }
        let bundle: JSONValue
        do { bundle = try JSONParser.parseFailing(bundleBytes) } catch {
            throw HealthCardError(.input, code: .inputNotBundle, "the Bundle is not JSON: \(error)")
        }
        return try issue(bundle: bundle, patientID: patientID)
    }
}

extension IssuedCard {
    /// The card's `shc:/` QR texts (digest section 6), one per QR symbol: a single `shc:/<digits>` when the JWS
    /// fits one version-22 QR (at most 1195 characters), else the balanced chunks `shc:/C/N/<digits>` (deprecated
    /// since SHC 1.3.0; a link is the better way to share a card this large). Each text's numeric part is two
    /// digits per JWS character; the images are `CardImages`' (HealthCardsQR).
    public var qrTexts: [String] {
        let chunks = QRNumeric.chunks(jws.compact)
        // A JWS this issuer signed holds only base64url characters and dots, which every numeric segment takes.
        return chunks.enumerated().compactMap { index, chunk in
            try? QRNumeric.text(jws: String(chunk), chunk: index + 1, of: chunks.count)
        }
    }
}
