/// The FHIR Bundle a SMART Health Link shares when it carries FHIR content (`cty` `application/fhir+json`)
/// rather than a card: what the CMS "Kill the Clipboard" profile (Patient-Shared Health Documents via SMART
/// Health Links) and the IG's IPS example hand to a receiver.
///
/// It is made from the card's own Bundle (`vc.credentialSubject.fhirBundle`), which is already minimized for
/// sharing (SHC data minimization: no `id`, `meta` but `meta.security`, `text`, display strings of coded
/// values): the same Patient and clinical resources, in the same order, as a FHIR R4 `Bundle`:
/// - `type` `collection`;
/// - `timestamp`: the card's `nbf` as a FHIR `instant` (`YYYY-MM-DDThh:mm:ssZ`), when the content was assembled;
/// - each `entry.fullUrl` a `urn:uuid:` (RFC 9562 version 8, name-based: the first 16 bytes of SHA-256 over the
///   card file's SHA-256 and the entry index), and every `reference` `resource:N` rewritten to that of entry N.
///
/// The same card file always gives the same bytes, so a link run again over an unchanged card leaves its file as
/// it is; the UUIDs tell nothing but what the card itself holds.
public enum SharedBundle {
    /// The content type of a link file holding this Bundle.
    public static let contentType = "application/fhir+json"

    /// Most bytes of a card file read (a card is a few kB; a link file holding one is bounded anyway).
    public static let maxCardFileBytes = 4 * 1024 * 1024

    /// The shared Bundle of a `.smart-health-card` file, minified JSON.
    /// - Parameter cardFile: the `.smart-health-card` file's bytes (`{"verifiableCredential":["<JWS>"]}`);
    ///   the first credential is used. The signature is not checked here: callers verify the card first.
    /// - Returns: the Bundle as minified UTF-8 JSON.
    /// - Throws: `HealthCardError(.validation)` when the file is not a card file whose payload holds a Bundle with
    ///   entries and an `nbf`.
    /// The LOINC code of the printed card's `DocumentReference` (`60591-5`, Patient summary Document): what the
    /// Kill the Clipboard profile calls a "FHIR-rendered PDF".
    public static let pdfLOINC = "60591-5"

    /// - Parameter pdf: the printed card (a PDF), put in the Bundle as a `DocumentReference` after the card's
    ///   resources, or nil for none.
    public static func make(cardFile: [UInt8], pdf: [UInt8]? = nil) throws(HealthCardError) -> [UInt8] {
        guard cardFile.count <= maxCardFileBytes, let file = try? JSONParser.parse(cardFile),
            let compact = file["verifiableCredential"]?[0]?.stringValue,
            let parts = try? JWS(compact: compact).parts(), let inflated = try? RawInflate.inflate(parts.payload),
            let payload = try? JSONParser.parse(inflated)
        else {
            throw HealthCardError(.validation, "the card file does not hold a readable SMART Health Card")
        }
        guard let bundle = payload["vc"]?["credentialSubject"]?["fhirBundle"], let nbf = CardIssuer.notBefore(of: payload)
        else {
            throw HealthCardError(.validation, "the card has no fhirBundle or nbf to share")
        }
        var shared = try make(cardBundle: bundle, timestamp: nbf, seed: Digest.sha256(cardFile))
        if let pdf { shared = withDocument(shared, pdf: pdf, timestamp: nbf, seed: Digest.sha256(cardFile)) }
        return JSONWriter.minified(shared)
    }

    /// The printed card a shared Bundle holds (`withDocument`): the PDF bytes of its `DocumentReference` of type LOINC
    /// `60591-5` with an `application/pdf` attachment; nil when it holds none (or the Bundle is not JSON).
    public static func printedCard(in shared: [UInt8]) -> [UInt8]? {
        guard shared.count <= JWE.maxCompactBytes, let bundle = try? JSONParser.parse(shared) else { return nil }
        for entry in bundle["entry"]?.arrayValue ?? [] {
            guard let resource = entry["resource"], resource["resourceType"]?.stringValue == "DocumentReference",
                (resource["type"]?["coding"]?.arrayValue ?? []).contains(where: { $0["code"]?.stringValue == pdfLOINC }),
                let attachment = resource["content"]?[0]?["attachment"],
                attachment["contentType"]?.stringValue == "application/pdf",
                let data = attachment["data"]?.stringValue, let pdf = Base64URL.decodeStandard(data)
            else { continue }
            return pdf
        }
        return nil
    }

