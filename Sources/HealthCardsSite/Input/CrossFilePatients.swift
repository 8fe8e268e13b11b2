import HealthCardsCore
import HealthCardsVerify

/// Patient ids that occur in more than one CSV input of a run.
///
/// All rows of a patient must be in one input file: a patient split over two files would otherwise
/// get a card from each file, each missing the other file's rows (a card with a missing dose is
/// worse than no card). Such a patient is rejected in every file, and no card is issued for it.
///
/// Found from the indexes alone, before anything is issued: every patient's 64-bit key hash (kept by
/// `CSVTemplateInput`) goes into one dictionary of hash → first file; only the patients whose hash
/// is in two or more files are then read back, and their keys compared, so a hash collision between
/// two different ids is not taken for a shared patient. Memory: that dictionary while building
/// (one entry a patient across all files), then the shared ids only.
package struct CrossFilePatients {
    /// Shared patient id → `file:line` of its first row in each input that has it (two or more), in
    /// input order.
    private(set) var places: [String: [String]] = [:]

    /// CSV inputs refused while their rows were read, with the key hashes of the patients read before that.
    /// A patient among them gets no card from another input either: it could lack the refused file's rows.
    private(set) var refused: [(path: String, patients: Set<UInt64>)] = []

    /// No shared patients (a run with one CSV input, or Bundle input only).
    package init() {}

    /// Finds the patients shared by `inputs`.
    /// - Throws: `HealthCardError(.input)` when a file changed since it was indexed or cannot be read.
    /// - Parameter refused: CSV inputs refused partway, with the patients read before (see `refused`).
    package init(_ inputs: [CSVTemplateInput], refused: [(path: String, patients: Set<UInt64>)] = []) throws {
        try self.init(inputs, candidates: Self.sharedHashes(inputs))
        self.refused = refused.filter { !$0.patients.isEmpty }
    }

    /// Reads back the patients of `inputs` whose key hash is in `candidates` and keeps the ids that
    /// really occur in two or more inputs (equal hashes with different ids are a collision, not a
    /// shared patient).
    package init(_ inputs: [CSVTemplateInput], candidates: Set<UInt64>) throws {
        guard !candidates.isEmpty else { return }
        var byID: [String: [String]] = [:]
        for input in inputs {
            for patient in try input.patients(withHashes: candidates) {
                byID[patient.key, default: []].append(patient.source)
            }
        }
        places = byID.filter { $0.value.count > 1 }
    }

    /// The key hashes that occur in two or more of `inputs` (each file's hashes are distinct).
    package static func sharedHashes(_ inputs: [CSVTemplateInput]) -> Set<UInt64> {
        guard inputs.count > 1 else { return [] }
        var shared = Set<UInt64>()
        var firstInput: [UInt64: Int32] = [:]
        for (n, input) in inputs.enumerated() {
            for hash in input.patientHashes {
                if let first = firstInput[hash] {
                    if first != Int32(n) { shared.insert(hash) }
                } else {
                    firstInput[hash] = Int32(n)
                }
            }
        }
        return shared
    }

    /// The rejection of patient `id` at one of its places, naming all of them.
    package func error(for id: String, at source: String) -> HealthCardError? {
        if !refused.isEmpty {
            let hash = CSVTemplateInput.hash(id)
            if let file = refused.first(where: { $0.patients.contains(hash) }) {
                return HealthCardError(
                    .input, code: .patientInSeveralFiles,
                    "patient id \(Quote.text(id)) also has rows in \(file.path), which was refused (its report line says "
                        + "why); rows of one patient must be in one input file, and a card from this file alone could "
                        + "lack that file's rows, so none is issued: fix \(file.path) and run again",
                    at: source)
            }
        }
        guard let list = places[id] else { return nil }
        let named =
            list.count == 2
            ? "\(list[0]) and \(list[1])" : list.dropLast().joined(separator: ", ") + " and \(list.last ?? "")"
        return HealthCardError(
            .input, code: .patientInSeveralFiles,
            "patient id \(Quote.text(id)) appears in \(named); rows of one patient must be in one input file, so no card is issued for it from any of them: merge the exports and run again",
            at: source)
    }
}

extension CSVTemplateInput {
    /// The patients whose key hash is in `hashes`, read back from the file: each distinct key (a
    /// hash collision inside the file can chain two keys) with the `file:line` of its first row, in
    /// file order. Only those patients' rows are read.
    /// - Throws: `HealthCardError(.input)` when the file changed since it was indexed or cannot be read.
    package func patients(withHashes hashes: Set<UInt64>) throws -> [(key: String, source: String)] {
        // Patients are numbered at their first row, so their first rows in file order are in that order.
        let firstRows = entries.filter { $0 >= 0 }.sorted()
        var rows: [Int] = []
        for (patient, hash) in patientHashes.enumerated() where hashes.contains(hash) {
            var row = Int(firstRows[patient])
            while row >= 0 {
                rows.append(row)
                row = Int(nextRow[row])
            }
        }
        rows.sort()
        let cursor = self.cursor()
        var seen = Set<String>()
        var found: [(key: String, source: String)] = []
        for row in rows {
            let fields = try cursor.read(row)
            guard fields.count > keyIndex else { continue }
            let key = PatientIdentity.normalize(fields[keyIndex])
            if seen.insert(key).inserted { found.append((key, "\(path):\(rowLines[row])")) }
        }
        return found
    }
}
