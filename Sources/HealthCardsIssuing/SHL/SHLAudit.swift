import HealthCardsCore
import HealthCardsSite

/// One line of a web server's access log in the NCSA formats: Apache `common`
/// (`%h %l %u %t "%r" %>s %b`) and `combined` (the same, then `"%{Referer}i" "%{User-agent}i"`), which is also
/// nginx's default `combined` (`$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
/// "$http_referer" "$http_user_agent"`). `%r`/`$request` is the request line as received, query string included.
public struct AccessLogLine: Sendable, Equatable {
    /// Seconds since 1970 (from `[dd/Mon/yyyy:hh:mm:ss ±hhmm]`).
    public var time: Int64
    /// `GET`, `HEAD`, … (at most 16 characters).
    public var method: String
    /// The request target's path, without the query (as logged, with the servers' `\xHH` escapes undone).
    public var path: String
    /// The query after `?`, or nil.
    public var query: String?
    /// The HTTP status.
    public var status: Int
    /// Body bytes sent (`-` is 0).
    public var bytes: Int64

    /// Most bytes of a line read; a longer line is not parsed (counted by the audit).
    public static let maxLineBytes = 16 * 1024

    /// Parses one line (without its newline).
    /// - Returns: nil when the line is not in the common or combined format (or longer than `maxLineBytes`).
    public static func parse(_ line: some Collection<UInt8>) -> AccessLogLine? {
        guard line.count <= maxLineBytes else { return nil }
        let bytes = Array(line)
        // host ident user [time] "request" status bytes ...
        // The time is found from the request's opening quote: the user field before it comes from the client
        // (`Authorization: Basic`) and may hold a '[' of its own, which neither server escapes; an unescaped '"'
        // cannot come before the request (both write it as \" or \x22). `[dd/Mon/yyyy:hh:mm:ss +zzzz]` is 28 bytes.
        var close = -1
        var k = 0
        while k + 2 < bytes.count {
            if bytes[k] == UInt8(ascii: "]") && bytes[k + 1] == 0x20 && bytes[k + 2] == UInt8(ascii: "\"") {
                close = k
                break
            }
            if bytes[k] == UInt8(ascii: "\"") { return nil }
            k += 1
        }
        let open = close - 27
        guard close >= 0, open >= 0, bytes[open] == UInt8(ascii: "["), let time = parseTime(bytes[(open + 1)..<close])
        else { return nil }
        var i = close + 1
        guard i + 1 < bytes.count, bytes[i] == 0x20, bytes[i + 1] == UInt8(ascii: "\"") else { return nil }
        i += 2
        // The request line, to the first quote not escaped by a backslash (Apache writes \", nginx \x22).
        var request: [UInt8] = []
        var closed = false
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\\"), i + 1 < bytes.count {
                let next = bytes[i + 1]
                if next == UInt8(ascii: "x"), i + 3 < bytes.count, let high = hex(bytes[i + 2]), let low = hex(bytes[i + 3]) {
                    request.append(high << 4 | low)
                    i += 4
                    continue
                }
                if next == UInt8(ascii: "\"") || next == UInt8(ascii: "\\") {
                    request.append(next)
                    i += 2
                    continue
                }
            }
            if byte == UInt8(ascii: "\"") {
                closed = true
                i += 1
                break
            }
            request.append(byte)
            i += 1
        }
        guard closed else { return nil }
        let rest = bytes[i...].split(separator: 0x20, maxSplits: 3, omittingEmptySubsequences: true)
        guard rest.count >= 2, rest[0].count == 3, let status = Int(String(decoding: rest[0], as: UTF8.self)),
            (100...599).contains(status)
        else { return nil }
        let sent: Int64
        if rest[1].elementsEqual([UInt8(ascii: "-")]) {
            sent = 0
        } else {
            guard rest[1].count <= 18, rest[1].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int64(String(decoding: rest[1], as: UTF8.self))
            else { return nil }
            sent = value
        }
        let parts = request.split(separator: 0x20, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].count <= 16, parts[0].allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else { return nil }
        let target = parts[1]
        let question = target.firstIndex(of: UInt8(ascii: "?"))
        let pathBytes = question.map { target[..<$0] } ?? target[...]
        let query = question.map { String(decoding: target[target.index(after: $0)...], as: UTF8.self) }
        return AccessLogLine(
            time: time, method: String(decoding: parts[0], as: UTF8.self), path: String(decoding: pathBytes, as: UTF8.self),
            query: query, status: status, bytes: sent)
    }

    /// The value of `name` in the query, decoded as `application/x-www-form-urlencoded` (`+` and `%20` are
    /// spaces, `%HH` a byte; a `%` not followed by two hex digits is kept as it is; bytes that are not UTF-8
    /// become U+FFFD). Nil when the query has no such parameter.
    public func parameter(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let (key, value) =
                pair.firstIndex(of: "=").map { (pair[..<$0], pair[pair.index(after: $0)...]) } ?? (pair[...], ""[...])
            if Self.formDecode(key) == name { return Self.formDecode(value) }
        }
        return nil
    }

    /// `application/x-www-form-urlencoded` decoding of one name or value.
    public static func formDecode(_ text: some StringProtocol) -> String {
        let input = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var i = 0
        while i < input.count {
            let byte = input[i]
            if byte == UInt8(ascii: "+") {
                out.append(0x20)
            } else if byte == UInt8(ascii: "%"), i + 2 < input.count, let high = hex(input[i + 1]), let low = hex(input[i + 2]) {
                out.append(high << 4 | low)
                i += 3
                continue
            } else {
                out.append(byte)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `dd/Mon/yyyy:hh:mm:ss ±hhmm` as seconds since 1970, or nil.
    static func parseTime(_ text: ArraySlice<UInt8>) -> Int64? {
        let s = Array(text)
        guard s.count == 26, s[2] == UInt8(ascii: "/"), s[6] == UInt8(ascii: "/"), s[11] == UInt8(ascii: ":"),
            s[14] == UInt8(ascii: ":"), s[17] == UInt8(ascii: ":"), s[20] == 0x20,
            s[21] == UInt8(ascii: "+") || s[21] == UInt8(ascii: "-")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard s[index] >= 0x30, s[index] <= 0x39 else { return nil }
                value = value * 10 + Int(s[index] - 0x30)
            }
            return value
        }
        guard let day = number(0..<2), let month = months.firstIndex(of: String(decoding: s[3..<6], as: UTF8.self)),
            let year = number(7..<11), let hour = number(12..<14), let minute = number(15..<17),
            let second = number(18..<20), let zoneHours = number(22..<24), let zoneMinutes = number(24..<26),
            year >= 1970, (1...FHIRDate.daysIn(month: month + 1, year: year)).contains(day), hour < 24, minute < 60,
            second < 61, zoneHours < 24, zoneMinutes < 60
        else { return nil }
        // Days from 1970-01-01 to the date (proleptic Gregorian; H. Hinnant's days_from_civil).
        let y = month < 2 ? year - 1 : year
        let era = y / 400
        let yoe = y - era * 400
        let mp = (month + 10) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let offset = (zoneHours * 3600 + zoneMinutes * 60) * (s[21] == UInt8(ascii: "-") ? -1 : 1)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offset)
    }
}

