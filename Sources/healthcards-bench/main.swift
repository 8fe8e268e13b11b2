#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

// healthcards-bench: measures the issuing pipeline on synthetic CVRS data (see docs/performance.md).

let help = """
    Usage: healthcards-bench [run] [OPTIONS]
           healthcards-bench worst [--work DIR] [--json FILE] [--healthcards PATH] [--template FILE] [--quick]
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
    default:
        fail("unknown command '\(command)'; see --help")
    }
} catch {
    fail("\(error)")
}
