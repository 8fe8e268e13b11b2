import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// File names for a record's outputs: the record id made file-name safe.
package enum OutputNames {
    /// Keeps `A–Z a–z 0–9 . _ -`, replaces anything else with `_`, and when anything was replaced (or
    /// the name would start with `.` or be longer than 100 bytes) appends `-` and 8 hex digits of the
    /// id's SHA-256, so two different ids never share a file name.
    public static func safe(_ id: String) -> String {
        var out = ""
        var changed = false
        for scalar in id.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-".unicodeScalars.contains(scalar) {
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
        if changed {
            let hash = Digest.sha256(Array(id.utf8)).prefix(4).map { byte in
                let h = String(byte, radix: 16)
                return h.count == 1 ? "0" + h : h
            }.joined()
            out += "-" + hash
        }
        return out
    }
}
