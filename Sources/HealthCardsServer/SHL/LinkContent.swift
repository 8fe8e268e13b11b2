import HealthCardsCore

/// One file a server link shares, before encryption: its bytes and the content type its JWE and the manifest
/// say (links-specification "what to share": `application/smart-health-card` or `application/fhir+json`).
public struct LinkContent: Sendable {
    public static let fhirJSON = "application/fhir+json"
    /// The FHIR version the manifest states for FHIR content (this toolkit's Bundles are R4).
    public static let fhirVersion = "4.0.1"
    /// Most bytes of one file: its JWE (base64url, 4/3 as long) must stay within `JWE.maxCompactBytes`.
    public static let maxBytes = 3 * 1024 * 1024

    public var contentType: String
    public var fhirVersion: String?
    public var bytes: [UInt8]

    public init(contentType: String, fhirVersion: String? = nil, bytes: [UInt8]) {
        self.contentType = contentType
        self.fhirVersion = fhirVersion
        self.bytes = bytes
    }

    /// Reads a file's bytes as what it is: a `.smart-health-card` file (a JSON object whose
    /// `verifiableCredential` is a non-empty array of compact JWS strings), or a FHIR resource in JSON (an
    /// object with a string `resourceType`, e.g. an IPS or a patient-shared Bundle).
    /// - Parameters:
    ///   - bytes: the file, sent as it is (never re-serialized).
    ///   - name: the file's name, for messages; a name ending in `.smart-health-card` must be a card.
    /// - Throws: `HealthCardError(.input)` saying what the file is and what was expected; for a FHIR Bundle that
    ///   breaks FHIR R4's own Bundle invariants (`BundleInvariants`), with the code `BUNDLE_INVARIANT` and the rules.
    public static func read(_ bytes: [UInt8], name: String) throws(HealthCardError) -> LinkContent {
        guard bytes.count <= maxBytes else {
            throw HealthCardError(
                .input,
                "\(name) is \(bytes.count) bytes; a link file holds at most \(maxBytes) (its JWE must stay within \(JWE.maxCompactBytes))"
            )
        }
        let value: JSONValue
        do { value = try JSONParser.parseFailing(bytes) } catch {
            // What the parser found and where: a duplicate member, nesting too deep, bytes after the end.
            throw HealthCardError(
                .input, "\(name) is not valid JSON (\(error.description)): give a .smart-health-card file or a FHIR "
                    + "resource in JSON", code: .jsonInvalid)
        }
        guard let object = value.objectValue else {
            throw HealthCardError(
                .input, "\(name) is JSON but not an object: give a .smart-health-card file or a FHIR resource in JSON")
        }
        if let credentials = object["verifiableCredential"] {
            guard let list = credentials.arrayValue, !list.isEmpty,
                list.allSatisfy({
                    $0.stringValue.map { $0.split(separator: ".", omittingEmptySubsequences: false).count == 3 }
                        ?? false
                })
            else {
                throw HealthCardError(
                    .input,
                    "\(name): verifiableCredential is not a non-empty array of compact JWS strings (header.payload.signature)"
                )
            }
            return LinkContent(contentType: JWE.smartHealthCard, bytes: bytes)
        }
        if name.lowercased().hasSuffix(".smart-health-card") {
            throw HealthCardError(.input, "\(name) has no verifiableCredential: it is not a SMART Health Card file")
        }
        guard let type = object["resourceType"]?.stringValue, !type.isEmpty else {
            throw HealthCardError(
                .input,
                "\(name) is neither a SMART Health Card file (verifiableCredential) nor a FHIR resource (resourceType)")
        }
        // A Bundle is checked against FHIR's own Bundle invariants before anything of it is shared (an IPS
        // document must start with its Composition, bdl-11).
        let problems = BundleInvariants.problems(value)
        if !problems.isEmpty {
            throw HealthCardError(
                .input, code: .bundleInvariant,
                "\(name) is a FHIR Bundle that breaks FHIR R4's Bundle invariants, so it is not shared: "
                    + problems.map(\.description).joined(separator: "; ")
                    + ". Fix the Bundle where it is made (an IPS document starts with its Composition, and has an "
                    + "identifier and a timestamp)")
        }
        return LinkContent(contentType: fhirJSON, fhirVersion: fhirVersion, bytes: bytes)
    }
}
