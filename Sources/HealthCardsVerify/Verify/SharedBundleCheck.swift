import HealthCardsCore

/// The checks `verify` makes on a SMART Health Link file whose content is FHIR (`cty` `application/fhir+json`):
/// the shape of a FHIR R4 `Bundle` as the CMS "Kill the Clipboard" profile and the IG's IPS example share it.
/// This is not a full FHIR validation (no profiles, no terminology): it checks what a receiver needs to read the
/// Bundle at all, and the report says that is what was checked.
///
/// Checked, each failure an `SHL_BUNDLE` finding (an error):
/// - JSON object, `resourceType` `Bundle`, `type` one of the R4 `bundle-type` codes;
/// - `timestamp`, when present, a FHIR `instant` (date, time and zone);
/// - `entry` an array; each entry's `resource` an object with a `resourceType` (letters, starting upper case);
///   each `fullUrl` unique (R4 bdl-7);
/// - every `reference` of the form `urn:uuid:…`, `urn:oid:…`, `resource:N` or `Type/id` resolves to an entry
///   (by `fullUrl`, or `Type` and `id`); `#…` (contained) and absolute `http(s)` references are not followed;
/// - `birthDate` a FHIR `date`, members ending in `DateTime` a FHIR `dateTime`, `issued`/`date` of a
///   `DocumentReference` a FHIR `instant`;
/// - a `DocumentReference` attachment with `contentType` `application/pdf` has `data` that is standard base64
///   of a file starting `%PDF-` (the profile's "FHIR-rendered PDF");
/// - FHIR R4's own Bundle invariants (`BundleInvariants`: a `document` starts with its Composition, bdl-11, and
///   has an identifier and a timestamp; `request`/`response` only where the type has them; …).
public enum SharedBundleCheck {
    /// The R4 `bundle-type` codes.
    static let bundleTypes: Set<String> = [
        "document", "message", "transaction", "transaction-response", "batch", "batch-response", "history", "searchset",
        "collection",
    ]
    /// Most problems listed for one file; the rest are counted.
    static let maxProblems = 20

    /// What a check found: problems (each an `SHL_BUNDLE` message) and a one-line summary of what the Bundle holds.
    public struct Result: Sendable {
        public var problems: [String] = []
        /// e.g. `Bundle collection, 3 entries: Patient, Immunization ×2`.
        public var summary: String = ""
    }