/// The accesses to a site's SMART Health Link files, read from the web server's access logs: what the CMS Kill
/// the Clipboard profile asks senders to keep (every access, with recipient and time), without a link server.
///
/// A line counts when its request path is a link file of the site: `<iss path>/…/shl/<43 characters>`
/// (`SHLDestination.isFileName`). A link is named by `LogRedaction.fingerprint` of its file name, never the
/// name itself (which, with the key, opens it); with the links folder of an `issue` output it is also named by
/// the record's file name (`shl/<name>.txt` whose link has that file).
public struct SHLAudit: Sendable {
    /// One access to one link.
    public struct Access: Sendable, Equatable {
        public var time: Int64
        public var method: String
        /// `recipient` from the query, decoded; nil when the request had none.
        public var recipient: String?
        public var status: Int
        public var bytes: Int64
    }

    /// The accesses to one link file, oldest first.
    public struct Link: Sendable {
        /// `LogRedaction.fingerprint` of the file name.
        public var fingerprint: String
        /// The record names (`OUT/shl/<name>.txt`) whose link is this file, when a links folder was given.
        public var names: [String]
        public var accesses: [Access]
    }

    /// The path prefix a link file's URL path starts with (the issuer URL's path, `/` when it has none).
    public let pathPrefix: String
    /// File name → record names, from a links folder (`OUT/shl`).
    public let names: [String: [String]]
    /// Most accesses kept; later ones are counted in `notKept`.
    public let maxAccesses: Int

    /// Link file name → accesses, in log order.
    private var byFile: [String: [Access]] = [:]
    /// Lines read, lines not in the common/combined format (or too long), link accesses not kept.
    public private(set) var lines = 0
    public private(set) var unreadable = 0
    public private(set) var notKept = 0
    private var kept = 0

    /// - Parameters:
    ///   - issuer: the site's issuer URL (`iss`): only requests under its path count.
    ///   - names: link file name → record names (`SHLAudit.linkNames(folder:site:)`), or empty.
    ///   - maxAccesses: the most accesses kept in memory (a limit for huge logs).
    public init(issuer: String, names: [String: [String]] = [:], maxAccesses: Int = 1_000_000) {
        var path = issuer
        if let scheme = Substring(path).range(of: "://") { path = String(path[scheme.upperBound...]) }
        path = path.firstIndex(of: "/").map { String(path[$0...]) } ?? "/"
        pathPrefix = path.hasSuffix("/") ? path : path + "/"
        self.names = names
        self.maxAccesses = maxAccesses
    }

