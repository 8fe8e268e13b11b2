/// The stable identity of a person that a card's `vc.rid` is derived from (digest section 8: the rid
/// is HMAC-SHA-256 of "the issuer's stable id of the person").
///
/// The rid must follow the person, not the file: two exports that both start at line 1 must not give
/// two people one rid (revoking one would revoke the other), and the same person in two runs must get
/// the same rid (revoking them revokes every card they hold).
/// - CSV input: the template's patient id column, normalized (`normalize`).
/// - Bundle input (`.json`, `.ndjson`): the Patient's `identifier`, as `system|value` (FHIR's token
///   form), both normalized. Without `--patient-id-system`, the Patient must have exactly one current
///   identifier with a system and a value; with it, the identifier of that system. A Bundle without
///   such an identifier gets no rid, and the report says why.
/// `issue` and `revoke` normalize ids with the same function, so `--id " P-1001 "` is `P-1001`.
public enum PatientIdentity {
    /// The longest id a rid is derived from, in bytes (UTF-8): 256. Longer ids (a CSV patient id column, a
    /// Patient's `system|value`) are refused: an id is written into every report line and file name.
    public static let maxIDBytes = 256

    /// Characters trimmed from both ends of an id (after the steps of `normalize` that precede trimming).
    static let trimmed = " \t\r\n\u{0B}\u{0C}"

    /// An id as `issue` reads it (for grouping a CSV's rows into patients, for file names and for the rid) and
    /// `revoke` takes it: the one form of an id, so that ids that look the same are the same id.
    ///
    /// 1. Unicode NFC (canonically equivalent spellings, `é` as one character or as `e` + U+0301, are one id;
    ///    Swift's `==` already takes them as equal, the rid's HMAC over UTF-8 would not);
    /// 2. invisible format characters removed wherever they are (`ControlCharacters.isInvisibleFormat`: a
    ///    zero-width space U+200B, a byte order mark U+FEFF inside a field, joiners, direction marks);
    /// 3. spaces that look like U+0020 (`ControlCharacters.isLookalikeSpace`: the no-break space U+00A0, …) and
    ///    the ideographic space U+3000 written as U+0020;
    /// 4. ASCII whitespace (space, tab, line ends, vertical tab, form feed) trimmed from both ends.
    ///
    /// Everything else is kept exactly: ids are case-sensitive, and inner spaces stay as they are.
    /// - Returns: the normalized id (empty when the id held only whitespace and invisible characters).
    public static func normalize(_ id: String) -> String {
        var simple = true
        for scalar in id.unicodeScalars where scalar.value >= 0x80 {
            simple = false
            break
        }
        if simple { return id.trimmingCharacters(in: trimmed) }
        let composed = String(decoding: id._nfcCodeUnits, as: UTF8.self)
        var out = String.UnicodeScalarView()
        for scalar in composed.unicodeScalars {
            if ControlCharacters.isInvisibleFormat(scalar) { continue }
            if ControlCharacters.isLookalikeSpace(scalar) || scalar.value == 0x3000 {
                out.append(" ")
            } else {
                out.append(scalar)
            }
        }
        return String(out).trimmingCharacters(in: trimmed)
    }

    /// Where a record's rid comes from: the id it is derived from, or why it has none.
    public enum Outcome: Sendable, Equatable {
        /// The normalized id (`P-1001`, or `system|value` for Bundle input).
        case id(String)
        /// No stable id: the card is issued without `vc.rid`; the reason says what was found.
        case none(reason: String)

        public var id: String? {
            if case .id(let id) = self { return id }
            return nil
        }
    }

    /// The identity of a Bundle record: its Patient's `identifier` (`system|value`).
    /// - Parameters:
    ///   - bundle: the Bundle as read (before minimization, which may drop `identifier`).
    ///   - system: the identifier system the operator named (`issue --patient-id-system`), or nil to
    ///     take the Patient's only identifier that has both a system and a value.
    public static func ofBundle(_ bundle: JSONValue, system: String?) -> Outcome {
        let patients = (bundle["entry"]?.arrayValue ?? []).compactMap { $0["resource"] }
            .filter { $0["resourceType"]?.stringValue == "Patient" }
        guard patients.count == 1 else {
            return .none(
                reason: patients.isEmpty
                    ? "the Bundle has no Patient resource"
                    : "the Bundle has \(patients.count) Patient resources, so whose card it is is not clear")
        }
        // Identifiers marked `use: old` no longer identify the person.
        let identifiers = (patients[0]["identifier"]?.arrayValue ?? []).filter { $0["use"]?.stringValue != "old" }
        let pairs: [(system: String, value: String)] = identifiers.compactMap { identifier in
            guard let s = identifier["system"]?.stringValue.map(normalize), !s.isEmpty,
                let v = identifier["value"]?.stringValue.map(normalize), !v.isEmpty
            else { return nil }
            return (s, v)
        }
        let advice =
            "Add Patient.identifier (system and value) to the export, or name the identifier system that "
            + "holds the issuer's patient id (the patient id system)"
        if let wanted = system.map(normalize) {
            let values = pairs.filter { $0.system == wanted }.map(\.value).reduce(into: [String]()) {
                if !$0.contains($1) { $0.append($1) }
            }
            if values.count == 1 {
                let id = wanted + "|" + values[0]
                return id.utf8.count <= maxIDBytes ? .id(id) : tooLong(id)
            }
            if values.isEmpty {
                let found = pairs.map(\.system)
                return .none(
                    reason: "the Patient has no identifier with system \(wanted)"
                        + (found.isEmpty ? "" : " (found: \(found.joined(separator: ", ")))"))
            }
            return .none(
                reason: "the Patient has \(values.count) different identifiers with system \(wanted), "
                    + "so which one identifies the person is not clear")
        }
        switch pairs.count {
        case 1:
            let id = pairs[0].system + "|" + pairs[0].value
            guard id.utf8.count <= maxIDBytes else { return tooLong(id) }
            return .id(id)
        case 0:
            if identifiers.isEmpty { return .none(reason: "the Patient has no identifier. \(advice)") }
            return .none(
                reason: "the Patient's identifier has no system (a value alone is not unique: another "
                    + "department or issuer may use the same number). \(advice)")
        default:
            let systems = pairs.map(\.system).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
            return .none(
                reason: "the Patient has \(pairs.count) identifiers (\(systems.joined(separator: ", "))), so "
                    + "which one identifies the person is not clear; name its system as the patient id system")
        }
    }

    /// No rid from an identifier over `maxIDBytes` (the report says its length, not its value).
    static func tooLong(_ id: String) -> Outcome {
        .none(reason: "the Patient's identifier (system|value) is \(id.utf8.count) bytes long; a rid is derived from an id of at "
            + "most \(maxIDBytes). Check the export's Patient.identifier")
    }

    /// A 64-bit fingerprint of the person a minimized Bundle is about (the Patient's `name` and
    /// `birthDate`), to tell two people who were given one identifier apart within a run. Hashed with
    /// this process's seed: comparable only within one run.
    package static func fingerprint(ofMinimized bundle: JSONValue) -> UInt64 {
        let patient = (bundle["entry"]?.arrayValue ?? []).compactMap { $0["resource"] }
            .first { $0["resourceType"]?.stringValue == "Patient" }
        var hasher = Hasher()
        hasher.combine(patient?["name"].map { JSONWriter.minifiedString($0) } ?? "")
        hasher.combine(patient?["birthDate"]?.stringValue ?? "")
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }
}