    /// Checks `bytes` (the decrypted file) as a shared FHIR Bundle.
    public static func check(_ bytes: [UInt8]) -> Result {
        var result = Result()
        var extra = 0
        func problem(_ text: String) {
            if result.problems.count < maxProblems { result.problems.append(text) } else { extra += 1 }
        }
        defer { if extra > 0 { result.problems.append("and \(extra) more problems") } }
        guard let bundle = try? JSONParser.parse(bytes), bundle.objectValue != nil else {
            problem("the content is not a JSON object, which a FHIR Bundle (application/fhir+json) is")
            result.summary = "not FHIR JSON"
            return result
        }
        guard bundle["resourceType"]?.stringValue == "Bundle" else {
            problem(
                "the content's resourceType is \(Quote.text(bundle["resourceType"]?.stringValue ?? "(none)", limit: 40)), not Bundle")
            result.summary = "not a Bundle"
            return result
        }
        let type = bundle["type"]?.stringValue
        if let type, bundleTypes.contains(type) {
        } else {
            problem("Bundle.type is \(Quote.text(type ?? "(none)", limit: 40)); FHIR R4 needs one of the bundle-type codes (collection)")
        }
        if let value = bundle["timestamp"] {
            if !isInstant(value.stringValue) {
                problem("Bundle.timestamp is not a FHIR instant (YYYY-MM-DDThh:mm:ss with a zone)")
            }
        }
        var entries: [JSONValue] = []
        if let value = bundle["entry"] {
            if let array = value.arrayValue { entries = array } else { problem("Bundle.entry is not an array") }
        }
        var fullUrls: Set<String> = []
        var typeIds: Set<String> = []
        var types: [(String, Int)] = []
        for (index, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(index)]"
            if let fullUrl = entry["fullUrl"] {
                if let text = fullUrl.stringValue, !text.isEmpty {
                    if !fullUrls.insert(text).inserted { problem("\(path).fullUrl \(Quote.text(text, limit: 60)) is not unique (bdl-7)") }
                } else {
                    problem("\(path).fullUrl is not a URI string")
                }
            }
            guard let resource = entry["resource"], resource.objectValue != nil else {
                problem("\(path) has no resource object")
                continue
            }
            guard let kind = resource["resourceType"]?.stringValue, isResourceType(kind) else {
                problem("\(path).resource has no resourceType")
                continue
            }
            if let i = types.firstIndex(where: { $0.0 == kind }) { types[i].1 += 1 } else { types.append((kind, 1)) }
            if let id = resource["id"]?.stringValue { typeIds.insert("\(kind)/\(id)") }
        }
        // A relative reference (`Patient/1`, `Patient/1/_history/2`) also resolves to an absolute fullUrl ending in it:
        // the last one to four segments of each fullUrl, looked up in one set (a scan per reference would cost
        // references × entries on a hostile Bundle).
        for url in fullUrls {
            var end = url.endIndex
            for _ in 0..<4 {
                guard let slash = url[..<end].lastIndex(of: "/") else { break }
                typeIds.insert(String(url[url.index(after: slash)...]))
                end = slash
            }
        }
        for (index, entry) in entries.enumerated() {
            guard let resource = entry["resource"], let kind = resource["resourceType"]?.stringValue else { continue }
            walk(
                resource, path: "Bundle.entry[\(index)].resource", kind: kind, depth: 0, fullUrls: fullUrls, typeIds: typeIds,
                problem: problem)
        }
        let listed = types.map { $0.1 > 1 ? "\($0.0) ×\($0.1)" : $0.0 }.joined(separator: ", ")
        result.summary =
            "Bundle \(type ?? "(no type)"), \(entries.count) \(entries.count == 1 ? "entry" : "entries")"
            + (listed.isEmpty ? "" : ": \(listed)")
        for invariant in BundleInvariants.problems(bundle) where invariant.rule != "bdl-7" {
            problem(invariant.description)  // bdl-7 (a fullUrl twice) is said above, entry by entry
        }
        if !types.contains(where: { $0.0 == "Patient" }) {
            problem("the Bundle holds no Patient: a shared Bundle says whose record it is (a collection with the Patient)")
        }
        return result
    }

    /// Whether `text` is a FHIR `instant`: a full `dateTime` with a time and a zone.
    static func isInstant(_ text: String?) -> Bool {
        guard let text, text.contains("T") else { return false }
        return FHIRDate.isValidDateTime(text, allowPartial: false)
    }

    static func isResourceType(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, ("A"..."Z").contains(first), text.count <= 64 else { return false }
        return text.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) || ("a"..."z").contains($0) }
    }

    /// Checks references, dates and PDF attachments inside one resource.
    private static func walk(
        _ value: JSONValue, path: String, kind: String, depth: Int, fullUrls: Set<String>, typeIds: Set<String>,
        problem: (String) -> Void
    ) {
        guard depth < 32 else {
            problem("\(path) is nested more than 32 levels deep")
            return
        }
        switch value {
        case .array(let items):
            for (i, item) in items.enumerated() {
                walk(item, path: "\(path)[\(i)]", kind: kind, depth: depth + 1, fullUrls: fullUrls, typeIds: typeIds, problem: problem)
            }
        case .object(let object):
            for (key, member) in object {
                let here = "\(path).\(key)"
                if key == "reference", let text = member.stringValue {
                    if !resolves(text, fullUrls: fullUrls, typeIds: typeIds) {
                        problem("\(here) \(Quote.text(text, limit: 60)) points at no entry of the Bundle")
                    }
                } else if key == "birthDate" {
                    if !FHIRDate.isValidDate(member.stringValue ?? "") { problem("\(here) is not a FHIR date") }
                } else if key.hasSuffix("DateTime") {
                    if !FHIRDate.isValidDateTime(member.stringValue ?? "") { problem("\(here) is not a FHIR dateTime") }
                } else if kind == "DocumentReference", depth == 0, key == "date" {
                    if !isInstant(member.stringValue) { problem("\(here) is not a FHIR instant") }
                } else if key == "attachment", kind == "DocumentReference" {
                    checkAttachment(member, path: here, problem: problem)
                }
                walk(member, path: here, kind: kind, depth: depth + 1, fullUrls: fullUrls, typeIds: typeIds, problem: problem)
            }
        default:
            break
        }
    }

    /// A reference resolves when it names an entry (its fullUrl, `Type/id`, or the end of an absolute fullUrl:
    /// `typeIds` holds both); contained (`#`) and absolute web references are not followed.
    static func resolves(_ text: String, fullUrls: Set<String>, typeIds: Set<String>) -> Bool {
        if text.hasPrefix("#") || text.hasPrefix("http://") || text.hasPrefix("https://") { return true }
        return fullUrls.contains(text) || typeIds.contains(text)
    }

    private static func checkAttachment(_ value: JSONValue, path: String, problem: (String) -> Void) {
        guard value["contentType"]?.stringValue.map({ JWE.mediaType($0, is: "application/pdf") }) == true else { return }
        guard let data = value["data"]?.stringValue else {
            if value["url"] == nil { problem("\(path) is a PDF attachment with neither data nor url") }
            return
        }
        guard let bytes = Base64URL.decodeStandard(data) else {
            problem("\(path).data is not base64 (FHIR base64Binary)")
            return
        }
        if !bytes.starts(with: Array("%PDF-".utf8)) {
            problem("\(path).data decodes to \(bytes.count) bytes that are not a PDF (no %PDF- header)")
        }
    }
}