    /// The link file a request path names, or nil.
    func linkFile(_ path: String) -> String? {
        guard path.hasPrefix(pathPrefix) else { return nil }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count >= 2, segments[segments.count - 2] == "shl", SHLDestination.isFileName(segments[segments.count - 1])
        else { return nil }
        return String(segments[segments.count - 1])
    }

    /// Reads one log line (without its newline).
    public mutating func add(line: some Collection<UInt8>) {
        lines += 1
        guard let parsed = AccessLogLine.parse(line) else {
            if !line.isEmpty { unreadable += 1 }
            return
        }
        guard let file = linkFile(parsed.path) else { return }
        guard kept < maxAccesses else {
            notKept += 1
            return
        }
        kept += 1
        byFile[file, default: []].append(
            Access(
                time: parsed.time, method: parsed.method, recipient: parsed.parameter("recipient"), status: parsed.status,
                bytes: parsed.bytes))
    }

    /// Reads a log file, plain or gzip (by its first two bytes, 1F 8B), in chunks: any size, memory bounded by
    /// one chunk, one line and the accesses kept.
    /// - Returns: a warning when a gzip file ends inside a member (a file still being written), else nil.
    /// - Throws: `HealthCardError(.io)` when it cannot be read, `.compression` for corrupt gzip data, `.input` for
    ///   gzip data that inflates to more than 1 GiB and 500 times the file's size.
    /// - Parameter minInflateBudget: the least a gzip file may inflate to, in bytes (the budget is this or 500
    ///   times the file's size, whichever is more).
    public mutating func read(file path: String, minInflateBudget: Int = 1 << 30) throws -> String? {
        let gzip = (try FileIO.readPrefix(path, count: 2)) == [0x1F, 0x8B]
        var pending: [UInt8] = []
        var skipping = false
        func take(_ chunk: [UInt8]) {
            var start = 0
            for (index, byte) in chunk.enumerated() where byte == 0x0A {
                if !skipping {
                    pending.append(contentsOf: chunk[start..<index])
                    if pending.last == 0x0D { pending.removeLast() }
                    add(line: pending)
                } else {
                    lines += 1
                    unreadable += 1
                }
                pending.removeAll(keepingCapacity: true)
                skipping = false
                start = index + 1
            }
            if !skipping {
                pending.append(contentsOf: chunk[start...])
                if pending.count > AccessLogLine.maxLineBytes {
                    skipping = true
                    pending.removeAll(keepingCapacity: true)
                }
            }
        }
        var warning: String?
        if gzip {
            let stream = try GzipStream()
            var fed = false
            // A log compresses some 10 to 50 times; far more is a gzip bomb, which would keep the audit busy for
            // hours: stop at 1 GiB or 500 times the file's size, whichever is more.
            let budget = max(minInflateBudget, 500 * (FileIO.size(path) ?? 0))
            var inflated = 0
            try FileIO.forEachChunk(path) { chunk in
                fed = true
                try stream.feed(chunk) { piece in
                    inflated += piece.count
                    guard inflated <= budget else {
                        throw HealthCardError(
                            .input,
                            "\(path) inflates to more than \(InputBudget.describe(bytes: budget)) (over 500 times its size): not an "
                                + "access log (a gzip bomb?); nothing more was read from it")
                    }
                    take(piece)
                }
            }
            if fed && !stream.atMemberEnd { warning = "\(path) ends inside a gzip member (still being written?); read up to there" }
        } else {
            try FileIO.forEachChunk(path) { take($0) }
        }
        if skipping {
            lines += 1
            unreadable += 1
        } else if !pending.isEmpty {
            add(line: pending)
        }
        return warning
    }

    /// The links accessed, each with its accesses oldest first, the links ordered by their first access.
    public var links: [Link] {
        byFile.map { file, accesses in
            Link(
                fingerprint: LogRedaction.fingerprint(file), names: names[file] ?? [],
                accesses: accesses.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
                    .map(\.element))
        }
        .sorted { ($0.accesses.first?.time ?? 0, $0.fingerprint) < ($1.accesses.first?.time ?? 0, $1.fingerprint) }
    }

    /// Link file name → record names, from the link texts `<name>.txt` in `folder` (an `issue` output's `shl/`).
    /// Unreadable texts are skipped; only the URL is read (never kept: the key stays in the file).
    public static func linkNames(folder: String) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for entry in FileIO.list(folder).sorted() where entry.hasSuffix(".txt") {
            let path = folder + "/" + entry
            guard let bytes = try? FileIO.read(path, maxBytes: SHLinkText.maxCharacters + 2),
                let link = try? SHLinkText.parse(String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: "\r\n")),
                let name = link.url.split(separator: "/").last, SHLDestination.isFileName(name)
            else { continue }
            out[String(name), default: []].append(String(entry.dropLast(4)))
        }
        return out
    }
}
