import HealthCardsCore
import HealthCardsSite
import HealthCardsQR
import HealthCardsVerify

/// One reason a record of a batch was rejected, as staff read it without a JSON tool: where (file, line, column),
/// the rule code, and a short reason that holds no patient data (the report's message quotes the values; this
/// does not). `issue` prints the first ones as a table after its summary, and can write them all to a CSV file.
public struct RejectedRow: Sendable, Equatable {
    /// The input file.
    public var file: String
    /// The 1-based line (a CSV record's first line, or a Bundle's number in its file), when known.
    public var line: Int?
    /// The CSV column, when known.
    public var column: String?
    public var code: RuleCode
    /// What is wrong, in a few words, without any value from the record.
    public var reason: String

    public init(file: String, line: Int?, column: String?, code: RuleCode, reason: String) {
        self.file = file
        self.line = line
        self.column = column
        self.code = code
        self.reason = reason
    }

    /// The rows of a rejected report line: one per error (a record rejected for several reasons has several).
    public static func rows(of line: ReportLine) -> [RejectedRow] {
        guard line.status == .rejected else { return [] }
        let source = HealthCardError.Location(source: line.source)
        return line.errors.map { error in
            let at = error.location
            return RejectedRow(
                file: at.file ?? source.file ?? line.source, line: at.line ?? source.line, column: at.column,
                code: error.reportedCode, reason: reason(for: error.reportedCode))
        }
    }

    /// A short reason for a rule code, free of record values.
    public static func reason(for code: RuleCode) -> String {
        switch code {
        case .inputUnreadable: return "the input cannot be read"
        case .inputEncoding: return "the file is not UTF-8 text (or not text at all)"
        case .inputTooLarge: return "a value, row or file is over its size limit"
        case .inputNotBundle: return "the record is not a FHIR Bundle"
        case .inputEmpty: return "the file is empty"
        case .inputInvisibleCharacter: return "a value holds an invisible character (a lookalike or zero-width space, a direction control)"
        case .stringInvisibleCharacter: return "a Bundle string holds an invisible character (a lookalike or zero-width space, a direction control)"
        case .csvQuoting: return "broken quoting: a stray or unclosed quote"
        case .csvFieldCount: return "the row has more or fewer fields than the header"
        case .csvHeader: return "the header lacks a column the template needs, names one twice, or has no rows below it"
        case .patientIDMissing: return "the patient id is empty"
        case .patientIDDuplicate: return "the patient id or event id appears twice"
        case .patientInSeveralFiles: return "the patient has rows in several input files"
        case .templateValue: return "a value does not fit its column (a date, number or code)"
        case .eventConflict: return "two rows have the same event id and different data"
        case .templateRequiredEmpty: return "a required column is empty"
        case .templateDateWithTime: return "a date has a time of day (a spreadsheet date-and-time cell)"
        case .templateInvalid: return "the template is malformed"
        case .bundleInvalid: return "the Bundle cannot be minimized"
        case .ridRevoked: return "the person's cards are revoked in the site's list"
        case .keyDropped: return "the signing key was dropped from the site"
        case .dateInFuture: return "a date lies in the future"
        case .dateBeforeBirth: return "a date lies before the birth date"
        case .patientBirthDate, .patientBirthDateMissing: return "the birth date is missing or not a date"
        case .patientName, .patientNameForm, .patientNameCharacter: return "the patient's name is missing or malformed"
        case .patientNameInvisible: return "the patient's name holds an invisible character (a zero-width space, a direction control)"
        case .immunizationOccurrence: return "a dose has no valid date"
        case .immunizationDuplicate: return "the same dose appears twice"
        case .immunizationVaccineCode, .codeCVXUnknown, .codeCVXNoVaccine:
            return "the vaccine code is not a known vaccine"
        case .codeLOINCInvalid: return "a LOINC code is not valid"
        case .codeSNOMEDInvalid: return "a SNOMED CT code is not valid"
        case .codingCode: return "a code is malformed"
        case .observationValue, .observationValueString: return "a lab result has no usable value"
        case .observationCode: return "a lab test code is not valid"
        case .observationEffective: return "a lab result has no valid date"
        case .stringControlCharacter: return "a value holds a control character"
        case .qrTooLong: return "the card is too large for one QR code"
        case .qrFailed: return "no QR code could be made for the card (usually: too large for one QR code)"
        case .observationStatus: return "a lab result is not final (its status must be final, amended or corrected)"
        case .nbfBeforeEvent: return "a dose or result is dated after the card's issue time"
        case .metaSecurity: return "meta.security is not an identity-assurance code"
        case .outputSymlink: return "a file of the record in the output folder is a symbolic link (nothing written through it)"
        case .outputNameClash: return "the file name of this record's person is another person's in this run"
        default: return "fails rule \(code.rawValue) (docs/error-codes.md)"
        }
    }

    /// `line`, or empty.
    var lineText: String { line.map(String.init) ?? "" }

    /// The rows as an aligned text table (FILE, LINE, COLUMN, CODE, REASON), one row a line, each cell escaped
    /// (`ControlCharacters.escaped`), a long file name cut to its last 40 characters.
    public static func table(_ rows: [RejectedRow]) -> String {
        let header = ["FILE", "LINE", "COLUMN", "CODE", "REASON"]
        let cells = rows.map { row -> [String] in
            let file = row.file.count > 40 ? "…" + String(row.file.suffix(39)) : row.file
            return [file, row.lineText, row.column ?? "", row.code.rawValue, row.reason].map(ControlCharacters.escaped)
        }
        let widths = (0..<4).map { column in ([header] + cells).map { $0[column].count }.max() ?? 0 }
        func format(_ cells: [String]) -> String {
            var line = ""
            for (index, cell) in cells.enumerated() {
                line += index < 4 ? cell + String(repeating: " ", count: widths[index] - cell.count + 2) : cell
            }
            return line
        }
        return ([format(header)] + cells.map(format)).joined(separator: "\n")
    }

    /// The CSV header of a rejected-rows file.
    public static let csvHeader = "file,line,column,code,reason"

    /// The row as one RFC 4180 CSV line (fields quoted when they hold a comma, quote or line break), with a final
    /// line feed.
    public var csvLine: String {
        func field(_ text: String) -> String {
            let escaped = ControlCharacters.escaped(text)
            guard escaped.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else {
                return escaped
            }
            return "\"" + escaped.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"")
                + "\""
        }
        return [file, lineText, column ?? "", code.rawValue, reason].map(field).joined(separator: ",") + "\n"
    }
}
