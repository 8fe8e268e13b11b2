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

/// Instructions per card, counted by callgrind (docs/performance.md, "Instructions per card"): `healthcards issue
/// --jobs 1` on a small and a large input of each data set, with and without QR images, and the C floor
/// (`bench/cfloor.c`) on the payloads those runs signed. The figure per card is the slope between the two
/// sizes, (large − small) / (patients large − patients small), so start-up (loading, OpenSSL's initialisation,
/// reading the key and template, indexing) drops out. The same binary and input give the same count on a busy
/// machine, which seconds do not; the CPU time of the same runs without valgrind is printed beside it, as an
/// indication only.
enum Instructions {
    /// A pipeline stage: the inclusive instructions of `plus` functions minus those of `minus` (a stage that
    /// is part of another one), by demangled name (`Demangler.normalized`).
    struct Stage {
        var name: String
        var plus: [String]
        var minus: [String] = []
    }

    /// The stages of `healthcards issue`, in pipeline order. Whatever they leave is "other": the reading
    /// thread's queue, the report's order, output names, process start-up not dropped by the slope.
    static let issueStages: [Stage] = [
        Stage(name: "csvRead", plus: ["CSVTemplateInput.init(path:template:limits:patientsBeforeFailure:)", "CSVTemplateInput.Cursor.next()"]),
        Stage(
            name: "render", plus: ["CSVTemplateInput.PatientRows.render(_:now:)"],
            minus: ["BundleMinimizer.minimizeKeepingOrigins(_:steps:)", "BundleValidator.validate(_:now:purpose:)"]),
        Stage(name: "minimize", plus: ["BundleMinimizer.minimizeKeepingOrigins(_:steps:)"]),
        Stage(name: "validate", plus: ["BundleValidator.validate(_:now:purpose:)"]),
        Stage(name: "payload", plus: ["CardIssuer.payload(for:patientID:)"]),
        Stage(name: "deflate", plus: ["RawDeflater.deflate(_:)"]),
        Stage(name: "sign", plus: ["JWS.sign(deflatedPayload:kid:signer:)"]),
        Stage(name: "selfCheck", plus: ["CardIssuer.checkRoundTrip(_:payload:)"]),
        Stage(name: "qr", plus: ["CardImages.init(jws:settings:)"], minus: ["QRImage.png(size:modules:)"]),
        Stage(name: "png", plus: ["QRImage.png(size:modules:)"]),
        Stage(name: "fileWrite", plus: ["FileIO.writeAtomically(_:to:access:sync:)"]),
        Stage(name: "report", plus: ["ReportLine.ndjson(style:)"]),
    ]

    /// The C floor's stages (`bench/cfloor.c`): its functions of the same names.
    static let floorStages: [Stage] = [
        Stage(name: "deflate", plus: ["floor_deflate"]),
        Stage(name: "sign", plus: ["floor_sign"]),
        Stage(name: "qr", plus: ["floor_qr"]),
        Stage(name: "png", plus: ["floor_png_default"]),
        Stage(name: "pngFast", plus: ["floor_png_fast"]),
        // Beside the floor, not in its figure: the self-check's ES256 verify in OpenSSL alone.
        Stage(name: "verify", plus: ["floor_verify"]),
    ]

    /// An input measured at two sizes.
    struct DataSet {
        var name: String
        var template: String
        /// CSV files by patient count.
        var files: [Int: String]
    }

    /// What one measured configuration gave: instructions per card in all and per stage, and the same for
    /// the CPU time of a run without valgrind (seconds per card).
    struct Figure {
        var total = 0.0
        var stages: [(String, Double)] = []
        var cpuSecondsPerCard = 0.0
        func stage(_ name: String) -> Double { stages.first { $0.0 == name }?.1 ?? 0 }
    }