    /// `shared` with a `DocumentReference` for the printed card appended: `status` `current`, `type` LOINC
    /// `60591-5`, `subject` the Bundle's first Patient, `date` the Bundle's timestamp, one `content.attachment`
    /// with `contentType` `application/pdf`, the PDF as base64 in `data` and its `title`.
    static func withDocument(_ shared: JSONValue, pdf: [UInt8], timestamp: Int64, seed: [UInt8]) -> JSONValue {
        guard var object = shared.objectValue, var entries = shared["entry"]?.arrayValue else { return shared }
        var document: JSONObject = [
            "resourceType": "DocumentReference", "status": "current",
            "type": .object([
                "coding": .array([
                    .object(["system": "http://loinc.org", "code": .string(pdfLOINC), "display": "Patient summary Document"])
                ])
            ]),
        ]
        if let patient = entries.first(where: { $0["resource"]?["resourceType"]?.stringValue == "Patient" }),
            let fullUrl = patient["fullUrl"]?.stringValue
        {
            document["subject"] = .object(["reference": .string(fullUrl)])
        }
        document["date"] = .string(Clock.iso8601(timestamp))
        document["content"] = .array([
            .object([
                "attachment": .object([
                    "contentType": "application/pdf", "data": .string(Base64URL.encodeStandard(pdf)),
                    "title": "SMART Health Card (printed)",
                ])
            ])
        ])
        entries.append(.object(["fullUrl": .string(uuid(seed: seed, index: entries.count)), "resource": .object(document)]))
        object["entry"] = .array(entries)
        return .object(object)
    }

    /// The shared Bundle of a card's Bundle.
    /// - Parameters:
    ///   - cardBundle: the card's `fhirBundle` (entries with `fullUrl` `resource:N`).
    ///   - timestamp: seconds since 1970 for `Bundle.timestamp`.
    ///   - seed: bytes the `urn:uuid:` names are derived from (the card file's SHA-256).
    /// - Throws: `HealthCardError(.validation)` when the Bundle has no entries, or an entry has no resource.
    public static func make(cardBundle: JSONValue, timestamp: Int64, seed: [UInt8]) throws(HealthCardError) -> JSONValue {
        guard let entries = cardBundle["entry"]?.arrayValue, !entries.isEmpty else {
            throw HealthCardError(.validation, "the card's Bundle has no entries to share")
        }
        let names = entries.indices.map { uuid(seed: seed, index: $0) }
        var mapped: [String: String] = [:]
        for (index, entry) in entries.enumerated() {
            mapped["resource:\(index)"] = names[index]
            if let fullUrl = entry["fullUrl"]?.stringValue { mapped[fullUrl] = mapped[fullUrl] ?? names[index] }
        }
        var out: [JSONValue] = []
        for (index, entry) in entries.enumerated() {
            guard let resource = entry["resource"], resource.objectValue != nil else {
                throw HealthCardError(.validation, "entry \(index) of the card's Bundle has no resource")
            }
            out.append(.object(["fullUrl": .string(names[index]), "resource": rewrite(resource, mapped, depth: 0)]))
        }
        return .object([
            "resourceType": "Bundle", "type": "collection", "timestamp": .string(Clock.iso8601(timestamp)),
            "entry": .array(out),
        ])
    }

    /// `urn:uuid:` of an RFC 9562 version 8 UUID from SHA-256(seed ‖ index as 8 bytes big-endian).
    static func uuid(seed: [UInt8], index: Int) -> String {
        var input = seed
        for shift in stride(from: 56, through: 0, by: -8) { input.append(UInt8(truncatingIfNeeded: UInt64(index) >> UInt64(shift))) }
        var bytes = Array(Digest.sha256(input).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
        }
        let groups = [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }
        return "urn:uuid:" + groups.joined(separator: "-")
    }

    /// `value` with every `reference` string that names an entry replaced by that entry's `urn:uuid:`. Card
    /// Bundles are a few levels deep; past 64 levels the value is kept as it is.
    private static func rewrite(_ value: JSONValue, _ mapped: [String: String], depth: Int) -> JSONValue {
        guard depth < 64 else { return value }
        switch value {
        case .object(let object):
            var out = JSONObject()
            for (key, member) in object {
                if key == "reference", let text = member.stringValue, let name = mapped[text] {
                    out[key] = .string(name)
                } else {
                    out[key] = rewrite(member, mapped, depth: depth + 1)
                }
            }
            return .object(out)
        case .array(let items):
            return .array(items.map { rewrite($0, mapped, depth: depth + 1) })
        default:
            return value
        }
    }
}
