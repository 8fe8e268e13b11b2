#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

enum Bench {
    static let issuer = "https://issuer.example.org"

    static func run(_ options: Options) throws {
        let patients = options.int("patients", 5000)
        let stagePatients = options.int("stage-patients", min(patients, 2000))
        // The scratch folder defaults to $TMPDIR (or /tmp): on this project's machines the repository
        // folder is watched, which made every file written there cost about 3 times the system time.
        let work = options["work"] ?? ((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/healthcards-bench")
        let jsonPath = options["json"] ?? "bench-results.json"
        let templatePath = options["template"] ?? "templates/covid19-vaccination.json"
        let selfDir = FileIO.parent(of: (try? readLink("/proc/self/exe")) ?? CommandLine.arguments[0])
        let healthcards = options["healthcards"] ?? "\(selfDir)/healthcards"
        let cores = BatchIssuer.activeCores()
        let scaleRows = (options["scale"] ?? "").split(separator: ",").compactMap { Int($0) }

        _ = try ChildRun.run("/bin/rm", ["-rf", work])
        try FileIO.createDirectories(work)
        let key = "\(work)/bench-key.pem"
        let keygen = try ChildRun.run(healthcards, ["keygen", "--out", key])
        guard keygen.status == 0 else { throw BenchError("keygen failed: \(keygen.stderr)") }
        let template = try Template(bytes: try FileIO.read(templatePath), source: templatePath)
        let csv = "\(work)/patients-\(patients).csv"
        let rows = try SyntheticCVRS.write(patients: patients, to: csv)
        log("data: \(patients) patients, \(rows) rows (\(csv))")

        // Stages.
        let signingKey = try KeyFile.load(path: key, requirePrivate: true)
        let stages = try StageTimes.measure(csv: csv, template: template, key: signingKey, issuer: issuer,
                                            outDir: "\(work)/stages", limit: stagePatients)
        log("stages over \(stages.cards) cards, one thread (µs per card):")
        for name in StageTimes.names { log("  \(name.padding(18))\(fmt(stages.micros(name), 1))") }
        log("  \("total".padding(18))\(fmt(stages.totalMicros, 1))  (\(fmt(1e6 / max(stages.totalMicros, 1), 0)) cards/s one core)")
        let noQR = stages.totalMicros - stages.micros("qr") - stages.micros("png")
        log("  card file \(stages.cardBytes / max(stages.cards, 1)) bytes, PNG \(stages.pngBytes / max(stages.cards, 1)) bytes at \(QRImage.defaultScale) px/module")

        // Printed cards (PDF), in process.
        let pdf = try PDFTimes.measure(stages.cardsJWS)
        let pdfMicros = pdf.microsPerCard
        log("pdf over \(pdf.cards) cards, one thread (µs per card): read back \(fmt(pdfMicros.read, 1)), layout \(fmt(pdfMicros.layout, 1)), "
            + "PDF \(fmt(pdfMicros.write, 1)); \(fmt(Double(pdf.pages) / Double(max(pdf.cards, 1)), 2)) pages and "
            + "\(pdf.bytes / max(pdf.cards, 1)) bytes per card; \(fmt(pdf.pagesPerSecond, 0)) pages/s one core "
            + "(cards: \(fmt(1e6 / max(stages.totalMicros, 1), 0))/s one core)")

        // PNG settings.
        let pngSettings = try PNGSetting.compare(stages.codes, scale: QRImage.defaultScale)
        log("png settings over \(stages.codes.count) symbols (bytes, µs per image):")
        for s in pngSettings {
            log("  level \(s.level) filter \(PNGSetting.filterNames[s.filter]!.padding(16)) \(fmt(s.bytes, 0).padding(7)) \(fmt(s.micros, 1))")
        }

        // End-to-end.
        var endToEnd: [JSONValue] = []
        var scale: [JSONValue] = []
        var pdfEndToEnd: [JSONValue] = []
        if !options.flags.contains("quick") {
            log("end-to-end `healthcards issue` on \(patients) patients:")
            for qr in [true, false] {
                for jobs in Array(Set([1, cores])).sorted() {
                    let run = try issue(healthcards, key: key, template: templatePath, csv: csv, out: "\(work)/e2e-\(qr ? "qr" : "noqr")-\(jobs)", jobs: jobs, qr: qr)
                    let rate = Double(patients) / run.seconds
                    let cpu = run.cpuSeconds / Double(patients) * 1e6
                    log("  \(qr ? "with QR   " : "without QR") jobs \(jobs): \(fmt(rate, 0)) cards/s, \(fmt(run.seconds, 2)) s, CPU \(fmt(cpu, 0)) µs/card, peak RSS \(fmt(Double(run.peakRSS) / 1048576, 1)) MB")
                    endToEnd.append(.object(["qr": .bool(qr), "jobs": .integer(Int64(jobs)), "cards": .integer(Int64(patients)),
                                             "seconds": num(run.seconds, 3), "cardsPerSecond": num(rate, 1), "cpuMicrosPerCard": num(cpu, 1),
                                             "peakRSSMB": num(Double(run.peakRSS) / 1048576, 1)]))
                }
            }
            for qr in [true, false] {
                for jobs in Array(Set([1, cores])).sorted() { _ = try ChildRun.run("/bin/rm", ["-rf", "\(work)/e2e-\(qr ? "qr" : "noqr")-\(jobs)"]) }
            }
            // `issue --pdf`: cards, QR images and a PDF per card, in the same worker pool.
            let pdfPatients = min(patients, options.int("pdf-patients", 1000))
            let pdfCSV = "\(work)/patients-pdf-\(pdfPatients).csv"
            _ = try SyntheticCVRS.write(patients: pdfPatients, to: pdfCSV)
            for jobs in Array(Set([1, cores])).sorted() {
                let out = "\(work)/e2e-pdf-\(jobs)"
                let run = try issue(healthcards, key: key, template: templatePath, csv: pdfCSV, out: out, jobs: jobs, qr: true, extra: ["--pdf"])
                let pages = try PDFPages.count(in: "\(out)/pdf")
                let rate = Double(pdfPatients) / run.seconds
                let pageRate = Double(pages) / run.seconds
                let cpu = run.cpuSeconds / Double(pdfPatients) * 1e6
                log("  with PDF   jobs \(jobs): \(fmt(rate, 0)) cards/s, \(fmt(pageRate, 0)) PDF pages/s (\(fmt(pageRate / Double(jobs), 0)) per core), "
                    + "\(fmt(run.seconds, 2)) s, CPU \(fmt(cpu, 0)) µs/card, peak RSS \(fmt(Double(run.peakRSS) / 1048576, 1)) MB")
                pdfEndToEnd.append(.object(["jobs": .integer(Int64(jobs)), "cards": .integer(Int64(pdfPatients)), "pages": .integer(Int64(pages)),
                                            "seconds": num(run.seconds, 3), "cardsPerSecond": num(rate, 1), "pagesPerSecond": num(pageRate, 1),
                                            "pagesPerSecondPerCore": num(pageRate / Double(jobs), 1), "cpuMicrosPerCard": num(cpu, 1),
                                            "peakRSSMB": num(Double(run.peakRSS) / 1048576, 1)]))
                _ = try ChildRun.run("/bin/rm", ["-rf", out])
            }
            for target in scaleRows {
                // About 2.5 rows per patient.
                let n = max(1, Int((Double(target) / 2.5).rounded()))
                let file = "\(work)/scale-\(target).csv"
                let written = try SyntheticCVRS.write(patients: n, seed: 7, to: file)
                let run = try issue(healthcards, key: key, template: templatePath, csv: file, out: "\(work)/scale", jobs: cores, qr: false)
                let rate = Double(n) / run.seconds
                log("  scale \(written) rows, \(n) patients, no QR, jobs \(cores): \(fmt(rate, 0)) cards/s, \(fmt(run.seconds, 1)) s, peak RSS \(fmt(Double(run.peakRSS) / 1048576, 1)) MB")
                scale.append(.object(["rows": .integer(Int64(written)), "patients": .integer(Int64(n)), "jobs": .integer(Int64(cores)),
                                      "seconds": num(run.seconds, 3), "cardsPerSecond": num(rate, 1),
                                      "peakRSSMB": num(Double(run.peakRSS) / 1048576, 1)]))
                _ = try ChildRun.run("/bin/rm", ["-rf", file, "\(work)/scale"])
            }
        }

        var stageObject = JSONObject()
        for name in StageTimes.names { stageObject[name] = num(stages.micros(name), 2) }
        stageObject["total"] = num(stages.totalMicros, 2)
        stageObject["totalWithoutQR"] = num(noQR, 2)
        let result: JSONValue = .object([
            "date": .string(Clock.describe(Clock.nowSeconds())),
            "cores": .integer(Int64(cores)),
            "cpu": .string(cpuModel()),
            "patients": .integer(Int64(patients)),
            "rows": .integer(Int64(rows)),
            "stageCards": .integer(Int64(stages.cards)),
            "stageMicrosPerCard": .object(stageObject),
            "cardFileBytes": num(Double(stages.cardBytes) / Double(max(stages.cards, 1)), 1),
            "pngBytes": num(Double(stages.pngBytes) / Double(max(stages.cards, 1)), 1),
            "pngSettings": .array(pngSettings.map {
                .object(["level": .integer(Int64($0.level)), "filter": .string(PNGSetting.filterNames[$0.filter]!),
                         "bytes": num($0.bytes, 1), "micros": num($0.micros, 2)])
            }),
            "endToEnd": .array(endToEnd),
            "pdf": .object([
                "cards": .integer(Int64(pdf.cards)),
                "pagesPerCard": num(Double(pdf.pages) / Double(max(pdf.cards, 1)), 2),
                "bytesPerCard": num(Double(pdf.bytes) / Double(max(pdf.cards, 1)), 0),
                "microsPerCard": .object(["readBack": num(pdfMicros.read, 1), "layout": num(pdfMicros.layout, 1), "pdf": num(pdfMicros.write, 1)]),
                "pagesPerSecondOneCore": num(pdf.pagesPerSecond, 1),
                "endToEnd": .array(pdfEndToEnd),
            ]),
            "scale": .array(scale),
            "targets": .object([
                "withQRCardsPerSecond": num(0.9 * 700 * Double(cores), 0),
                "withoutQRCardsPerSecond": num(0.8 * 12000 * Double(cores), 0),
                "jobsSpeedup": num(1.8, 1),
            ]),
        ])
        try FileIO.writeAtomically(JSONWriter.pretty(result) + [0x0A], to: jsonPath)
        log("figures written to \(jsonPath)")
    }

    /// Runs `healthcards issue` into `out`, a folder of its own: removing the previous run's thousands of
    /// files just before (as an earlier version did) left the file system discarding and writing back
    /// during the timed run, which halved the measured rate. Pending writes are flushed first.
    static func issue(_ healthcards: String, key: String, template: String, csv: String, out: String, jobs: Int, qr: Bool,
                      extra: [String] = []) throws -> ChildRun {
        _ = try ChildRun.run("/bin/rm", ["-rf", out])
        _ = try ChildRun.run("/bin/sync", [])
        var arguments = ["issue", "--issuer", issuer, "--key", key, "--template", template, "--out", out, "--quiet", "--jobs", String(jobs)]
        if !qr { arguments.append("--no-qr") }
        arguments += extra
        let run = try ChildRun.run(healthcards, arguments + [csv])
        guard run.status == 0 else { throw BenchError("`healthcards issue` exited \(run.status): \(run.stderr)") }
        return run
    }

    static func num(_ v: Double, _ digits: Int) -> JSONValue { JSONNumber(fmt(v, digits)).map(JSONValue.number) ?? .null }

    static func cpuModel() -> String {
        guard let bytes = try? FileIO.read("/proc/cpuinfo") else { return "unknown" }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { String($0.drop(while: { $0 == " " })) } ?? "unknown"
        }
        return "unknown"
    }

    static func readLink(_ path: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, 4095)
        guard n > 0 else { throw BenchError("readlink \(path)") }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

func log(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
}

/// `v` with `digits` decimals.
func fmt(_ v: Double, _ digits: Int) -> String {
    guard v.isFinite else { return "0" }
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let scaled = (v * p).rounded()
    let whole = Int(scaled / p)
    if digits == 0 { return String(Int(scaled)) }
    let frac = Int(abs(scaled) - abs(Double(whole)) * p)
    let fracText = String(frac)
    return "\(v < 0 && whole == 0 ? "-" : "")\(whole).\(String(repeating: "0", count: digits - fracText.count))\(fracText)"
}

extension String {
    func padding(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}

/// Pages of the PDFs in a folder: the page objects (`/Type /Page ` followed by a space, not
/// `/Type /Pages`) in each file, as Cairo writes them uncompressed.
enum PDFPages {
    static func count(in folder: String) throws -> Int {
        let marker = Array("/Type /Page ".utf8)
        var pages = 0
        for name in FileIO.list(folder) where name.hasSuffix(".pdf") {
            let bytes = try FileIO.read("\(folder)/\(name)")
            guard bytes.count >= marker.count else { continue }
            for i in 0...(bytes.count - marker.count) where bytes[i] == marker[0] && bytes[i..<i + marker.count].elementsEqual(marker) {
                pages += 1
            }
        }
        return pages
    }
}
