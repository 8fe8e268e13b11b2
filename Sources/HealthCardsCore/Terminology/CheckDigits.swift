/// LOINC code syntax and its mod 10 check digit (LOINC Users' Guide, "Calculating Mod 10 Check Digits").
///
/// A LOINC code is `N…N-C`: a base of decimal digits, a hyphen, and one check digit computed from the base
/// by the Luhn algorithm. Part and Answer identifiers (`LP…`, `LA…`) use another scheme and are not codes here.
public enum LOINC {
    /// Longest base (digits before the hyphen) accepted. Today's codes have up to 6 (100000 and above
    /// exist since 2022); 7 leaves room without admitting arbitrary digit strings.
    public static let maxBaseDigits = 7

    /// The 14 deprecated codes that LOINC publishes with a check digit that does not match the algorithm.
    /// They are real (if deprecated) codes, so `isValidCode` accepts them unless told otherwise.
    /// Source: LOINC's list of known check-digit exceptions, as given in shared/data/README.md.
    public static let checkDigitExceptions: Set<String> = [
        "11491-6", "11501-6", "5895-7", "5896-5", "5897-3", "5928-1", "6028-3",
        "6415-5", "6580-7", "6645-7", "6646-5", "6647-3", "6648-1", "6649-9",
    ]

    /// The mod 10 (Luhn) check digit of a LOINC base.
    ///
    /// Walking from the rightmost digit leftwards, every other digit starting with the first is doubled
    /// (minus 9 when above 9); the check digit is `(10 − sum mod 10) mod 10`. `"12345"` gives 5.
    /// - Parameter base: the digits before the hyphen, 1 to `maxBaseDigits` ASCII digits.
    /// - Returns: 0…9, or nil when `base` is empty, too long, or holds a non-digit.
    public static func checkDigit(forBase base: some StringProtocol) -> Int? {
        let bytes = Array(base.utf8)
        guard (1...maxBaseDigits).contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        var sum = 0
        for (position, byte) in bytes.reversed().enumerated() {
            var d = Int(byte - 0x30)
            if position % 2 == 0 {
                d *= 2
                if d > 9 { d -= 9 }
            }
            sum += d
        }
        return (10 - sum % 10) % 10
    }

    /// Whether `code` is a syntactically valid LOINC code whose check digit matches.
    /// - Parameters:
    ///   - code: e.g. `"94500-6"`; no surrounding whitespace is tolerated.
    ///   - allowingKnownExceptions: accept the 14 entries of `checkDigitExceptions` (default true).
    /// - Returns: true for `94500-6`, false for `94500-5` (the computed digit is 6).
    public static func isValidCode(_ code: String, allowingKnownExceptions: Bool = true) -> Bool {
        problem(code, allowingKnownExceptions: allowingKnownExceptions) == nil
    }

    /// Why `code` is not a valid LOINC code, as an English sentence; nil when it is valid.
    public static func problem(_ code: String, allowingKnownExceptions: Bool = true) -> String? {
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].utf8.count == 1, let given = Int(parts[1]),
            parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else {
            return "\(Quote.text(code)) is not a LOINC code: expected digits, a hyphen and one check digit (e.g. 94500-6)"
        }
        guard let expected = checkDigit(forBase: parts[0]) else {
            return "\(Quote.text(code)) is not a LOINC code: the part before the hyphen must be 1 to \(maxBaseDigits) digits"
        }
        if given == expected { return nil }
        if allowingKnownExceptions && checkDigitExceptions.contains(code) { return nil }
        return "\(Quote.text(code)) has LOINC check digit \(given), but the mod 10 check digit of \(parts[0]) is \(expected)"
    }
}

/// SNOMED CT identifier (SCTID) structure and Verhoeff check digit (SNOMED CT Technical Implementation Guide,
/// "SCTID data type" and "Check-digit computation").
///
/// An SCTID is 6 to 18 decimal digits without a leading zero. Its last digit is a Verhoeff check digit, the two
/// before it are the partition identifier, and in the long (extension) format the seven before those are the
/// namespace identifier.
public enum SNOMEDCT {
    /// The partition identifier: the 2nd and 3rd digits from the right. Values not listed are reserved.
    public enum Partition: String, Sendable, CaseIterable {
        case concept = "00"
        case description = "01"
        case relationship = "02"
        case extensionConcept = "10"
        case extensionDescription = "11"
        case extensionRelationship = "12"
        case extensionExpression = "16"

        /// True for the long (extension) format, whose SCTIDs carry a 7-digit namespace identifier.
        public var isLongFormat: Bool { rawValue.hasPrefix("1") }
        /// True for the partitions that identify concepts (`00`, `10`).
        public var isConcept: Bool { self == .concept || self == .extensionConcept }
        /// The kind of component the partition identifies, in words.
        public var component: String {
            switch self {
            case .concept, .extensionConcept: return "concept"
            case .description, .extensionDescription: return "description"
            case .relationship, .extensionRelationship: return "relationship"
            case .extensionExpression: return "postcoordinated expression"
            }
        }
    }

