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
import HealthCardsServer

/// Exit statuses: 0 every record issued / no error; 1 some records rejected or problems found (the
/// command itself ran to its end); 2 the command stopped: a usage or configuration error, or an output
/// that could not be written; 130/143 `issue` stopped by SIGINT/SIGTERM.
enum ExitStatus: Int32 {
    case ok = 0
    case partial = 1
    case usage = 2
    case interrupted = 130
    case terminated = 143
}

let commands: [(name: String, summary: String, run: ([String]) throws -> ExitStatus)] = [
    ("keygen", "make a new P-256 signing key (PKCS#8 PEM, mode 0600) and print its kid", KeygenCommand.run),
    ("jwks", "write the JWK Set (public keys only) of one or more keys", JWKSCommand.run),
    ("issue", "issue SMART Health Cards from CSV (with a template) or FHIR Bundle input", IssueCommand.run),
    ("print", "print issued cards as PDF pages: name, birth date, doses or results, QR, wallet cut-out", PrintCommand.run),
    ("verify", "check cards, JWS, QR texts and images, and key sets; report every problem with its code", VerifyCommand.run),
    ("directory", "the VCI directory offline: check its snapshot's signature, show its issuers, check a site's keys", DirectoryCommand.run),
    ("site", "lay out the static-host folder: jwks.json, CRLs, header rules for nginx/Apache/_headers", SiteCommand.run),
    ("revoke", "revoke a patient's cards (rid into the key's CRL), or withdraw a SMART Health Link", RevokeCommand.run),
    ("shl", "make SMART Health Links (static host) for cards already issued; audit their accesses", SHLCommand.run),
    ("serve", "serve SMART Health Links (manifests, passcodes, long-term links) from SQLite or PostgreSQL", ServeCommand.run),
    ("link", "make, update, deactivate, list and audit the links a server serves (encrypted here)", LinkCommand.run),
    ("cards", "load the cards of batch outputs into a server's database, for $health-cards-issue", CardsCommand.run),
    ("report", "check the reports of a batch's shards (issue --shard) together and merge them into one", ReportCommand.run),
    ("fixtures", "write a reproducible catalogue of valid and deliberately broken test cards for verifier developers", FixturesCommand.run),
]

/// Writes `healthcards: message` to standard error.
func printError(_ message: String) {
    var line = "healthcards: " + message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// Writes a line to standard output.
func say(_ text: String) {
    Swift.print(text)
}

/// The width of the command names in the usage's list: the longest name and two spaces, so every summary
/// starts in one column.
let commandColumn = (commands.map(\.name.count).max() ?? 0) + 2

let usage = """
    healthcards: issue SMART Health Cards (signed .smart-health-card files, shc:/ QR images, jwks.json)

    Usage: healthcards COMMAND [OPTIONS]

    Commands:
    \(commands.map { "  " + $0.name.padding(commandColumn) + $0.summary }.joined(separator: "\n"))

    Run `healthcards COMMAND --help` for a command's options, `healthcards --version` (-V) for the versions
    of this program, the SMART Health Cards framework it implements and the libraries it runs with.
    Exit status: 0 success; 1 some records rejected or cards not printed (issue, print) or problems found
    (verify); 2 the command stopped: a usage or configuration error, or an output that could not be
    written; 130/143 issue, print or fixtures was interrupted by SIGINT/SIGTERM (run it again to finish).

    \(InstalledFiles.help)
    """

extension String {
    func padding(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}

/// `healthcards --version`: the program's version on the first line (as help2man and packagers read it), then
/// the SMART Health Cards framework version it implements and each C library's version, asked from the
/// library at run time.
let versionLines =
    ["healthcards \(Versions.toolkit)", "SMART Health Cards framework \(Versions.shcFramework)"]
    + Versions.runtimeLibraries.map { "\($0.library) \($0.version)" }
let versionText = versionLines.joined(separator: "\n")

// Swift reads each argument as UTF-8 and repairs what is not (a Latin-1 file name `caf\xE9.csv` becomes
// `caf\u{FFFD}.csv`), so such a name could never be opened ("does not exist") and such a value would be
// written with U+FFFD in it: refused by name first.
for index in 1..<Int(CommandLine.argc) {
    guard let raw = CommandLine.unsafeArgv[index] else { continue }
    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw))
    guard String(validating: bytes, as: UTF8.self) == nil else { continue }
    let text = String(decoding: bytes, as: UTF8.self)
    printError(
        "argument \(index) (\(Quote.text(text, limit: 4096)), \u{FFFD} standing for what cannot be read) is not UTF-8 text: healthcards "
            + "reads file names and values as UTF-8, so it could not open that file or would write the value changed. "
            + "Rename the file in UTF-8 (e.g. `convmv -f latin1 -t utf8 --notest FILE`) or give the value in UTF-8")
    exit(ExitStatus.usage.rawValue)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first else {
    say(usage)
    exit(ExitStatus.usage.rawValue)
}
if name == "--help" || name == "-h" || name == "help" {
    say(usage)
    exit(0)
}
if name == "--version" || name == "-V" {
    say(versionText)
    exit(0)
}
guard let command = commands.first(where: { $0.name == name }) else {
    printError("unknown command \(Quote.text(name)); expected one of \(commands.map(\.name).joined(separator: ", ")). See `healthcards --help`")
    exit(ExitStatus.usage.rawValue)
}
// Commands that may hold a private key, a PIN, the revocation secret or a link's key start OpenSSL's secure
// heap and turn off core dumps and tracing first (`ProcessProtection`); the library never does by itself.
if ["issue", "keygen", "jwks", "site", "revoke", "shl", "fixtures"].contains(command.name) {
    ProcessProtection.protectSecrets()
}
/// `status`, unless what the command printed to standard output could not all be written (a full disk, a closed
/// pipe, `> /dev/full`): then it says so and the status is 2, so that a report or a link is never lost with exit 0.
func flushedStatus(_ status: Int32) -> Int32 {
    guard let reason = StandardOutput.flushFailure() else { return status }
    printError("cannot write to standard output (\(reason)): what \(command.name) printed there is lost")
    return ExitStatus.usage.rawValue
}
do {
    let status = try command.run(Array(arguments.dropFirst()))
    exit(flushedStatus(status.rawValue))
} catch let error as HealthCardError {
    printError(error.commandLineText)
    exit(ExitStatus.usage.rawValue)
} catch {
    printError("\(error)")
    exit(ExitStatus.usage.rawValue)
}
