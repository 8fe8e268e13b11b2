import HealthCardsCore
import HealthCardsVerify

/// The date format of an export, as a template states it (`"dateFormat": "MM/DD/YYYY"`), and how a
/// date written that way becomes a FHIR date (`YYYY-MM-DD`). Without one, only `YYYY-MM-DD` is read:
/// `07/06/2021` is 7 July in the US and 7 June elsewhere, so it is refused as ambiguous, never guessed.
///
/// A format is the three fields `YYYY` (four digits), `MM` (or `M`) and `DD` (or `D`), each once, joined by
/// one separator, `/`, `-` or `.`, in year-month-day, month-day-year or day-month-year order:
/// `MM/DD/YYYY` (Excel in the US), `DD/MM/YYYY`, `DD.MM.YYYY`, `YYYY/MM/DD`, `DD-MM-YYYY`, …. Month and day
/// take one or two digits in the values whichever way the format spells them (Excel writes `7/6/2021`).
/// `YYYY-MM-DD` is always read too, whatever the format.
public struct DateFormat: Sendable, Equatable, CustomStringConvertible {
    enum Field: Sendable, Equatable { case year, month, day }

    /// Two formats are the same when they read the same values (`M/D/YYYY` is `MM/DD/YYYY`).
    public static func == (a: DateFormat, b: DateFormat) -> Bool { a.order == b.order && a.separator == b.separator }

    /// The fields in the order the export writes them.
    let order: [Field]
    /// The separator between fields.
    let separator: Character
    /// The format as the template gives it.
    public let description: String

    /// The formats a person can pick from, for messages.
    static let examples = "MM/DD/YYYY, DD/MM/YYYY, DD.MM.YYYY, YYYY/MM/DD, DD-MM-YYYY"

    /// Reads a format such as `MM/DD/YYYY`.
    /// - Throws: `HealthCardError(.template)` naming what is expected.
    public init(_ text: String) throws(HealthCardError) {
        let fail = HealthCardError(
            .template,
            "\"dateFormat\" \(Quote.text(text)) is not a date format; expected YYYY, MM and DD joined by '/', '-' or '.', "
                + "in year-month-day, month-day-year or day-month-year order (e.g. \(Self.examples))")
        guard let separator = text.first(where: { $0 == "/" || $0 == "-" || $0 == "." }) else { throw fail }
        let parts = text.split(separator: separator, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw fail }
        var order: [Field] = []
        for part in parts {
            switch part {
            case "YYYY": order.append(.year)
            case "MM", "M": order.append(.month)
            case "DD", "D": order.append(.day)
            default: throw fail
            }
        }
        guard order == [.year, .month, .day] || order == [.month, .day, .year] || order == [.day, .month, .year] else {
            throw fail
        }
        self.order = order
        self.separator = separator
        self.description = text
    }

    private init(order: [Field], separator: Character) {
        self.order = order
        self.separator = separator
        let names = order.map { field -> String in
            switch field {
            case .year: return "YYYY"
            case .month: return "MM"
            case .day: return "DD"
            }
        }
        self.description = names.joined(separator: String(separator))
    }

    /// `YYYY-MM-DD` for a value written in this format, or nil when it is not one (fields of the wrong
    /// length, or a date that does not exist).
    func fhirDate(_ value: String) -> String? {
        guard let (year, month, day) = fields(of: value),
            FHIRDate.isValidDate(Self.iso(year, month, day), allowPartial: false)
        else { return nil }
        return Self.iso(year, month, day)
    }

