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

// healthcards-bench: measures the issuing pipeline on synthetic CVRS data (see docs/performance.md).

let help = """
    Usage: healthcards-bench [run] [OPTIONS]
           healthcards-bench worst [--work DIR] [--json FILE] [--healthcards PATH] [--template FILE] [--quick]
           healthcards-bench instructions [--small N] [--large N] [--sets LIST] [--work DIR] [--json FILE]
                                          [--healthcards PATH] [--cfloor PATH] [--valgrind PATH] [--parallel N]
           healthcards-bench callgrind FILE...
           healthcards-bench generate --patients N [--seed S] OUT.csv
           healthcards-bench server [--duration SECONDS] [--connections N] [--work DIR] [--json FILE]

    run (the default) generates N synthetic patients (1 to 4 doses each, CVRS layout, rows in dose
    rounds like a date-sorted extract) and measures:
      stages      µs per card of each pipeline stage, one thread, in this process
      end-to-end  `healthcards issue` as a child process: cards/s and peak RSS, with and without QR
                  images, --jobs 1 and --jobs <all cores>
      pdf         printed cards: µs per card to read back, lay out and write the PDF, pages/s one core;
                  end to end, `issue --pdf` pages/s per core next to cards/s
      png         size and time per image for zlib levels and PNG row filters
      scale       (--scale) `issue --no-qr` on inputs of the given row counts: cards/s and peak RSS
    It prints a table and writes the figures to --json.

    worst makes the largest input of each kind that verify and issue accept (each at its budget,
    docs/verify.md "Budgets"), plus the reported inputs that used to cost without bound, and runs
    `healthcards` on each as a child process: seconds, peak RSS, exit status (--json, default
    bench-worst.json; --quick makes small ones, for tests).

    server measures the link server with wrk: `healthcards serve` on 127.0.0.1 with SQLite and with a
    PostgreSQL 15 it starts in --work (when postgresql-15 is installed), manifest POSTs per second and
    p50/p99 latency at --connections (default 64) for --duration seconds (default 10), without and with a
    passcode; and what one passcode check costs for each hash function (--json, default bench-server.json).

    instructions counts instructions per card under `valgrind --tool=callgrind`, the figure to compare
    between runs (docs/performance.md, "Instructions per card"): `healthcards issue --jobs 1` with and
    without QR images on --small and --large patients (default 100 and 500) of each data set (--sets,
    default generate,vaccination-sample,lab-sample: this program's synthetic data and the shipped
    samples repeated), and the C floor (bench/cfloor.c: raw DEFLATE, ES256 with OpenSSL, libqrencode,
    libpng) on the payloads those runs signed. Per card is the slope (large - small) / (patients
    large - patients small), so start-up drops out; per stage, the inclusive counts of the stage
    functions. Callgrind runs a copy of healthcards without its debug information (objcopy
    --strip-debug; valgrind 3.19 cannot read it), the same code. Beside them, the CPU time of the same runs without valgrind (indicative only). Writes
    --json (default bench-instructions.json). --parallel runs that many callgrind runs at once
    (default: the processors online; the counts do not depend on it).

    callgrind prints the total and the inclusive instructions of each function of callgrind output
    files as JSON (names demangled when swift-demangle is on PATH).

    Options:
      --patients N        patients for the stage and end-to-end runs (default 5000)
      --stage-patients N  patients timed stage by stage (default min(N, 2000))
      --pdf-patients N    patients for the end-to-end `issue --pdf` runs (default min(N, 1000))
      --scale ROWS,...    row counts for the scale runs, e.g. 10000,100000,1000000 (default: none)
      --work DIR          scratch folder (default $TMPDIR/healthcards-bench or /tmp/healthcards-bench; emptied)
      --json FILE         where to write the figures (default bench-results.json)
      --template FILE     default templates/covid19-vaccination.json
      --healthcards PATH  the issue binary (default: healthcards beside this program)
      --quick             skip the end-to-end and scale runs (for tests)
    """

func fail(_ message: String) -> Never {
    var line = "healthcards-bench: \(message)\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    exit(2)
}

/// The command line: `--name value` options, `--quick`, positionals.
struct Options {
    var values: [String: String] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    init(_ args: [String]) {
        var i = 0
        while i < args.count {
            let a = args[i]
            i += 1
            if a == "--quick" {
                flags.insert("quick")
                continue
            }
            if a.hasPrefix("--") {
                guard i < args.count else { fail("\(a) needs a value") }
                values[String(a.dropFirst(2))] = args[i]
                i += 1
            } else {
                positionals.append(a)
            }
        }
    }

    subscript(name: String) -> String? { values[name] }

    func int(_ name: String, _ fallback: Int) -> Int {
        guard let text = values[name] else { return fallback }
        guard let v = Int(text), v > 0 else { fail("--\(name) '\(text)' is not a positive whole number") }
        return v
    }
}

var args = Array(CommandLine.arguments.dropFirst())
if args.first == "--help" || args.first == "-h" {
    print(help)
    exit(0)
}
let command = args.first.map { $0.hasPrefix("-") ? "run" : $0 } ?? "run"
if args.first == command { args.removeFirst() }
let options = Options(args)

do {
    switch command {
    case "generate":
        guard options.positionals.count == 1 else { fail("generate needs one OUT.csv") }
        let rows = try SyntheticCVRS.write(patients: options.int("patients", 1000), seed: UInt64(options.int("seed", 1)), to: options.positionals[0])
        print(rows)
    case "run":
        try Bench.run(options)
    case "worst":
        try WorstCases.run(options)
    case "server":
        try ServerBench.run(options)
    case "instructions":
        try Instructions.run(options)
    case "callgrind":
        guard !options.positionals.isEmpty else { fail("callgrind needs one or more callgrind output files") }
        var files: [JSONValue] = []
        for path in options.positionals {
            let profile = try CallgrindProfile.read(path, work: FileIO.parent(of: path))
            var functions = JSONObject()
            for (name, cost) in profile.inclusive.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
                functions[name] = .object(["inclusive": .integer(Int64(cost)), "self": .integer(Int64(profile.selfCost[name] ?? 0))])
            }
            files.append(.object(["file": .string(path), "total": .integer(Int64(profile.total)), "functions": .object(functions)]))
        }
        log(String(decoding: JSONWriter.pretty(.array(files)), as: UTF8.self))
    default:
        fail("unknown command '\(command)'; see --help")
    }
} catch {
    fail("\(error)")
}
