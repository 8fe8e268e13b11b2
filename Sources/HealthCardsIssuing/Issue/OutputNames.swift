import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// File names for a record's outputs (`cards/<name>.smart-health-card`, `qr/<name>.png`, `pdf/<name>.pdf`,
/// `shl/<name>.txt`): named for the person, never for the record's place in its input, so that a changed export
/// (a record dropped, records reordered) never puts one person's card in the file that held another's.
/// - CSV records: the patient id made file-name safe (`safe`).
/// - Bundle records: the Patient's identifier that gives the rid (`PatientIdentity.ofBundle`), `person(identity:)`;
///   a Patient without one is named by its name and birth date (`person(ofBundle:system:fallback:)`).
package enum OutputNames {
    /// Keeps `A–Z a–z 0–9 . _ -`, replaces anything else with `_`, and when anything was replaced (or
    /// the name would start with `.` or be longer than 100 bytes) appends `-` and 8 hex digits of the
    /// id's SHA-256, so two different ids never share a file name.
    public static func safe(_ id: String) -> String {
        var out = ""
        var changed = false
        for scalar in id.unicodeScalars {
            if isSafe(scalar) {
                out.unicodeScalars.append(scalar)
            } else {
                out.append("_")
                changed = true
            }
        }
        if out.hasPrefix(".") || out.isEmpty || out.utf8.count > 100 {
            changed = true
            out = String(out.prefix(100))
            if out.hasPrefix(".") { out = "_" + out.dropFirst() }
        }
        if changed { out += "-" + hex(Digest.sha256(Array(id.utf8)).prefix(4)) }
        return out
    }

    /// The characters a name keeps as they are.
    static func isSafe(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-".unicodeScalars.contains(scalar))
    }

    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        bytes.map { byte in
            let h = String(byte, radix: 16)
            return h.count == 1 ? "0" + h : h
        }.joined()
    }

    /// The most bytes of an identifier's value kept in a name (the hash after it tells ids apart).
    static let readableBytes = 48

    /// The name of a person identified by `identity` (`system|value`, as the rid is derived from): the value's
    /// file-name-safe characters (others written `_`, at most 48 bytes; `patient` when none is left), `-`, and 16
    /// hex digits of SHA-256 of the whole `system|value`. The same identity always gives the same name, and two
    /// identities share one only if their SHA-256 share 64 bits (a batch refuses that, `NameRegister.claim`).
    public static func person(identity: String) -> String {
        let value = identity.lastIndex(of: "|").map { String(identity[identity.index(after: $0)...]) } ?? identity
        return readable(value) + "-" + hex(Digest.sha256(Array(identity.utf8)).prefix(8))
    }

    /// `text`'s safe characters (`_` for the others), at most 48 bytes, without a leading `.` or `-`; `patient`
    /// when nothing is left.
    static func readable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if out.utf8.count >= readableBytes { break }
            out.unicodeScalars.append(isSafe(scalar) ? scalar : "_")
        }
        while out.hasPrefix(".") || out.hasPrefix("-") { out.removeFirst() }
        return out.isEmpty ? "patient" : out
    }

    /// The name of a Bundle record's outputs and the key of the person it names (what tells two people apart).
    /// - The Patient's identifier that gives the rid (`PatientIdentity.ofBundle` with `system`): `person(identity:)`,
    ///   key `id:system|value`.
    /// - Else, the Bundle's one Patient's `name` and `birthDate` as read: `patient-` and 16 hex digits of their
    ///   SHA-256, key `patient:…` (two people with the same name and birth date and no identifier cannot be told
    ///   apart by their records).
    /// - A Bundle with no Patient or several: `safe(fallback)` (the record's id; such a record is not issued).
    public static func person(ofBundle bundle: JSONValue, system: String?, fallback: String) -> (name: String, person: String) {
        if let identity = PatientIdentity.ofBundle(bundle, system: system).id {
            return (person(identity: identity), "id:" + identity)
        }
        let patients = (bundle["entry"]?.arrayValue ?? []).compactMap { $0["resource"] }
            .filter { $0["resourceType"]?.stringValue == "Patient" }
        guard patients.count == 1 else { return (safe(fallback), "record:" + fallback) }
        let key = "patient:" + (patients[0]["name"].map { JSONWriter.minifiedString($0) } ?? "") + "|"
            + (patients[0]["birthDate"]?.stringValue ?? "")
        return ("patient-" + hex(Digest.sha256(Array(key.utf8)).prefix(8)), key)
    }
}
