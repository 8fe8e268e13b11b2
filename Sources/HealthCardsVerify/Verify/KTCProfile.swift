import HealthCardsCore

/// The CMS "Kill the Clipboard" profile (Patient-Shared Health Documents via SMART Health Links, v0.9.0): a
/// static `U` link with a required `exp`, receivers that add `?recipient=`, senders that audit each access, and
/// FHIR Bundle content (`application/fhir+json`; CMS's reference reader also takes `application/smart-health-card`).
/// Its suggested lifetimes: 5 to 15 minutes for a link shown on a screen, 24 to 48 hours for one on paper. `P`
/// links are among its negative test vectors.
public enum KTCProfile {
    /// The longest lifetime (`exp` minus now) a link made for the profile may have, in seconds: 48 hours, the
    /// longest the profile suggests (a link printed on paper).
    public static let maxLifetimeSeconds: Int64 = 48 * 3600

    /// The content types its receivers read.
    public static let contentTypes = [SharedBundle.contentType, JWE.smartHealthCard]

    /// What a link's payload breaks of the profile, each with its severity: no `U` or a `P` (errors), no `exp`
    /// (an error), an `exp` more than `maxLifetimeSeconds` after `now` (a warning: a receiver cannot tell when the
    /// link was made, only that it lives longer than the profile suggests).
    /// - Parameters:
    ///   - flag: the payload's flag letters ("" for none).
    ///   - exp: the payload's exp in seconds since 1970, or nil.
    ///   - now: seconds since 1970.
    public static func problems(flag: String, exp: Int64?, now: Int64) -> [(message: String, severity: Finding.Severity)] {
        var out: [(String, Finding.Severity)] = []
        if !flag.contains("U") {
            out.append(("the Kill the Clipboard profile's links have flag U (one file fetched with GET); this one has \(flag.isEmpty ? "no flag" : "flag " + flag)", .error))
        }
        if flag.contains("P") {
            out.append(("the Kill the Clipboard profile has no passcodes: a link with flag P is one of its negative test vectors", .error))
        }
        if let exp {
            if exp - now > maxLifetimeSeconds {
                out.append(
                    (
                        "exp \(Clock.describe(exp)) is more than \(maxLifetimeSeconds / 3600) hours after now: the profile suggests 5 to 15 "
                            + "minutes for a link on a screen, 24 to 48 hours for one on paper", .warning
                    ))
            }
        } else {
            out.append(("the Kill the Clipboard profile requires exp", .error))
        }
        return out
    }
}
