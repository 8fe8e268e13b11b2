/// Minimizes a FHIR Bundle for a SMART Health Card (digest section 3; spec `docs/index.md` L282–290):
///
/// - `Bundle.id`, `Bundle.meta`, `Bundle.text` removed;
/// - every `entry.fullUrl` becomes `resource:N` (N the 0-based entry index); other entry members
///   (`search`, `request`, `response`) are dropped, since a `collection` Bundle has no use for them;
/// - in each resource: root `id` and `text` removed; `Patient.identifier` removed (0..0 in the IG's
///   data-minimization and US Patient profiles: it would show the issuer's record numbers to every verifier;
///   `vc.rid` is derived from it before minimization, `PatientIdentity.ofBundle`); a `meta` of FHIR Meta
///   elements is removed unless
///   it holds `security`, in which case only `meta.security` stays (the identity-assurance label, or a
///   `security` that is not a list of Codings, for the validator to refuse). A
///   `meta` that is not a FHIR Meta (a string, an unknown member) is left as it is, for the validator
///   to refuse: it is not data to drop silently;
/// - `CodeableConcept.text` (any object with `coding`) and `Coding.display` (any object with both
///   `system` and `code`) removed; `Reference.display` kept;
/// - every `Reference.reference` rewritten to the `resource:N` it resolves to, matched by the
///   target entry's `fullUrl`, by `Type/id` of the target resource, or by the last two segments of an
///   absolute `fullUrl`; a reference that resolves to nothing is an error;
/// - objects and arrays left empty are removed;
/// - doses (Immunization) and lab results (Observation) are listed by date, the input's order kept
///   for equal dates (`EntryOrder`), as verifier apps show entries in the order stored.
///
/// Minimizing a Bundle that is already minimized (and in date order) changes nothing.
public enum BundleMinimizer {
    /// The minimization steps, each of which can be left out to show a verifier what a card is like
    /// without it (the fixture catalogue); cards are always minimized with `.all`.
    public struct Steps: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Remove `Resource.id`.
        public static let resourceID = Steps(rawValue: 1 << 0)
        /// Remove `DomainResource.text` (the narrative).
        public static let narrative = Steps(rawValue: 1 << 1)
        /// Remove `meta`, or keep only `meta.security`.
        public static let meta = Steps(rawValue: 1 << 2)
        /// Remove `CodeableConcept.text`.
        public static let codeableConceptText = Steps(rawValue: 1 << 3)
        /// Remove `Coding.display`.
        public static let codingDisplay = Steps(rawValue: 1 << 4)
        /// Rewrite `Reference.reference` to `resource:N`.
        public static let references = Steps(rawValue: 1 << 5)
        /// Remove `Patient.identifier` (SHC IG `shc-patient-general-dm`, `shc-patient-us-*`: 0..0).
        public static let patientIdentifier = Steps(rawValue: 1 << 6)
        /// Every step: what a card gets.
        public static let all: Steps = [
            .resourceID, .narrative, .meta, .codeableConceptText, .codingDisplay, .references, .patientIdentifier,
        ]
    }

    /// Minimizes `bundle`.
    /// - Parameter steps: the steps to apply; `.all` (the default) for a card. `entry.fullUrl` always
    ///   becomes `resource:N` and empty containers are always pruned.
    /// - Returns: the minimized Bundle, member order otherwise kept.
    /// - Throws: `HealthCardError` (`all`: every problem found, each `HealthCardError(.bundle)` with the
    ///   FHIR path (`Bundle.entry[2].resource.patient.reference`).
    public static func minimize(_ bundle: JSONValue, steps: Steps = .all) throws(HealthCardError) -> JSONValue {
        try minimizeKeepingOrigins(bundle, steps: steps).bundle
    }

    /// As `minimize`, with each output entry's index in the input Bundle (`origins[new] == old`), so a
    /// problem found in the output can be traced to what produced it.
    static func minimizeKeepingOrigins(_ bundle: JSONValue, steps: Steps = .all) throws(HealthCardError)
        -> (bundle: JSONValue, origins: [Int])
    {
        guard var root = bundle.objectValue, root["resourceType"]?.stringValue == "Bundle" else {
            throw HealthCardError(.bundle, "expected a FHIR Bundle (resourceType \"Bundle\"), found \(describe(bundle))", at: "Bundle")
        }
        guard let entries = root["entry"]?.arrayValue, !entries.isEmpty else {
            throw HealthCardError(.bundle, "the Bundle has no entries; expected a Patient and at least one Immunization or Observation", at: "Bundle.entry")
        }
        var problems: [HealthCardError] = []
        let origins = EntryOrder.sorted(entries)
        var newIndex = Array(entries.indices)
        for (new, old) in origins.enumerated() { newIndex[old] = new }
        let targets = referenceTargets(entries).mapValues { newIndex[$0] }
        var minimizedEntries: [JSONValue] = []
        for (index, old) in origins.enumerated() {
            let entry = entries[old]
            let path = "Bundle.entry[\(old)]"
            guard let resource = entry["resource"]?.objectValue else {
                problems.append(HealthCardError(.bundle, "entry has no resource object", at: path + ".resource"))
                continue
            }
            var minimized = minimizeResourceRoot(resource, steps: steps)
            var walked = JSONValue.object(minimized)
            var lazy = LazyPath(path + ".resource")
            rewrite(&walked, path: &lazy, targets: targets, steps: steps, problems: &problems)
            minimized = walked.objectValue ?? JSONObject()
            var newEntry = JSONObject()
            newEntry["fullUrl"] = .string("resource:\(index)")
            newEntry["resource"] = .object(minimized)
            minimizedEntries.append(.object(newEntry))
        }
        if !problems.isEmpty { throw HealthCardError(all: problems) }
        root.removeValue(forKey: "id")
        root.removeValue(forKey: "meta")
        root.removeValue(forKey: "text")
        root["entry"] = .array(minimizedEntries)
        return (.object(root), origins)
    }

    private static func describe(_ value: JSONValue) -> String {
        if let type = value["resourceType"]?.stringValue { return "resourceType \"\(type)\"" }
        switch value {
        case .object: return "an object without resourceType"
        case .array: return "an array"
        default: return "a JSON scalar"
        }
    }

    /// Maps every way an entry can be referred to onto its index.
    static func referenceTargets(_ entries: [JSONValue]) -> [String: Int] {
        var map: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            let own = "resource:\(index)"
            map[own] = map[own] ?? index
            if let fullUrl = entry["fullUrl"]?.stringValue {
                map[fullUrl] = map[fullUrl] ?? index
                if fullUrl.containsCharacters("://") {
                    let segments = fullUrl.split(separator: "/")
                    if segments.count >= 2 {
                        let key = segments.suffix(2).joined(separator: "/")
                        map[key] = map[key] ?? index
                    }
                }
            }
            if let type = entry["resource"]?["resourceType"]?.stringValue, let id = entry["resource"]?["id"]?.stringValue {
                let key = "\(type)/\(id)"
                map[key] = map[key] ?? index
            }
        }
        return map
    }

    private static func minimizeResourceRoot(_ resource: JSONObject, steps: Steps) -> JSONObject {
        var out = resource
        if steps.contains(.resourceID) { out.removeValue(forKey: "id") }
        if steps.contains(.narrative) { out.removeValue(forKey: "text") }
        if steps.contains(.patientIdentifier), out["resourceType"]?.stringValue == "Patient" {
            out.removeValue(forKey: "identifier")
        }
        if steps.contains(.meta), let meta = out["meta"]?.objectValue, meta.keys.allSatisfy(metaElements.contains) {
            // A `security` member is kept whatever it holds: the identity-assurance label, or (an object, a string,
            // an empty list) a label written wrong, for the validator to refuse (`META_SECURITY`), never dropped.
            if let security = meta["security"] {
                out["meta"] = .object(["security": security])
            } else {
                out.removeValue(forKey: "meta")
            }
        }
        return out
    }

    /// The elements of FHIR R4 `Meta` (with `id` and `extension` of `Element`).
    static let metaElements: Set<String> = ["id", "extension", "versionId", "lastUpdated", "source", "profile", "security", "tag"]

    /// Walks a resource: drops CodeableConcept.text and Coding.display, rewrites references, prunes empties.
    private static func rewrite(_ node: inout JSONValue, path: inout LazyPath, targets: [String: Int], steps: Steps,
                                problems: inout [HealthCardError]) {
        switch node {
        case .object(var object):
            if steps.contains(.codeableConceptText), object["coding"] != nil { object.removeValue(forKey: "text") }
            if steps.contains(.codingDisplay), object["system"] != nil && object["code"] != nil { object.removeValue(forKey: "display") }
            if steps.contains(.references), let reference = object["reference"]?.stringValue {
                if let index = targets[reference] {
                    object["reference"] = .string("resource:\(index)")
                } else {
                    problems.append(HealthCardError(.bundle, "reference \(Quote.text(reference)) resolves to no entry of the Bundle; "
                        + "every reference must point at an entry (by fullUrl or Type/id) so it can become resource:N",
                        at: path.text + ".reference"))
                }
            }
            var kept = JSONObject(capacity: object.count)
            for (key, value) in object {
                var child = value
                path.push(.member(key))
                rewrite(&child, path: &path, targets: targets, steps: steps, problems: &problems)
                path.pop()
                // The keys are the object's own, so each is new in `kept`.
                if !isEmptyContainer(child) { kept.append(key, child) }
            }
            node = .object(kept)
        case .array(let items):
            var kept: [JSONValue] = []
            kept.reserveCapacity(items.count)
            for (i, item) in items.enumerated() {
                var child = item
                path.push(.index(i))
                rewrite(&child, path: &path, targets: targets, steps: steps, problems: &problems)
                path.pop()
                if !isEmptyContainer(child) { kept.append(child) }
            }
            node = .array(kept)
        default: break
        }
    }

    static func isEmptyContainer(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let o): return o.isEmpty
        case .array(let a): return a.isEmpty
        default: return false
        }
    }
}
