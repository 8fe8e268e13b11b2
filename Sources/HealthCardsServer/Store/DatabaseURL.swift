import HealthCardsCore

/// Where the link store lives: `sqlite:PATH` (or a plain path: the embedded default, nothing to install) or
/// `postgresql://…` / `postgres://…` (libpq's URI form, for several server instances sharing one database).
///
/// A PostgreSQL password is never taken from the URL: a URL is given on a command line, where every user of
/// the machine can read it (`ps`, `/proc/PID/cmdline`). libpq reads it from a password file instead
/// (`~/.pgpass`, or the file `PGPASSFILE` or the URL's `passfile=` names), or the login needs none (peer or
/// certificate authentication).
public enum DatabaseURL: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgresql(url: String)

    /// Parses `text`.
    /// - Throws: `HealthCardError(.configuration)` for an empty path, another scheme, or a password in a PostgreSQL URL
    ///   (in its user part, or a `password` or `sslpassword` parameter, percent-escaped or not).
    public init(_ given: String) throws(HealthCardError) {
        // A URL's scheme is case-insensitive (RFC 3986 §3.1): `SQLITE:` and `PostgreSQL://` are these schemes,
        // written lowercase for libpq (which reads only lowercase), never a file named `SQLITE:…`.
        var text = given
        for scheme in ["postgresql://", "postgres://", "sqlite:"] where given.lowercased().hasPrefix(scheme) {
            text = scheme + given.dropFirst(scheme.count)
            break
        }
        if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            let rest = text.drop { $0 != "/" }.dropFirst(2)
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") {
                throw HealthCardError(
                    .configuration,
                    "the PostgreSQL URL holds a password: a command line can be read by every user of this machine. "
                        + "Put the password in a password file (~/.pgpass, or the file PGPASSFILE names, mode 0600) and "
                        + "leave it out of the URL")
            }
            let query = text.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
            // libpq decodes percent-escapes in a parameter's name too (`pass%77ord=` is `password=`), and
            // `sslpassword` unlocks the client key: both are secrets on a command line.
            // (A name with a malformed escape is checked as written: libpq refuses the URL.)
            let names = query.split(separator: "&").map { parameter in
                let name = parameter.prefix { $0 != "=" }
                return (PercentEncoding.decoded(name) ?? String(name)).lowercased()
            }
            if let name = names.first(where: { $0 == "password" || $0 == "sslpassword" }) {
                throw HealthCardError(
                    .configuration,
                    "the PostgreSQL URL holds a \(name) parameter: a command line can be read by every user of this "
                        + "machine. Put the password in a password file (~/.pgpass or PGPASSFILE, mode 0600) instead")
            }
            self = .postgresql(url: text)
            return
        }
        var path = Substring(text)
        if path.hasPrefix("sqlite:") {
            path = path.dropFirst("sqlite:".count)
            if path.hasPrefix("//") { path = path.dropFirst(2) }
        } else if text.contains("://") {
            throw HealthCardError(
                .configuration,
                "the database \(Quote.text(text)) is neither sqlite:PATH nor a postgresql:// URL")
        }
        guard !path.isEmpty else {
            throw HealthCardError(
                .configuration,
                "the database \(Quote.text(text)) names no file; e.g. sqlite:/var/lib/healthcards/links.db")
        }
        self = .sqlite(path: String(path))
    }

    public var dialect: SQLDialect {
        switch self {
        case .sqlite: return .sqlite
        case .postgresql: return .postgresql
        }
    }

    /// For logs and messages: the SQLite path, or the PostgreSQL URL without its user and with only the
    /// parameters that say where the database is (`host`, `hostaddr`, `port`, `dbname`: a socket folder such as
    /// `postgresql:///links?host=/run/postgresql` would otherwise read as the default server); never a credential
    /// or a key file's path.
    public var description: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgresql(let url):
            let scheme = url.prefix { $0 != ":" }
            var rest = url.drop { $0 != "/" }.dropFirst(2)
            let query = rest.drop { $0 != "?" }.dropFirst()
            rest = rest.prefix { $0 != "?" }
            if let at = rest.prefix(while: { $0 != "/" }).lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            let kept = query.split(separator: "&").filter { parameter in
                let name = parameter.prefix { $0 != "=" }.lowercased()
                return ["host", "hostaddr", "port", "dbname"].contains(name)
            }
            return "\(scheme)://\(rest)" + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
        }
    }
}
