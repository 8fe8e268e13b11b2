internal import CPostgres
import HealthCardsCore

#if canImport(Glibc)
    import Glibc
#endif

/// One PostgreSQL connection (`PGconn *`, libpq), owned here and finished in `close`/`deinit`, with the
/// statements it prepared (`PQprepare`, one name per SQL text).
///
/// Parameters and results travel as text (the schema holds integers and text only). A connection that
/// fails at the connection level (SQLSTATE class 08, an administrator shutdown 57P01–57P03, or libpq's
/// `CONNECTION_BAD`) is marked broken and its error is `.unavailable`; the pool drops it and opens a new one
/// on the next request, so a restarted PostgreSQL is picked up again by itself.
final class PostgresConnection: SQLConnection {
    let dialect = SQLDialect.postgresql
    private var conn: OpaquePointer?
    private var prepared: [String: String] = [:]
    private(set) var isBroken = false
    /// `synchronous_commit` outside durable transactions.
    private let fastCommits: Bool

    /// Connects.
    /// - Parameters:
    ///   - url: a `postgresql://` URL (libpq's URI form); a password in it is refused before this (`DatabaseURL`).
    ///   - connectTimeoutSeconds: libpq's `connect_timeout` unless the URL sets one.
    ///   - fastCommits: the session commits with `synchronous_commit = off` (the audit and location records of
    ///     the server's hot path, single statements or transactions: a PostgreSQL crash may lose the last fraction
    ///     of a second of them, never corrupt anything); durable transactions (link changes, wrong-passcode counts)
    ///     set it back on for themselves and wait for the flush.
    /// - Throws: `StoreError(.unavailable)` when the server cannot be reached or refuses the login.
    init(url: String, connectTimeoutSeconds: Int, fastCommits: Bool) throws(StoreError) {
        self.fastCommits = fastCommits
        // Defaults first: with expand_dbname the URL's own values come later and win.
        let keywords = ["connect_timeout", "application_name", "client_encoding", "dbname"]
        let values = [String(connectTimeoutSeconds), "healthcards", "UTF8", url]
        let connection = withCStrings(keywords) { k in
            withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let connection else { throw StoreError(.unavailable, "PostgreSQL: out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.firstLine(PQerrorMessage(connection))
            PQfinish(connection)
            throw StoreError(.unavailable, "cannot connect to PostgreSQL: \(message)")
        }
        conn = connection
        // libpq prints notices and a server's asynchronous messages ("FATAL: terminating connection due to
        // administrator command") on standard error, in the middle of the server's JSON log lines: dropped here
        // (what matters reaches the statement that fails, as its error).
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        do {
            // The server's own records commit without waiting for the flush; durable transactions ask for it.
            try execute("SET client_min_messages TO warning" + (fastCommits ? "; SET synchronous_commit TO off" : ""))
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    func close() {
        if let conn { PQfinish(conn) }
        conn = nil
        prepared.removeAll()
    }

    static func firstLine(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "no detail" }
        let line = String(cString: text).split(separator: "\n").first.map(String.init) ?? ""
        return line.isEmpty ? "no detail" : line
    }

    /// The error of a failed result (or of the connection, with no result), marking the connection broken
    /// when the failure is the connection's.
    private func error(_ result: OpaquePointer?, _ what: String) -> StoreError {
        let state =
            result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) } ?? ""
        let detail = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "M"))) }.map { String(cString: $0) }
        let message = detail ?? Self.firstLine(conn.map { PQerrorMessage($0) })
        let lost = conn.map { PQstatus($0) != CONNECTION_OK } ?? true
        if lost || state.hasPrefix("08") || ["57P01", "57P02", "57P03", "53300"].contains(state) {
            isBroken = true
            return StoreError(.unavailable, "PostgreSQL \(what): \(message)")
        }
        // 40001/40P01: a serialization failure or deadlock; a retry succeeds.
        if state == "40001" || state == "40P01" || state == "55P03" {
            return StoreError(.unavailable, "PostgreSQL \(what): \(message)")
        }
        return StoreError(.failed, "PostgreSQL \(what): \(message)\(state.isEmpty ? "" : " (SQLSTATE \(state))")")
    }

    /// `?` placeholders as `$1`, `$2`, … (the statements hold no `?` in literals).
    static func numbered(_ sql: String) -> String {
        var out = ""
        var n = 0
        for character in sql {
            if character == "?" {
                n += 1
                out += "$\(n)"
            } else {
                out.append(character)
            }
        }
        return out
    }

    private func statementName(_ sql: String, count: Int) throws(StoreError) -> String {
        guard let conn, !isBroken else { throw StoreError(.unavailable, "the PostgreSQL connection is closed") }
        if let name = prepared[sql] { return name }
        let name = "hc\(prepared.count)"
        let result = PQprepare(conn, name, Self.numbered(sql), Int32(count), nil)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw error(result, "cannot prepare a statement")
        }
        prepared[sql] = name
        return name
    }

    func query(_ sql: String, _ parameters: [SQLValue]) throws(StoreError) -> [[SQLValue]] {
        let name = try statementName(sql, count: parameters.count)
        let texts: [String?] = parameters.map {
            switch $0 {
            case .null: return nil
            case .integer(let number): return String(number)
            case .text(let text): return text
            }
        }
        let result = withOptionalCStrings(texts) { values in
            PQexecPrepared(conn, name, Int32(texts.count), values, nil, nil, 0)
        }
        defer { PQclear(result) }
        guard let result else { throw error(nil, "a statement failed") }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else { throw error(result, "a statement failed") }
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        var rows: [[SQLValue]] = []
        rows.reserveCapacity(Int(rowCount))
        for r in 0..<rowCount {
            var row: [SQLValue] = []
            for c in 0..<columnCount {
                if PQgetisnull(result, r, c) == 1 {
                    row.append(.null)
                    continue
                }
                let text = String(cString: PQgetvalue(result, r, c))
                // int2/int4/int8 (OIDs 21, 23, 20) are integers; everything else is read as text.
                switch PQftype(result, c) {
                case 20, 21, 23:
                    guard let number = Int64(text) else {
                        throw StoreError(.failed, "PostgreSQL returned a non-integer")
                    }
                    row.append(.integer(number))
                default: row.append(.text(text))
                }
            }
            rows.append(row)
        }
        return rows
    }

    func execute(_ sql: String) throws(StoreError) {
        guard let conn, !isBroken else { throw StoreError(.unavailable, "the PostgreSQL connection is closed") }
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        guard let result else { throw error(nil, "a statement failed") }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result, "a statement failed") }
    }

    func begin(write: Bool, durable: Bool) throws(StoreError) {
        try execute(fastCommits && durable ? "BEGIN; SET LOCAL synchronous_commit TO on" : "BEGIN")
    }

    func commit() throws(StoreError) { try execute("COMMIT") }

    func rollback() {
        guard let conn, !isBroken else { return }
        PQclear(PQexec(conn, "ROLLBACK"))
    }

    /// libpq's version as major.minor, e.g. "15.18".
    static var libraryVersion: String {
        let version = PQlibVersion()
        return "\(version / 10000).\(version % 10000)"
    }
}

/// Lends `strings` as an array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    withOptionalCStrings(strings.map { Optional($0) }) { body($0) }
}

/// Lends `strings` as an array of C strings, nil as a null pointer (SQL NULL): every string's bytes and its NUL in
/// one buffer (a copy each was a `strdup` and a `free` a parameter: 2 % of a PostgreSQL server's CPU).
private func withOptionalCStrings<R>(_ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    var bytes: [CChar] = []
    bytes.reserveCapacity(strings.reduce(0) { $0 + ($1?.utf8.count ?? 0) + 1 })
    var offsets: [Int?] = []
    offsets.reserveCapacity(strings.count)
    for text in strings {
        guard let text else {
            offsets.append(nil)
            continue
        }
        offsets.append(bytes.count)
        for byte in text.utf8 { bytes.append(CChar(bitPattern: byte)) }
        bytes.append(0)
    }
    return bytes.withUnsafeBufferPointer { buffer in
        let base = buffer.baseAddress
        let pointers: [UnsafePointer<CChar>?] = offsets.map { offset -> UnsafePointer<CChar>? in
            guard let offset, let base else { return nil }
            return base + offset
        }
        return (pointers + [nil]).withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
