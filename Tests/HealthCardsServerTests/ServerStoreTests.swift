import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsServer
import HealthCardsTestSupport

/// The passcode hash (known answers from RFC 7914, a cross-check with Python's hashlib), the schema's
/// migrations, and what the database URL accepts.
@Suite struct ServerStoreTests {
    static func derive(_ passcode: String, _ salt: String, _ function: PasscodeHash.Function) throws -> [UInt8] {
        try Array(passcode.utf8).withUnsafeBytes {
            try PasscodeHash.derive(passcode: $0, salt: Array(salt.utf8), function: function)
        }
    }

    /// RFC 7914 section 12 (scrypt, "password"/"NaCl", N=1024 r=8 p=16) and section 11 (PBKDF2-HMAC-SHA256,
    /// "passwd"/"salt" c=1 and "Password"/"NaCl" c=80000): the first 32 bytes of each 64-byte answer.
    @Test func knownAnswers() throws {
        #expect(
            try Self.derive("password", "NaCl", .scrypt(log2N: 10, r: 8, p: 16))
                == TestSupport.hex("fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"))
        #expect(
            try Self.derive("passwd", "salt", .pbkdf2SHA256(iterations: 1))
                == TestSupport.hex("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"))
        #expect(
            try Self.derive("Password", "NaCl", .pbkdf2SHA256(iterations: 80000))
                == TestSupport.hex("4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"))
    }

    /// A stored hash at the default cost, checked by Python's hashlib from its text alone (function, cost, salt).
    @Test(.enabled(if: TestSupport.python != nil, "no test Python")) func storedFormIsCheckedByHashlib() throws {
        let passcode = "Grüße 1234"
        for function in [PasscodeHash.Function.standard, .pbkdf2SHA256(iterations: 600_000)] {
            let hash = try Array(passcode.utf8).withUnsafeBytes {
                try PasscodeHash.make(passcode: $0, function: function)
            }
            let script = """
                import base64, hashlib, sys
                def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
                name, params, salt, digest = sys.argv[1].split("$")
                p = dict(item.split("=") for item in params.split(","))
                secret = sys.argv[2].encode("utf-8")
                if name == "scrypt":
                    n = 1 << int(p["ln"])
                    out = hashlib.scrypt(secret, salt=b64(salt), n=n, r=int(p["r"]), p=int(p["p"]), maxmem=256 * 1024 * 1024, dklen=32)
                else:
                    out = hashlib.pbkdf2_hmac("sha256", secret, b64(salt), int(p["i"]), 32)
                print("match" if out == b64(digest) else "differ")
                """
            let run = try TestSupport.run(try #require(TestSupport.python), ["-c", script, hash.stored, passcode])
            #expect(run.stdout == "match\n", "\(hash.stored): \(run.stdout) \(run.stderr)")
            #expect(try hash.matches(passcode) && !(try hash.matches("Grüße 1235")) && !(try hash.matches("")))
            #expect(PasscodeHash(stored: hash.stored) == hash)
        }
    }

    @Test func costsOutsideTheLimitsAreRefusedWhereverTheyComeFrom() {
        #expect(PasscodeHash.Function.parse("scrypt") == .standard)
        #expect(PasscodeHash.Function.parse("scrypt:ln=16,r=8,p=1") == .scrypt(log2N: 16, r: 8, p: 1))
        #expect(PasscodeHash.Function.parse("pbkdf2-sha256") == .pbkdf2SHA256(iterations: 600_000))
        for text in [
            "scrypt:ln=30", "scrypt:ln=20,r=32", "pbkdf2-sha256:i=10", "bcrypt", "scrypt:ln=15,ln=16", "scrypt:x=1",
            "scrypt:ln=-1",
        ] {
            #expect(PasscodeHash.Function.parse(text) == nil, "\(text)")
        }
        // A stored hash with a cost over the limits (a hostile row) is not read, so it is never derived.
        let salt = Base64URL.encode([UInt8](repeating: 1, count: 16))
        let digest = Base64URL.encode([UInt8](repeating: 2, count: 32))
        #expect(PasscodeHash(stored: "scrypt$ln=24,r=8,p=1$\(salt)$\(digest)") == nil)
        #expect(PasscodeHash(stored: "scrypt$ln=15,r=8,p=1$\(salt)$\(digest)") != nil)
        #expect(PasscodeHash(stored: "scrypt$ln=15,r=8,p=1$\(salt)$AAAA") == nil)
    }

    /// Every cost `parse` takes is one OpenSSL derives with (a trial's `scrypt:ln=20,r=1` passed the check and then
    /// failed in OpenSSL: RFC 7914 asks N < 2^(16·r)); a refused one says why (`problem(of:)`, which `--kdf` shows).
    @Test func everyCostTakenIsOneOpenSSLDerives() throws {
        for r in 1...2 {
            for log2N in 10...17 {
                let text = "scrypt:ln=\(log2N),r=\(r),p=1"
                guard let function = PasscodeHash.Function.parse(text) else {
                    #expect(log2N >= 16 * r, "\(text) refused: \(PasscodeHash.Function.problem(of: text) ?? "")")
                    #expect(PasscodeHash.Function.problem(of: text)?.contains("N < 2^(16·r)") == true)
                    continue
                }
                #expect(try Self.derive("pin", "salt-of-16-bytes", function).count == PasscodeHash.hashByteCount, "\(text)")
            }
        }
        #expect(PasscodeHash.Function.problem(of: "scrypt:ln=18")?.contains("over 262144 KiB (256 MiB)") == true)
        #expect(PasscodeHash.Function.problem(of: "bcrypt") == nil)
    }

    /// A database made by the first schema step (holding a link and an access) is upgraded when opened, its rows
    /// kept; one whose schema is newer than this program is refused, and so are hc_ tables without a version.
    @Test func oldSchemasAreUpgradedNewerOnesRefused() throws {
        let dir = try TestSupport.tempDir("schema")
        let path = dir.appendingPathComponent("old.db").path
        let old = try SQLiteConnection(path: path, create: true, busyTimeoutMilliseconds: 1000, fullSync: true)
        try Schema.migrate(old, now: 1, upTo: 1)
        #expect(try Schema.currentVersion(old) == 1 && !(try Schema.tableExists("hc_tickets", old)))
        _ = try old.query(
            "INSERT INTO hc_links (id, flags, created_at, updated_at, active) VALUES (?, '', 1, 1, 1)",
            [.text(String(repeating: "B", count: 43))])
        _ = try old.query(
            "INSERT INTO hc_audit (at, link_id, kind, outcome, status) VALUES (1, ?, 'manifest', 'served', 200)",
            [.text(String(repeating: "B", count: 43))])
        old.close()
        let upgraded = try Database(url: .sqlite(path: path), role: .server, create: false, now: 2)
        let store = DatabaseLinkStore(database: upgraded)
        #expect(try store.link(id: String(repeating: "B", count: 43), withFiles: true)?.flags == "")
        #expect(try store.audit(linkID: nil).count == 1)
        let version = try upgraded.withConnection { try Schema.currentVersion($0) }
        #expect(version == Schema.version)
        _ = try upgraded.withConnection {
            try $0.query(
                "INSERT INTO hc_schema_version (version, applied_at) VALUES (?, 3)",
                [.integer(Int64(Schema.version + 1))])
        }
        upgraded.close()
        #expect(throws: HealthCardError.self) {
            do {
                _ = try Database(url: .sqlite(path: path), role: .server, create: false, now: 3)
            } catch let error as HealthCardError {
                #expect(error.code == .storeSchema && error.message.contains("newer than this program's"), "\(error)")
                throw error
            }
        }
        // Our tables without a version table: not made by this program.
        let foreign = dir.appendingPathComponent("foreign.db").path
        let connection = try SQLiteConnection(
            path: foreign, create: true, busyTimeoutMilliseconds: 1000, fullSync: true)
        try connection.execute("CREATE TABLE hc_links (id TEXT)")
        connection.close()
        #expect(throws: HealthCardError.self) {
            _ = try Database(url: .sqlite(path: foreign), role: .server, create: false, now: 3)
        }
        // A path that is not a regular file, and a missing one when not asked to create.
        #expect(throws: HealthCardError.self) {
            _ = try Database(url: .sqlite(path: dir.path), role: .server, create: true, now: 3)
        }
        #expect(throws: HealthCardError.self) {
            _ = try Database(
                url: .sqlite(path: dir.appendingPathComponent("none.db").path), role: .server, create: false, now: 3)
        }
        // A new database file is private.
        let fresh = dir.appendingPathComponent("fresh.db").path
        _ = try Database(url: .sqlite(path: fresh), role: .server, create: true, now: 3)
        #expect(FileIO.mode(fresh) == 0o600)
    }

    @Test func databaseURLs() throws {
        #expect(try DatabaseURL("sqlite:/var/lib/x.db") == .sqlite(path: "/var/lib/x.db"))
        #expect(try DatabaseURL("links.db") == .sqlite(path: "links.db"))
        // Schemes are case-insensitive: `SQLITE:` is SQLite's scheme, not part of a file name (the trial saw
        // `sqlite:SQLITE:links.db` echoed), and PostgreSQL's is handed to libpq lowercase.
        #expect(try DatabaseURL("SQLITE:/var/lib/x.db") == .sqlite(path: "/var/lib/x.db"))
        #expect(try DatabaseURL("SQLite:links.db").description == "sqlite:links.db")
        #expect(try DatabaseURL("PostgreSQL://app@db/links") == .postgresql(url: "postgresql://app@db/links"))
        #expect(throws: HealthCardError.self) { _ = try DatabaseURL("POSTGRES://app:secret@db/links") }
        #expect(
            try DatabaseURL("postgresql://app@db.example.org/links")
                == .postgresql(url: "postgresql://app@db.example.org/links"))
        #expect(
            try DatabaseURL("postgresql://app@db.example.org:5432/links?sslmode=require").description
                == "postgresql://db.example.org:5432/links")
        // Where the database is stays (a socket folder); a key file's path and the user do not.
        #expect(
            try DatabaseURL("postgresql://app@/links?sslkey=/home/app/k.pem&host=/run/postgresql&port=5433&user=x")
                .description == "postgresql:///links?host=/run/postgresql&port=5433")
        for refused in [
            "postgresql://app:secret@db/links", "postgres://db/links?password=secret", "mysql://db/x", "sqlite:",
            // libpq decodes a parameter's name (a trial logged in with these); the client key's password too.
            "postgresql:///links?pass%77ord=secret", "postgresql:///links?%70ASSWORD=secret",
            "postgresql:///links?host=/run/pg&sslpassword=secret",
        ] {
            #expect(throws: HealthCardError.self, "\(refused)") { _ = try DatabaseURL(refused) }
        }
        #expect(try BaseURL("https://links.example.org/shl/").text == "https://links.example.org/shl")
        #expect(try BaseURL("https://links.example.org").pathSegments == [])
        for refused in [
            "http://links.example.org/shl", "https://links.example.org/a/../shl", "https://links.example.org/s%68l",
            "https://links.example.org/shl?x=1", "https://user@links.example.org/shl",
            "https://links.example.org/" + String(repeating: "a", count: 70),
        ] {
            #expect(throws: HealthCardError.self, "\(refused)") { _ = try BaseURL(refused) }
        }
    }
}
