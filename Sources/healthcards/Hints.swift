import HealthCardsCore

/// What the command line adds to the library's messages, in one table: the library speaks in its own terms
/// (the values and parameters it was given), and this program says its settings as its options and adds, by
/// rule code, the command that fixes the problem. docs/library.md, "Messages".
enum Hints {
    /// The library parameter a message begins with (`HealthCardError.setting`) → the option that gives it.
    static let options: [String: String] = [
        "issuer": "--issuer",
        "key set": "--jwks",
        "link": "--link",
        "link site": "--shl-site",
        "output folder": "--out",
        "report": "--report",
        "share": "--share",
        "site": "--site",
        "viewer": "--viewer",
    ]

    /// Rule code → the advice the command line appends to the message of an error the library threw or wrote
    /// in a report (a setting refused, a file missing, a card to revoke).
    static let forErrors: [RuleCode: String] = [
        .keyFileMissing: "make one with `healthcards keygen --out FILE`",
        .ridSecretMissing: "make one with `healthcards keygen --rid-secret FILE`",
        .keyDemo: "for a real issuer make a key with `healthcards keygen --out /secure/issuer.pem`",
        .siteNotLaidOut: "lay it out with `healthcards site --out SITE --issuer URL KEY...`",
        .keyNotPublished: "publish it with `healthcards site --out SITE --issuer URL KEY...` (with the keys already there)",
        .qrTooLong: "pass --shl BASE_URL --site SITE for a SMART Health Link, or --chunk for chunked QRs",
        .cardReplaced: "revoke with `healthcards revoke --site SITE --key KEY --rid-secret FILE --report REPORT --id ID --before NBF`",
        .outputStale: "print again with `healthcards print`, or encrypt the new card under the same link with "
            + "`healthcards shl --base-url BASE_URL --site SITE CARD`",
        .cardWithdrawn: "withdraw its link with `healthcards revoke --site SITE --link FILE`",
        .ridRevoked: "narrow the entry with `healthcards revoke --site SITE --key KEY --rid-secret FILE --report REPORT "
            + "--id ID --before TIME --narrow`",
        .ridNone: "name the identifier system that holds the patient id with --patient-id-system SYSTEM",
        .shlWithdrawn: "print without the link (--no-link), or make a new link first (`healthcards shl --renew ID`, "
            + "`healthcards issue --shl-renew ID`)",
    ]

    /// Rule code → the advice the command line appends to a finding of `verify` (or of `print`, `directory`).
    static let forFindings: [RuleCode: String] = [
        .sigNotChecked: "give the issuer's key set with --jwks ISSUER_URL=PATH, or its site folder written by "
            + "`healthcards site --issuer URL`",
        .keyNotFromIssuer: "bind the key set with --jwks ISSUER_URL=PATH, or give the site folder written by "
            + "`healthcards site --issuer URL`",
        .directoryKeysStale: "--max-key-age sets the age allowed",
        .jwksNotJSON: "make the key set with `healthcards jwks KEY --out jwks.json` and give that to --jwks",
        .crlWithoutKeySet: "give the site folder or key set with --jwks",
    ]

    /// The library's message as the command line says it: a setting named first said as its option, the
    /// hint for the rule code appended.
    static func said(_ error: HealthCardError) -> String {
        var text = error.text
        if let setting = error.setting, let option = options[setting], text.hasPrefix(setting) {
            text = option + text.dropFirst(setting.count)
        }
        guard let code = error.code, let hint = forErrors[code] ?? forFindings[code] else { return text }
        return text + " (\(hint))"
    }

    /// A finding's message with the hint for its code.
    static func said(_ finding: Finding) -> String {
        guard let hint = forFindings[finding.code] else { return finding.text }
        return finding.text + " (\(hint))"
    }
}

extension HealthCardError {
    /// `location: CODE: message` for each error this one stands for, joined with `; `, as the command line
    /// says them (`Hints`).
    var commandLineText: String { all.map { $0.described(Hints.said) }.joined(separator: "; ") }
}