    /// Why a string is not a valid SCTID, or not a concept identifier: a value a caller switches on (not an
    /// error: `requireConceptID` throws `HealthCardError` naming it).
    public enum Problem: Equatable, Sendable, CustomStringConvertible {
        /// A character other than an ASCII digit.
        case notDigits
        /// The first digit is 0.
        case leadingZero
        /// Outside 6…18 digits (long format: at least 11).
        case length(Int)
        /// The Verhoeff check fails; `expected` is the check digit the other digits call for.
        case checkDigit(expected: Int)
        /// The partition digits name no defined partition.
        case reservedPartition(String)
        /// A valid SCTID whose partition is a description, relationship or expression, not a concept.
        case notAConcept(Partition)

        public var description: String {
            switch self {
            case .notDigits: return "an SCTID holds decimal digits only"
            case .leadingZero: return "an SCTID does not start with 0"
            case .length(let n): return "an SCTID has 6 to 18 digits (11 or more in the long format), not \(n)"
            case .checkDigit(let d): return "the Verhoeff check digit is wrong; it should be \(d)"
            case .reservedPartition(let p): return "partition \(p) is reserved; only 00, 01, 02, 10, 11, 12 and 16 are defined"
            case .notAConcept(let p): return "partition \(p.rawValue) identifies a \(p.component), not a concept (expected 00 or 10)"
            }
        }
    }

    // Verhoeff tables: d is the Cayley table of the dihedral group D5, p the position permutations
    // (row k is row 1 applied k times, period 8), inv the group inverses.
    private static let d: [[UInt8]] = [
        "0123456789", "1234067895", "2340178956", "3401289567", "4012395678",
        "5987604321", "6598710432", "7659821043", "8765932104", "9876543210",
    ].map { $0.utf8.map { $0 - 0x30 } }
    private static let p: [[UInt8]] = {
        let row1: [UInt8] = "1576283094".utf8.map { $0 - 0x30 }
        var rows: [[UInt8]] = [Array(0...9)]
        for _ in 1..<8 { rows.append(rows.last!.map { row1[Int($0)] }) }
        return rows
    }()
    private static let inv: [UInt8] = "0432156789".utf8.map { $0 - 0x30 }

    /// Runs the Verhoeff walk over ASCII digits from right to left, numbering the rightmost position `start`.
    private static func verhoeffState(_ digits: [UInt8], start: Int) -> UInt8 {
        var c: UInt8 = 0
        for (i, byte) in digits.reversed().enumerated() {
            c = d[Int(c)][Int(p[(i + start) % 8][Int(byte - 0x30)])]
        }
        return c
    }

    /// The Verhoeff check digit to append to `digits`.
    /// - Parameter digits: one or more ASCII digits (the SCTID without its last digit).
    /// - Returns: 0…9, or nil when `digits` is empty or holds a non-digit. `"26037300"` gives 1.
    public static func verhoeffCheckDigit(for digits: some StringProtocol) -> Int? {
        let bytes = Array(digits.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(inv[Int(verhoeffState(bytes, start: 1))])
    }

    /// What `validateIdentifier` found: the partition of a valid SCTID, or the first problem.
    public enum IdentifierCheck: Equatable, Sendable {
        case success(Partition)
        case failure(Problem)
    }

    /// Checks the structure of an SCTID of any kind (concept, description, relationship, expression).
    /// - Returns: the partition when `sctid` is valid, otherwise the first problem found, checked in the order
    ///   characters, leading zero, length, check digit, partition.
    public static func validateIdentifier(_ sctid: String) -> IdentifierCheck {
        let bytes = Array(sctid.utf8)
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return .failure(.notDigits) }
        guard bytes[0] != 0x30 else { return .failure(.leadingZero) }
        guard (6...18).contains(bytes.count) else { return .failure(.length(bytes.count)) }
        if verhoeffState(bytes, start: 0) != 0 {
            let expected = Int(inv[Int(verhoeffState(Array(bytes.dropLast()), start: 1))])
            return .failure(.checkDigit(expected: expected))
        }
        let code = String(decoding: bytes[(bytes.count - 3)..<(bytes.count - 1)], as: UTF8.self)
        guard let partition = Partition(rawValue: code) else { return .failure(.reservedPartition(code)) }
        // Long format: item identifier (≥ 1 digit) + namespace (7) + partition (2) + check digit (1).
        if partition.isLongFormat && bytes.count < 11 { return .failure(.length(bytes.count)) }
        return .success(partition)
    }

    /// Why `sctid` cannot stand where SHC expects a concept (`Immunization.vaccineCode`,
    /// `Observation.valueCodeableConcept`); nil when it is a valid concept identifier (partition 00 or 10).
    public static func conceptIDProblem(_ sctid: String) -> Problem? {
        switch validateIdentifier(sctid) {
        case .failure(let problem): return problem
        case .success(let partition): return partition.isConcept ? nil : .notAConcept(partition)
        }
    }

    /// Whether `sctid` is a valid SNOMED CT concept identifier: `260373001` and `455371000124106` are;
    /// `260373002` (check digit) and `260373055` (reserved partition 05) are not.
    public static func isValidConceptID(_ sctid: String) -> Bool { conceptIDProblem(sctid) == nil }

    /// Throws unless `sctid` is a valid concept identifier.
    /// - Parameter location: the FHIR path reported in the error.
    /// - Throws: `HealthCardError(.validation)` naming the problem.
    public static func requireConceptID(_ sctid: String, at location: String? = nil) throws {
        if let problem = conceptIDProblem(sctid) {
            throw HealthCardError(.validation, "\(Quote.text(sctid)) is not a SNOMED CT concept id: \(problem)", at: location)
        }
    }
}
