import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsIssuing

/// `healthcards shl audit`: each access to a site's SMART Health Links, from the web server's access logs.
enum SHLAuditCommand {
    static let help = """
        Usage: healthcards shl audit --site SITE --log ACCESS.LOG [--log ACCESS.LOG]... [--links DIR] [--json]
                                     [ACCESS.LOG...]

        Lists each access to the SMART Health Link files of SITE (docs/shl.md, "An audit from the access logs"),
        read from the web server's access logs: nginx's combined format (its default), Apache's common or
        combined; rotated files compressed with gzip (access.log.2.gz) are read as they are, every member, and
        zero bytes after the last member (padding some copy tools leave) are skipped. The Kill the
        Clipboard profile says senders SHALL audit every access with recipient and time: receivers fetch a
        link with GET <url>?recipient=<who>, and these formats log the request line with its query.
        For each link, oldest access first: the time (UTC), the method, the HTTP status, the bytes sent and the
        recipient, decoded as a query string (%20 and + are spaces), or '(no recipient)'. A link is named by a
        fingerprint of its file name (12 characters of its SHA-256), never the name itself, and, with --links,
        by the names of the link texts in DIR/shl that hold it. Nothing is written but the list.
        The list tells who fetched which link when: treat it as health data.

        Options:
          --site SITE           the issuer's site folder: requests for SITE's link files count, under the path of
                                its issuer URL (shl/<43 characters> at any depth)
          --log ACCESS.LOG      an access log (plain or gzip); may be repeated, and more may follow as arguments
          --links DIR           an `issue` output (or its shl/ folder): name each link by its DIR/shl/<name>.txt
          --json                one JSON object a line (link, names, time, seconds, method, status, bytes,
                                recipient) instead of text
          -h, --help            show this help

        Exit status: 0 read every log (lines of other formats are counted, not errors); 2 usage error, or a log
        that cannot be read (or corrupt gzip, or bytes other than zeros after its last member: the message
        gives the byte offset).
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["site", "log", "links"], flagNames: ["json"], command: "shl audit")
        if parsed.has("help") {
            say(help)
            return .ok
        }
        let site = try PublishedSite(root: try parsed.required("site", command: "shl audit"))
        let logs = parsed.values("log") + parsed.positionals
        guard !logs.isEmpty else {
            throw HealthCardError(
                .configuration, "`healthcards shl audit` needs at least one --log ACCESS.LOG; see `healthcards shl audit --help`")
        }
        var names: [String: [String]] = [:]
        if let links = parsed.value("links") {
            let folder = FileIO.basename(links) == "shl" ? links : links + "/shl"
            guard FileIO.isDirectory(folder) else {
                throw HealthCardError(.configuration, "--links \(links): there is no folder \(folder) of link texts")
            }
            names = SHLAudit.linkNames(folder: folder)
        }
        var audit = SHLAudit(issuer: site.issuer, names: names)
        for log in logs {
            guard FileIO.isRegularFile(log) else {
                throw HealthCardError(.configuration, "--log \(log) is not a file")
            }
            do {
                if let warning = try audit.read(file: log) { printError("warning: \(warning)") }
            } catch let error as HealthCardError where error.kind == .compression || error.kind == .input {
                throw HealthCardError(.configuration, error.kind == .input ? error.text : "\(log): \(error.text)")
            }
        }
        let links = audit.links
        let json = parsed.has("json")
        for link in links {
            let named = link.names.isEmpty ? "" : " (" + link.names.map { ControlCharacters.escaped($0) }.joined(separator: ", ") + ")"
            if !json {
                say("link \(link.fingerprint)\(named): \(link.accesses.count) access\(link.accesses.count == 1 ? "" : "es")")
            }
            for access in link.accesses {
                let recipient = access.recipient.map { Quote.text($0, limit: 200) } ?? "(no recipient)"
                if json {
                    var object: JSONObject = [
                        "link": .string(link.fingerprint), "names": .array(link.names.map { .string($0) }),
                        "time": .string(Clock.iso8601(access.time)), "seconds": .integer(access.time),
                        "method": .string(access.method), "status": .integer(Int64(access.status)),
                        "bytes": .integer(access.bytes),
                    ]
                    object["recipient"] = access.recipient.map { .string($0) } ?? .null
                    say(String(decoding: JSONWriter.minified(.object(object)), as: UTF8.self))
                } else {
                    say(
                        "  \(Clock.describe(access.time))  \(ControlCharacters.escaped(access.method)) \(access.status)  "
                            + "\(access.bytes) bytes  recipient \(recipient)")
                }
            }
        }
        let accesses = links.reduce(0) { $0 + $1.accesses.count }
        var summary =
            "read \(audit.lines) line\(audit.lines == 1 ? "" : "s") from \(logs.count) log\(logs.count == 1 ? "" : "s"): "
            + "\(accesses) access\(accesses == 1 ? "" : "es") to \(links.count) link\(links.count == 1 ? "" : "s")"
        if audit.unreadable > 0 {
            summary += "; \(audit.unreadable) line\(audit.unreadable == 1 ? " was" : "s were") not in the common or combined format"
        }
        if audit.notKept > 0 { summary += "; \(audit.notKept) more accesses were not listed (over \(audit.maxAccesses))" }
        printError(summary)
        return .ok
    }
}