    static func run(_ options: Options) throws {
        let work = options["work"] ?? ((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/healthcards-bench-instructions")
        let jsonPath = options["json"] ?? "bench-instructions.json"
        let selfDir = FileIO.parent(of: (try? Bench.readLink("/proc/self/exe")) ?? CommandLine.arguments[0])
        let installed = options["healthcards"] ?? "\(selfDir)/healthcards"
        let cfloor = options["cfloor"] ?? "\(selfDir)/cfloor"
        let valgrind = options["valgrind"] ?? "valgrind"
        let templates = options["templates"] ?? "templates"
        let small = options.int("small", 100), large = options.int("large", 500)
        guard large > small else { fail("--large \(large) must be more than --small \(small)") }
        let parallel = options.int("parallel", BatchIssuer.activeCores())
        let sets = (options["sets"] ?? "generate,vaccination-sample,lab-sample").split(separator: ",").map(String.init)
        guard access(cfloor, X_OK) == 0 else { fail("no C floor program at \(cfloor): build it with `make bench` (gcc bench/cfloor.c)") }
        guard (try? Spawn.wait(Spawn.start(valgrind, ["--version"]))) == 0 else {
            fail("cannot run \(valgrind): install valgrind (`make bench` installs the Debian package)")
        }

        _ = try ChildRun.run("/bin/rm", ["-rf", work])
        try FileIO.createDirectories(work)
        // Valgrind 3.19 (Debian 12) cannot read the DWARF 5 debug information of the release binary ("Possibly
        // corrupted debuginfo file", and it stops): callgrind runs a copy without it (`objcopy --strip-debug`, from
        // binutils, which gcc needs anyway). The code is the same, so are the instructions; functions keep their
        // names from the symbol table.
        let healthcards = try Self.withoutDebugInfo(installed, into: work)
        let key = "\(work)/bench-key.pem"
        let keygen = try ChildRun.run(healthcards, ["keygen", "--out", key])
        guard keygen.status == 0 else { throw BenchError("keygen failed: \(keygen.stderr)") }

        // The data sets, each at both sizes.
        var dataSets: [DataSet] = []
        for name in sets {
            var set: DataSet
            switch name {
            case "generate":
                set = DataSet(name: name, template: "\(templates)/covid19-vaccination.json", files: [:])
                for n in [small, large] {
                    set.files[n] = "\(work)/generate-\(n).csv"
                    _ = try SyntheticCVRS.write(patients: n, to: set.files[n]!)
                }
            case "vaccination-sample", "lab-sample":
                let stem = name == "lab-sample" ? "lab-result" : "covid19-vaccination"
                set = DataSet(name: name, template: "\(templates)/\(stem).json", files: [:])
                let template = try Template(bytes: try FileIO.read(set.template), source: set.template)
                for n in [small, large] {
                    set.files[n] = "\(work)/\(name)-\(n).csv"
                    try SampleCSV.replicate("\(templates)/\(stem).sample.csv", template: template, patients: n, to: set.files[n]!)
                }
            default:
                fail("unknown data set '\(name)'; expected generate, vaccination-sample, lab-sample")
            }
            dataSets.append(set)
        }

        // Every callgrind run of `issue`, then the C floor on the payloads the runs without QR signed.
        let environment = ["SWIFT_DETERMINISTIC_HASHING": "1"]
        func issueArguments(_ set: DataSet, _ n: Int, qr: Bool, out: String) -> [String] {
            ["issue", "--issuer", Bench.issuer, "--key", key, "--template", set.template, "--out", out, "--quiet", "--jobs", "1"]
                + (qr ? [] : ["--no-qr"]) + [set.files[n]!]
        }
        func tag(_ set: DataSet, _ n: Int, _ qr: Bool) -> String { "\(set.name)-\(qr ? "qr" : "noqr")-\(n)" }
        var runs: [(label: String, program: String, arguments: [String], environment: [String: String])] = []
        for set in dataSets {
            for qr in [false, true] {
                for n in [small, large] {
                    let t = tag(set, n, qr)
                    runs.append((t, valgrind, ["--tool=callgrind", "--callgrind-out-file=\(work)/\(t).callgrind"]
                        + [healthcards] + issueArguments(set, n, qr: qr, out: "\(work)/\(t)"), environment))
                }
            }
        }
        log("instructions: \(runs.count) callgrind runs of `healthcards issue --jobs 1` (\(small) and \(large) patients; \(parallel) at a time)")
        try runAll(runs, parallel: parallel, work: work)
        var floorRuns: [(label: String, program: String, arguments: [String], environment: [String: String])] = []
        for set in dataSets {
            for n in [small, large] {
                let payloads = "\(work)/\(set.name)-\(n).payloads"
                try Payloads.write(cards: "\(work)/\(tag(set, n, false))/cards", to: payloads)
                for qr in [false, true] {
                    let t = "floor-" + tag(set, n, qr)
                    floorRuns.append((t, valgrind, ["--tool=callgrind", "--callgrind-out-file=\(work)/\(t).callgrind", cfloor]
                        + (qr ? ["--png-both"] : ["--no-qr"]) + [key, payloads], [:]))
                }
            }
        }
        log("instructions: \(floorRuns.count) callgrind runs of the C floor on the same payloads")
        try runAll(floorRuns, parallel: parallel, work: work)

        // The same runs without valgrind, one at a time, for their CPU time.
        var cpu: [String: Double] = [:]
        for set in dataSets {
            for qr in [false, true] {
                for n in [small, large] {
                    let t = tag(set, n, qr)
                    _ = try ChildRun.run("/bin/rm", ["-rf", "\(work)/\(t)"])
                    cpu[t] = try timed(healthcards, issueArguments(set, n, qr: qr, out: "\(work)/\(t)"), environment: environment)
                    cpu["floor-" + t] = try timed(cfloor, (qr ? ["--png-both"] : ["--no-qr"]) + [key, "\(work)/\(set.name)-\(n).payloads"])
                }
            }
        }

        // The figures.
        var found = Set<String>()
        func figure(_ label: String, stages: [Stage]) throws -> Figure {
            let a = try CallgrindProfile.read("\(work)/\(label)-\(small).callgrind", work: work)
            let b = try CallgrindProfile.read("\(work)/\(label)-\(large).callgrind", work: work)
            let cards = Double(large - small)
            var f = Figure()
            f.total = Double(b.total - a.total) / cards
            for stage in stages {
                func value(_ p: CallgrindProfile) -> Int {
                    stage.plus.reduce(0) { $0 + (p.inclusive[$1] ?? 0) } - stage.minus.reduce(0) { $0 + (p.inclusive[$1] ?? 0) }
                }
                for name in stage.plus + stage.minus where b.inclusive[name] != nil { found.insert(name) }
                f.stages.append((stage.name, Double(value(b) - value(a)) / cards))
            }
            f.cpuSecondsPerCard = ((cpu[label + "-\(large)"] ?? 0) - (cpu[label + "-\(small)"] ?? 0)) / cards
            return f
        }
        // The floor's figure leaves out the verify cfloor runs beside it (its `verify` stage stays, to compare with
        // the self-check); the CPU of the verify is taken off in proportion to its instructions.
        func withoutVerify(_ f: Figure) -> Figure {
            var g = f
            g.total = f.total - f.stage("verify")
            if f.total > 0 { g.cpuSecondsPerCard = f.cpuSecondsPerCard * g.total / f.total }
            return g
        }
        var results: [JSONValue] = []
        var table: [(set: String, noQR: Figure, qr: Figure, floorNoQR: Figure, floorQR: Figure)] = []
        for set in dataSets {
            let noQR = try figure("\(set.name)-noqr", stages: issueStages)
            let qr = try figure("\(set.name)-qr", stages: issueStages)
            let floorNoQR = withoutVerify(try figure("floor-\(set.name)-noqr", stages: floorStages))
            let floorQR = withoutVerify(try figure("floor-\(set.name)-qr", stages: floorStages))
            table.append((set.name, noQR, qr, floorNoQR, floorQR))
        }
        // Without QR the floor made no images; with QR it made both PNGs, so each floor leaves the other out.
        func floorWithQR(_ f: Figure, fast: Bool) -> Double { f.total - (fast ? f.stage("png") : f.stage("pngFast")) }
        func floorCPU(_ f: Figure, fast: Bool) -> Double {
            // Both PNGs were made: the CPU of the one left out is taken off in proportion to its instructions.
            f.total > 0 ? f.cpuSecondsPerCard * floorWithQR(f, fast: fast) / f.total : 0
        }

        log("instructions per card (callgrind, Ir; slope between \(small) and \(large) patients, `issue --jobs 1`):")
        log("  " + "".padding(44) + table.map { $0.set.padding(20) }.joined())
        func row(_ title: String, _ values: [Double], unit: String = "M") {
            let texts = values.map { v -> String in
                switch unit {
                case "×": return fmt(v, 2) + "×"
                case "µs": return fmt(v * 1e6, 1) + " µs"
                default: return fmt(v / 1e6, 3) + " M"
                }
            }
            log("  " + title.padding(44) + texts.map { $0.padding(20) }.joined())
        }
        row("without QR: healthcards", table.map(\.noQR.total))
        row("            C floor", table.map(\.floorNoQR.total))
        row("            floor ÷ healthcards", table.map { $0.floorNoQR.total / max($0.noQR.total, 1) }, unit: "×")
        row("            C floor + ES256 verify", table.map { $0.floorNoQR.total + $0.floorNoQR.stage("verify") })
        row("with QR:    healthcards", table.map(\.qr.total))
        row("            C floor (libpng defaults)", table.map { floorWithQR($0.floorQR, fast: false) })
        row("            C floor (PNG level 1, no filter)", table.map { floorWithQR($0.floorQR, fast: true) })
        row("            floor ÷ healthcards", table.map { floorWithQR($0.floorQR, fast: false) / max($0.qr.total, 1) }, unit: "×")
        log("  stages (M instructions per card; without QR / with QR):")
        for stage in issueStages {
            let values = table.map { "\(fmt($0.noQR.stage(stage.name) / 1e6, 3)) / \(fmt($0.qr.stage(stage.name) / 1e6, 3))".padding(20) }
            log("    " + stage.name.padding(42) + values.joined())
        }
        let others = table.map { t -> String in
            let a = t.noQR.total - t.noQR.stages.reduce(0) { $0 + $1.1 }, b = t.qr.total - t.qr.stages.reduce(0) { $0 + $1.1 }
            return "\(fmt(a / 1e6, 3)) / \(fmt(b / 1e6, 3))".padding(20)
        }
        log("    " + "other".padding(42) + others.joined())
        log("  C floor stages (M instructions per card):")
        for stage in floorStages {
            let values = table.map { t -> String in
                let f = ["qr", "png", "pngFast"].contains(stage.name) ? t.floorQR : t.floorNoQR
                return fmt(f.stage(stage.name) / 1e6, 3).padding(20)
            }
            log("    " + stage.name.padding(42) + values.joined())
        }
        log("CPU µs per card, same slope, runs without valgrind (indicative only: seconds depend on what else the machine runs):")
        row("without QR: healthcards", table.map(\.noQR.cpuSecondsPerCard), unit: "µs")
        row("            C floor", table.map(\.floorNoQR.cpuSecondsPerCard), unit: "µs")
        row("with QR:    healthcards", table.map(\.qr.cpuSecondsPerCard), unit: "µs")
        row("            C floor (libpng defaults)", table.map { floorCPU($0.floorQR, fast: false) }, unit: "µs")
        let missing = Set((issueStages + floorStages).flatMap { $0.plus + $0.minus }).subtracting(found)
        if !missing.isEmpty {
            log("warning: stage functions not found in the profile (renamed? update Instructions.issueStages): "
                + missing.sorted().joined(separator: ", "))
        }
        // Where the instructions go: the functions with the most instructions of their own, without QR, first data set.
        if let first = dataSets.first {
            let label = "\(first.name)-noqr"
            let a = try CallgrindProfile.read("\(work)/\(label)-\(small).callgrind", work: work)
            let b = try CallgrindProfile.read("\(work)/\(label)-\(large).callgrind", work: work)
            let perCard = b.selfCost.map { ($0.key, Double($0.value - (a.selfCost[$0.key] ?? 0)) / Double(large - small)) }
                .sorted { $0.1 > $1.1 }.prefix(options.int("top", 20))
            log("  most instructions of their own per card (\(first.name), without QR):")
            for (name, value) in perCard { log("    \(fmt(value / 1e3, 1).padding(9)) k  \(name.prefix(110))") }
        }

        for t in table {
            func object(_ f: Figure, floor: Bool) -> JSONValue {
                var stages = JSONObject()
                for (name, value) in f.stages { stages[name] = .integer(Int64(value.rounded())) }
                if !floor { stages["other"] = .integer(Int64((f.total - f.stages.reduce(0) { $0 + $1.1 }).rounded())) }
                return .object(["instructionsPerCard": .integer(Int64(f.total.rounded())), "stages": .object(stages),
                                "cpuMicrosPerCard": Bench.num(f.cpuSecondsPerCard * 1e6, 1)])
            }
            results.append(.object([
                "dataSet": .string(t.set),
                "withoutQR": object(t.noQR, floor: false),
                "withQR": object(t.qr, floor: false),
                "floorWithoutQR": object(t.floorNoQR, floor: true),
                "floorWithoutQRPlusVerify": .integer(Int64((t.floorNoQR.total + t.floorNoQR.stage("verify")).rounded())),
                "floorWithQR": .object([
                    "instructionsPerCard": .integer(Int64(floorWithQR(t.floorQR, fast: false).rounded())),
                    "instructionsPerCardPNGLevel1": .integer(Int64(floorWithQR(t.floorQR, fast: true).rounded())),
                    "stages": object(t.floorQR, floor: true)["stages"] ?? .null,
                    "cpuMicrosPerCard": Bench.num(floorCPU(t.floorQR, fast: false) * 1e6, 1),
                ]),
            ]))
        }
        let result: JSONValue = .object([
            "date": .string(Clock.describe(Clock.nowSeconds())),
            "cpu": .string(Bench.cpuModel()),
            "patients": .array([.integer(Int64(small)), .integer(Int64(large))]),
            "dataSets": .array(results),
        ])
        try FileIO.writeAtomically(JSONWriter.pretty(result) + [0x0A], to: jsonPath)
        log("instruction figures written to \(jsonPath)")
    }

    /// A copy of `program` in `folder` without debug information (`objcopy --strip-debug`), or `program` itself when
    /// objcopy cannot make one.
    static func withoutDebugInfo(_ program: String, into folder: String) throws -> String {
        let copy = "\(folder)/\(program.split(separator: "/").last.map(String.init) ?? "program")-nodebug"
        let made = try ChildRun.run("/usr/bin/env", ["objcopy", "--strip-debug", program, copy])
        guard made.status == 0 else {
            log("warning: objcopy --strip-debug \(program) failed (\(made.stderr)); callgrind runs the program as it is")
            return program
        }
        return copy
    }

    /// Runs the commands, `parallel` at a time; each must exit 0.
    static func runAll(_ runs: [(label: String, program: String, arguments: [String], environment: [String: String])],
                       parallel: Int, work: String) throws {
        var running: [pid_t: String] = [:]
        var next = 0
        while next < runs.count || !running.isEmpty {
            while next < runs.count && running.count < max(1, parallel) {
                let r = runs[next]
                next += 1
                let pid = try Spawn.start(r.program, r.arguments, stderr: "\(work)/\(r.label).stderr", environment: r.environment)
                running[pid] = r.label
            }
            let ended = try Spawn.waitEnded()
            guard let label = running.removeValue(forKey: ended.pid) else { continue }
            guard ended.status == 0 else {
                let text = (try? FileIO.read("\(work)/\(label).stderr")).map { String(decoding: $0.suffix(2000), as: UTF8.self) } ?? ""
                throw BenchError("\(label) exited \(ended.status): \(text)")
            }
        }
    }

    /// The CPU seconds (user + system) of one run; it must exit 0.
    static func timed(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Double {
        let ended = try Spawn.waitEnded(Spawn.start(program, arguments, environment: environment))
        guard ended.status == 0 else { throw BenchError("\(program) \(arguments.joined(separator: " ")) exited \(ended.status)") }
        return ended.cpuSeconds
    }
}

/// A template's sample CSV repeated to any number of patients: copy c of each sample patient gets `-c` after its
/// patient id and event id (so every copy is a patient of its own, with the sample's rows and values).
enum SampleCSV {
    static func replicate(_ sample: String, template: Template, patients: Int, to path: String) throws {
        let reader = try CSVReader(path: sample, delimiter: template.delimiter)
        guard let header = try reader.next()?.fields else { throw BenchError("\(sample) is empty") }
        var rows: [[String]] = []
        while let record = try reader.next() { rows.append(record.fields) }
        guard let keyIndex = header.firstIndex(of: template.patientKey) else { throw BenchError("\(sample) has no \(template.patientKey) column") }
        let eventIndex = template.eventKey.flatMap { header.firstIndex(of: $0) }
        var ids: [String] = []
        for row in rows where !ids.contains(row[keyIndex]) { ids.append(row[keyIndex]) }
        let delimiter = Character(UnicodeScalar(template.delimiter))
        func field(_ text: String) -> String {
            guard text.contains(delimiter) || text.contains("\"") || text.contains("\n") else { return text }
            return "\"" + text.map { $0 == "\"" ? "\"\"" : String($0) }.joined() + "\""
        }
        var out = header.map(field).joined(separator: String(delimiter)) + "\n"
        var made = 0
        var copy = 0
        while made < patients {
            copy += 1
            let take = Set(ids.prefix(patients - made))
            for row in rows where take.contains(row[keyIndex]) {
                var fields = row
                fields[keyIndex] += "-\(copy)"
                if let e = eventIndex, !fields[e].isEmpty { fields[e] += "-\(copy)" }
                out += fields.map(field).joined(separator: String(delimiter)) + "\n"
            }
            made += take.count
        }
        try FileIO.writeAtomically(Array(out.utf8), to: path)
    }
}

/// The payloads a run signed, for the C floor: the JWS header JSON on the first line, then each card's
/// minified payload JSON (inflated from its JWS) on a line of its own.
enum Payloads {
    static func write(cards folder: String, to path: String) throws {
        var out: [UInt8] = []
        var header: [UInt8]?
        for name in FileIO.list(folder).sorted() where name.hasSuffix(".smart-health-card") {
            let file = try JSONParser.parse(try FileIO.read("\(folder)/\(name)"))
            guard let compact = file["verifiableCredential"]?[0]?.stringValue else { throw BenchError("\(name) holds no JWS") }
            let parts = try JWS(compact: compact).parts()
            if header == nil {
                header = parts.header
                out += parts.header + [0x0A]
            }
            out += try RawInflate.inflate(parts.payload) + [0x0A]
        }
        guard header != nil else { throw BenchError("no cards in \(folder)") }
        try FileIO.writeAtomically(out, to: path)
    }
}
