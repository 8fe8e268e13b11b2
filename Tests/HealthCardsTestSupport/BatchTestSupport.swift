import Foundation

import HealthCardsCore
import HealthCardsVerify
import HealthCardsSite

/// Helpers for the batch runner tests: synthetic inputs, background runs, output comparisons.
package enum BatchTestSupport {
    package static let issuer = "https://issuer.example.org"
    package static var bench: String { TestSupport.binDir.appendingPathComponent("healthcards-bench").path }
    /// The sample CSV shipped beside the COVID-19 template.
    package static let sample = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path
    package static let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path

    /// Writes `patients` synthetic CVRS patients (1 to 4 doses, rows in dose rounds) to `dir/name`.
    package static func synthetic(patients: Int, in dir: URL, name: String = "patients.csv") throws -> String {
        let path = dir.appendingPathComponent(name).path
        let run = try TestSupport.run(bench, ["generate", "--patients", String(patients), path])
        guard run.status == 0 else { throw HealthCardError(.io, "generate failed: \(run.stderr)") }
        return path
    }

    /// `healthcards issue` arguments for a CSV input.
    package static func issueArguments(key: String, out: URL, csv: String, extra: [String] = []) -> [String] {
        ["issue", "--issuer", issuer, "--key", key, "--template", template, "--out", out.path, "--nbf", "1700000000"] + extra + [csv]
    }

    /// Starts `healthcards` in the background with output discarded.
    package static func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSupport.healthcards)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Files under `dir` (relative paths), hidden ones included, sorted; the run's lock file
    /// (`OutputLock`, bookkeeping that stays in the folder) and the issuance log (appended to by every run, so
    /// never the same in a resumed and a clean run; `RotationRevocationTests` checks it) are left out.
    package static func tree(_ dir: URL) -> [String] {
        guard let e = FileManager.default.enumerator(atPath: dir.path) else { return [] }
        var out: [String] = []
        while let path = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if path == OutputLock.fileName || path == FileIssuanceLog.fileName { continue }
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent(path).path, isDirectory: &isDir), !isDir.boolValue {
                out.append(path)
            }
        }
        return out.sorted()
    }

    /// Number of card files written so far.
    package static func cardCount(_ out: URL) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("cards").path).filter { $0.hasSuffix(".smart-health-card") }.count) ?? 0
    }

    /// The card file of the record with report id `id` (a CSV patient id, or `<file stem>-<n>` for Bundle input),
    /// as its line in `out/report.ndjson` names it (Bundle cards are named for their person, `OutputNames`); the
    /// CSV name `cards/<id>.smart-health-card` when no issued line names one.
    package static func cardFile(_ out: URL, id: String) -> URL {
        let line = (try? TestSupport.report(out))?.first { $0["id"]?.stringValue == id && $0["status"] == "issued" }
        let file = line?["files"]?.arrayValue?.compactMap(\.stringValue).first { $0.hasSuffix(".smart-health-card") }
        return out.appendingPathComponent(file ?? "cards/\(id).smart-health-card")
    }

    /// The name of the record's files (`cards/<name>.smart-health-card`, `pdf/<name>.pdf`, …) for report id `id`.
    package static func fileName(_ out: URL, id: String) -> String {
        String(cardFile(out, id: id).lastPathComponent.dropLast(".smart-health-card".count))
    }

    /// The payload JSON of a card file (raw inflate of its one JWS).
    package static func payload(_ file: URL) throws -> JSONValue {
        let card = try JSONParser.parse(try VerifyFixtures.bytes(file))
        guard let jws = card["verifiableCredential"]?[0]?.stringValue else { throw HealthCardError(.validation, "no JWS in \(file.path)") }
        return try TestSupport.payload(of: jws)
    }

    /// The report lines with `alreadyIssued` dropped, for comparing a resumed run with a clean one.
    package static func reportWithoutResumeFlag(_ out: URL) throws -> [String] {
        try TestSupport.report(out).map { line in
            guard case .object(var o) = line else { return "" }
            o["alreadyIssued"] = nil
            return JSONWriter.minifiedString(.object(o))
        }
    }

    /// Sends `signal` once at least `cards` cards are on disk (or the run ended) and waits for the exit.
    package static func stop(_ process: Process, signal: Int32, afterCards cards: Int, out: URL) -> Int32 {
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && cardCount(out) < cards && Date() < deadline { usleep(5000) }
        if process.isRunning { kill(process.processIdentifier, signal) }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}
