/// The CDC CVX "vaccines administered" code set (`http://hl7.org/fhir/sid/cvx`), as SMART Health Cards
/// use it in `Immunization.vaccineCode` (SHC Vaccination & Testing IG, value set `immunization-all-cvx`).
///
/// The table (`entries`, `listDate`, `newestLastUpdated`) lives in the generated `CVXCodes.swift`; see
/// `scripts/gen-cvx.py`. It holds every status, including the codes `01`–`09` that the IG's own list lacks.
public enum CVX {
    /// CDC's status label for a code.
    public enum Status: String, Sendable, CaseIterable {
        case active = "Active"
        case inactive = "Inactive"
        case nonUS = "Non-US"
        case neverActive = "Never Active"
        case pending = "Pending"
    }

    /// One CVX code.
    public struct Entry: Sendable, Equatable {
        /// CDC's spelling: 1 to 3 digits, `01`–`09` keep the leading zero.
        public let code: String
        /// CDC's short description, verbatim.
        public let shortDescription: String
        public let status: Status
        /// CDC's "Last Updated" date, `YYYY-MM-DD`.
        public let lastUpdated: String

        public init(_ code: String, _ shortDescription: String, _ status: Status, _ lastUpdated: String) {
            self.code = code
            self.shortDescription = shortDescription
            self.status = status
            self.lastUpdated = lastUpdated
        }
    }

    private static let byCode: [String: Entry] = Dictionary(uniqueKeysWithValues: entries.map { ($0.code, $0) })

    /// The entry for `code`, spelled as CDC spells it (`"03"`, not `"3"`); nil for a code not in the table.
    ///
    /// A nil answer may mean the code is newer than `listDate`: CDC adds codes several times a year.
    public static func lookup(_ code: String) -> Entry? { byCode[code] }

    /// The COVID-19 vaccine codes: every code whose CDC short description names COVID-19.
    ///
    /// US products 207, 208, 210–213, 217–219, 221, 225–230, 300–302, 308–313 and 334 (all statuses,
    /// including the unspecified 213), and the non-US products 500–521 (500 is "COVID-19 Non-US Vaccine,
    /// UNSPECIFIED"). 801 (AS03 adjuvant, used with 225/226) is an adjuvant, not a vaccine, so it is excluded.
    public static let covid19Codes: Set<String> = {
        var codes: Set<String> = ["207", "208", "221", "308", "334"]
        for range in [210...213, 217...219, 225...230, 300...302, 309...313, 500...521] {
            for n in range { codes.insert(String(n)) }
        }
        return codes
    }()

    /// Whether `code` is a COVID-19 vaccine CVX code (see `covid19Codes`).
    public static func isCOVID19Vaccine(_ code: String) -> Bool { covid19Codes.contains(code) }
}