    /// The year, month and day as written, when the value has this format's shape (digits only, four for
    /// the year, one or two for month and day).
    private func fields(of value: String) -> (Int, Int, Int)? {
        let parts = value.split(separator: separator, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var year = 0
        var month = 0
        var day = 0
        for (field, part) in zip(order, parts) {
            let length = part.utf8.count
            guard part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                field == .year ? length == 4 : (1...2).contains(length),
                let number = Int(part)
            else { return nil }
            switch field {
            case .year: year = number
            case .month: month = number
            case .day: day = number
            }
        }
        return (year, month, day)
    }

    static func iso(_ year: Int, _ month: Int, _ day: Int) -> String {
        func pad(_ v: Int, _ n: Int) -> String {
            String(repeating: "0", count: max(0, n - String(v).count)) + String(v)
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// What to tell a person about a value that is not a date in `format` (nil: `YYYY-MM-DD` only):
    /// for a value with the year last, which readings give a real date: one (say which, with its
    /// `YYYY-MM-DD`), both (ambiguous: state the format), or none.
    static func hint(for value: String, format: DateFormat?) -> String {
        let separator = value.first(where: { $0 == "/" || $0 == "-" || $0 == "." }) ?? "/"
        let readings = [
            DateFormat(order: [.month, .day, .year], separator: separator),
            DateFormat(order: [.day, .month, .year], separator: separator),
        ]
        .compactMap { f in f.fhirDate(value).map { (format: f, date: $0) } }
        .filter { $0.format != format }
        let shaped = [DateFormat(order: [.month, .day, .year], separator: separator)].contains {
            $0.fields(of: value) != nil
        }
        if let format {
            guard let other = readings.first else {
                return shaped ? " (no reading of it is a real date)" : " (e.g. \(example(format)))"
            }
            return
                " (it reads as \(other.format) \(other.date): check the export's date setting, or the template's \"dateFormat\")"
        }
        switch readings.count {
        case 1:
            return
                " (this looks like \(readings[0].format): write it as \(readings[0].date), or state \"dateFormat\": \"\(readings[0].format)\" in the template)"
        case 2:
            return
                "; \(Quote.text(value)) is ambiguous: it is \(readings[0].date) as \(readings[0].format) and \(readings[1].date) as "
                + "\(readings[1].format), and a date is never guessed. State the export's format in the template (\"dateFormat\": \"\(readings[0].format)\" "
                + "or \"\(readings[1].format)\"), or write YYYY-MM-DD"
        default:
            if shaped { return " (neither MM/DD/YYYY nor DD/MM/YYYY reads it as a real date)" }
            if value.utf8.count == 10, FHIRDate.isValidDate(String(value.prefix(7))) {
                return " (the day does not exist in that month)"
            }
            return " (e.g. 2021-06-15)"
        }
    }

    /// How to export a date without its time of day (what a message about a date-and-time cell says to do).
    static let timeOfDayFix =
        "In the spreadsheet, format the column as a date without the time (Format Cells, Date; or a column of "
        + "=TEXT(A2,\"yyyy-mm-dd\")) and export again"

    /// A value that is a date followed by a time of day, as spreadsheets export date-and-time cells (`3/15/2021 0:00`,
    /// `2021-03-15 00:00:00`, `15.03.2021 12:30 PM`, `2021-03-15T00:00`): the time as written, and the date part as
    /// `YYYY-MM-DD` when it reads as one (in `format`, or `YYYY-MM-DD`). Nil for anything else.
    static func timeOfDay(in value: String, format: DateFormat?) -> (time: String, date: String?)? {
        guard let cut = value.firstIndex(where: { $0 == " " || $0 == "T" }) else { return nil }
        let datePart = String(value[..<cut])
        var time = Substring(value[value.index(after: cut)...])
        while time.first == " " { time = time.dropFirst() }
        let shown = String(time)
        for suffix in [" AM", " PM", "AM", "PM", " am", " pm", "am", "pm"] where time.hasSuffix(suffix) {
            time = time.dropLast(suffix.count)
            break
        }
        if time.hasSuffix("Z") { time = time.dropLast() }
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), (1...2).contains(parts[0].utf8.count), parts[1].utf8.count == 2 else { return nil }
        let digits = parts.enumerated().allSatisfy { index, part in
            let whole = index == 2 ? part.split(separator: ".", maxSplits: 1).first ?? "" : part
            return !whole.isEmpty && whole.utf8.allSatisfy { (0x30...0x39).contains($0) }
        }
        guard digits, datePart.contains(where: { $0 == "/" || $0 == "-" || $0 == "." }) else { return nil }
        let date = FHIRDate.isValidDate(datePart, allowPartial: false) ? datePart : format?.fhirDate(datePart)
        return (shown, date)
    }

    /// Why a time of day as `timeOfDay` returns it (`25:00:00Z`, `3:15 PM`) names no time: the hour, minute or
    /// second out of range (FHIR `time` and `dateTime`: hours 00 to 23, minutes 00 to 59, seconds 00 to 60; with
    /// AM or PM, hours 1 to 12). Nil when every part is in range.
    static func timeOutOfRange(_ time: String) -> String? {
        var text = Substring(time)
        var twelveHour = false
        for suffix in [" AM", " PM", "AM", "PM", " am", " pm", "am", "pm"] where text.hasSuffix(suffix) {
            text = text.dropLast(suffix.count)
            twelveHour = true
            break
        }
        if text.hasSuffix("Z") { text = text.dropLast() }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let numbers = parts.map { Int($0.split(separator: ".", maxSplits: 1).first ?? "") }
        guard numbers.count >= 2, let hour = numbers[0], let minute = numbers[1] else { return nil }
        if twelveHour, !(1...12).contains(hour) { return "hour \(parts[0]) is out of range (1 to 12 with AM or PM)" }
        if !twelveHour, !(0...23).contains(hour) { return "hour \(parts[0]) is out of range (00 to 23)" }
        if !(0...59).contains(minute) { return "minute \(parts[1]) is out of range (00 to 59)" }
        if numbers.count == 3, let second = numbers[2], !(0...60).contains(second) {
            return "second \(parts[2]) is out of range (00 to 60)"
        }
        return nil
    }

    /// Why a value in the form `YYYY-MM-DD` is no date (FHIR R4 `date`: years 0001 to 9999, whose regex has no
    /// year 0000; months 01 to 12; days that exist in the month). Nil when the value is not in that form, or
    /// is a date.
    static func notARealDate(_ value: String) -> String? {
        let bytes = Array(value.utf8)
        guard bytes.count == 10, bytes[4] == 0x2D, bytes[7] == 0x2D,
            bytes.enumerated().allSatisfy({ $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) }),
            let year = Int(value.prefix(4)), let month = Int(value.dropFirst(5).prefix(2)), let day = Int(value.suffix(2))
        else { return nil }
        if year == 0 { return "year 0000 does not exist (FHIR dates run from year 0001 to 9999)" }
        if !(1...12).contains(month) { return "month \(value.dropFirst(5).prefix(2)) does not exist (01 to 12)" }
        let days = FHIRDate.daysIn(month: month, year: year)
        if !(1...days).contains(day) {
            return "day \(value.suffix(2)) does not exist in \(value.prefix(7)) (01 to \(days))"
        }
        return nil
    }

    /// 2021-06-15 written in `format`.
    static func example(_ format: DateFormat) -> String {
        format.order.map { field -> String in
            switch field {
            case .year: return "2021"
            case .month: return "06"
            case .day: return "15"
            }
        }.joined(separator: String(format.separator))
    }
}
