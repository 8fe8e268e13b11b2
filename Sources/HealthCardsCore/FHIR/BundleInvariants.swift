/// FHIR R4's own invariants on a `Bundle` (the constraints `bdl-1` … `bdl-12` of the Bundle resource,
/// hl7.org/fhir/R4/bundle.html), checked on a Bundle someone hands over to be shared (an IPS `document`, a
/// patient-shared `collection`) before anything of it is shared: a receiver that validates it refuses what
/// breaks them, and a `document` without its Composition first is not a document at all.
///
/// Checked, each a `Problem` naming its rule:
/// - `bdl-1`: `total` only in a `searchset` or `history`;
/// - `bdl-2`: `entry.search` only in a `searchset`;
/// - `bdl-3`: `entry.request` in every entry of a `batch`, `transaction` or `history`, and in no other;
/// - `bdl-4`: `entry.response` in every entry of a `batch-response`, `transaction-response` or `history`, and in no
///   other;
/// - `bdl-5`: each entry has a `resource`, unless it has a `request` or a `response`;
/// - `bdl-7`: no two entries have the same `fullUrl` (outside a `history`, unless their `meta.versionId` differ);
/// - `bdl-8`: a `fullUrl` is not version specific (no `/_history/`);
/// - `bdl-9`: a `document` has an `identifier` with a `system` and a `value`;
/// - `bdl-10`: a `document` has a `timestamp`;
/// - `bdl-11`: a `document`'s first entry is a `Composition`;
/// - `bdl-12`: a `message`'s first entry is a `MessageHeader`.
public enum BundleInvariants {
    /// One broken invariant: its FHIR key (`bdl-11`) and what was found, what was expected.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public var rule: String
        public var message: String
        public var description: String { "\(message) (FHIR R4 Bundle invariant \(rule))" }
    }

    /// Most problems listed; one Bundle of many entries breaking one rule says so a few times, then counts.
    public static let maxProblems = 20

    /// The invariants `bundle` breaks, in the order above; empty for anything that is not a JSON object with
    /// `resourceType` `Bundle` (what it is otherwise is not this check's to say).
    public static func problems(_ bundle: JSONValue) -> [Problem] {
        guard bundle.objectValue != nil, bundle["resourceType"]?.stringValue == "Bundle" else { return [] }
        var found: [Problem] = []
        var more = 0
        func add(_ rule: String, _ message: String) {
            if found.count < maxProblems { found.append(Problem(rule: rule, message: message)) } else { more += 1 }
        }
        let type = bundle["type"]?.stringValue ?? ""
        let entries = bundle["entry"]?.arrayValue ?? []
        if bundle["total"] != nil && type != "searchset" && type != "history" {
            add("bdl-1", "Bundle.total is given in a Bundle of type '\(type)'; only a searchset or history has a total")
        }
        let needsRequest: Set<String> = ["batch", "transaction", "history"]
        let needsResponse: Set<String> = ["batch-response", "transaction-response", "history"]
        var urls: [String: [String?]] = [:]
        for (i, entry) in entries.enumerated() {
            let path = "Bundle.entry[\(i)]"
            if entry["search"] != nil && type != "searchset" {
                add("bdl-2", "\(path).search is given in a Bundle of type '\(type)'; only a searchset's entries have one")
            }
            let hasRequest = entry["request"] != nil
            let hasResponse = entry["response"] != nil
            if needsRequest.contains(type) && !hasRequest {
                add("bdl-3", "\(path) has no request; every entry of a \(type) Bundle has one")
            } else if !needsRequest.contains(type) && hasRequest {
                add("bdl-3", "\(path).request is given in a Bundle of type '\(type)'; only batch, transaction and history entries have one")
            }
            if needsResponse.contains(type) && !hasResponse {
                add("bdl-4", "\(path) has no response; every entry of a \(type) Bundle has one")
            } else if !needsResponse.contains(type) && hasResponse {
                add("bdl-4", "\(path).response is given in a Bundle of type '\(type)'; only batch-response, transaction-response and history entries have one")
            }
            if entry["resource"] == nil && !hasRequest && !hasResponse {
                add("bdl-5", "\(path) has no resource (and no request or response)")
            }
            if let url = entry["fullUrl"]?.stringValue {
                urls[url, default: []].append(entry["resource"]?["meta"]?["versionId"]?.stringValue)
                if url.contains("/_history/") {
                    add("bdl-8", "\(path).fullUrl \(Quote.text(url, limit: 80)) is version specific (/_history/); a fullUrl names the resource, not one version of it")
                }
            }
        }
        if type != "history" {
            for (url, versions) in urls.sorted(by: { $0.key < $1.key }) where versions.count > 1 {
                let distinct = Set(versions.compactMap { $0 })
                if distinct.count < versions.count {
                    add("bdl-7", "the fullUrl \(Quote.text(url, limit: 80)) is given to \(versions.count) entries; each entry's fullUrl is unique")
                }
            }
        }
        if type == "document" {
            let identifier = bundle["identifier"]
            if identifier?["system"]?.stringValue == nil || identifier?["value"]?.stringValue == nil {
                add("bdl-9", "the document has no identifier with a system and a value (Bundle.identifier); a document is identified for good")
            }
            if bundle["timestamp"] == nil {
                add("bdl-10", "the document has no timestamp (Bundle.timestamp), the date it was assembled")
            }
            let first = entries.first?["resource"]?["resourceType"]?.stringValue
            if first != "Composition" {
                add("bdl-11", "the document's first entry is \(first.map { "a \($0)" } ?? "missing"), not its Composition; a document Bundle (an IPS) starts with the Composition that says what it holds")
            }
        }
        if type == "message", entries.first?["resource"]?["resourceType"]?.stringValue != "MessageHeader" {
            add("bdl-12", "the message's first entry is not its MessageHeader")
        }
        if more > 0 { found.append(Problem(rule: found.last?.rule ?? "bdl", message: "and \(more) more problems")) }
        return found
    }
}
