import Foundation
import Testing

import HealthCardsCore
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsServer
import HealthCardsTestSupport

/// `healthcards link …` through the real CLI: what it writes, and what it refuses before it writes anything.
@Suite struct LinkCommandTests {
    static let base = "https://links.example.org/shl"

    static func links(_ db: String) throws -> [JSONValue] {
        let run = try TestSupport.cli(["link", "list", "--db", db, "--json"])
        return try run.stdout.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
    }

    @Test func createWritesAPrivateLinkAndItsQR() throws {
        let dir = try TestSupport.tempDir("link-create")
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let out = dir.appendingPathComponent("link.txt").path
        let qr = dir.appendingPathComponent("link.png").path
        let run = try TestSupport.cli([
            "link", "create", "--db", db, "--base-url", Self.base, "--label", "Immunizations", "--viewer",
            "https://viewer.example.org/#", "--long-term", "--out", out, "--qr", qr, ServerTestSupport.card,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stdout.contains("shlink:/"), "with --out the link is not printed")
        #expect(FileIO.mode(out) == 0o600 && FileIO.mode(qr) == 0o600)
        #expect(FileIO.mode(String(db.dropFirst(7))) == 0o600)
        let text = try VerifyFixtures.text(URL(fileURLWithPath: out)).trimmingCharacters(in: .newlines)
        #expect(text.hasPrefix("https://viewer.example.org/#shlink:/"))
        let link = try SHLinkText.parse(text)
        #expect(link.flag == "L" && link.label == "Immunizations" && link.url.hasPrefix(Self.base + "/"))
        #expect(AES256Key.decode(base64url: link.key) != nil)
        let symbols = try SHCQRCodeReader.read(png: try VerifyFixtures.bytes(URL(fileURLWithPath: qr)))
        #expect(symbols.map(\.text) == [text] && symbols.first?.errorCorrection == .M)
        // The summary names the link's id, never its key.
        #expect(run.stderr.contains(String(link.url.split(separator: "/").last!)) && !run.stderr.contains(link.key))
        // Without --out the link goes to standard output; a passcode from standard input.
        let piped = try TestSupport.run(
            "/bin/sh",
            [
                "-c",
                "printf 'pin-1234\\n' | '\(TestSupport.healthcards)' link create --db '\(db)' --base-url \(Self.base) "
                    + "--passcode-file - --kdf pbkdf2-sha256:i=1000 --max-attempts 4 '\(ServerTestSupport.bundle)'",
            ])
        #expect(piped.status == 0 && piped.stdout.hasPrefix("shlink:/"), "\(piped.stderr)")
        #expect(piped.stderr.contains("passcode hashed with PBKDF2-HMAC-SHA256 1000 iterations in "), "\(piped.stderr)")
        let listed = try Self.links(db)
        #expect(listed.count == 2)
        let guarded = try #require(listed.first { $0["flag"] == "P" })
        #expect(int(guarded["remainingAttempts"]) == 4 && guarded["logTag"]?.stringValue?.count == 12)
        let list = try TestSupport.cli(["link", "list", "--db", db])
        #expect(!list.stdout.contains(link.key) && list.stdout.contains("Immunizations"))
    }

    /// With --jwks, a card altered after signing (its family name changed) gets no link: SIG_INVALID is named and
    /// nothing is stored; the card as signed gets its link. Before, any well-formed card file got a link.
    @Test func createWithKeysRefusesAnAlteredCard() throws {
        let dir = try TestSupport.tempDir("link-jwks")
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let file = try #require(try JSONParser.parse(try VerifyFixtures.bytes(URL(fileURLWithPath: ServerTestSupport.card))).objectValue)
        let parts = try #require(file["verifiableCredential"]?.arrayValue?.first?.stringValue).split(separator: ".").map(String.init)
        let payload = String(decoding: try RawInflate.inflate(try #require(Base64URL.decode(parts[1]))), as: UTF8.self)
        #expect(payload.contains("\"family\":\""))
        let altered = payload.replacingOccurrences(of: "\"family\":\"", with: "\"family\":\"X")
        let forged = parts[0] + "." + Base64URL.encode(try RawDeflater().deflate(Array(altered.utf8))) + "." + parts[2]
        let card = try TestSupport.write(
            JSONWriter.minifiedString(.object(["verifiableCredential": .array([.string(forged)])])), to: "forged.smart-health-card",
            in: dir)
        let refused = try TestSupport.cli(["link", "create", "--db", db, "--base-url", Self.base, "--jwks", ServerTestSupport.specJWKS, card])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("\(card): ") && refused.stderr.contains("SIG_INVALID") && refused.stderr.contains("No link was made"),
                "\(refused.stderr)")
        #expect(!refused.stdout.contains("shlink:/"))
        let made = try TestSupport.cli(
            ["link", "create", "--db", db, "--base-url", Self.base, "--jwks", ServerTestSupport.specJWKS, ServerTestSupport.card])
        #expect(made.status == 0 && made.stdout.hasPrefix("shlink:/"), "\(made.stderr)")
        #expect(try Self.links(db).count == 1)
        // Without --jwks the signature is not checked, and the warning says so.
        let unchecked = try TestSupport.cli(["link", "create", "--db", db, "--base-url", Self.base, ServerTestSupport.card])
        #expect(unchecked.status == 0 && unchecked.stderr.contains("warning: the cards' signatures are not checked"), "\(unchecked.stderr)")
    }

    @Test func refusedBeforeAnythingIsWritten() throws {
        let dir = try TestSupport.tempDir("link-refuse")
        let db = "sqlite:" + dir.appendingPathComponent("links.db").path
        let open = try TestSupport.write("pin\n", to: "open-passcode", in: dir)
        chmod(open, 0o644)
        let secret = try ServerTestSupport.passcodeFile("pin", in: dir)
        let notHealthData = try TestSupport.write(#"{"hello":"world"}"#, to: "other.json", in: dir)
        let empty = try ServerTestSupport.passcodeFile("", in: dir, name: "empty")
        let cases: [(arguments: [String], says: String)] = [
            (["--passcode-file", open, ServerTestSupport.card], "can be read by group or others"),
            (["--passcode-file", empty, ServerTestSupport.card], "the passcode is empty"),
            (["--direct", "--passcode-file", secret, ServerTestSupport.card], "do not go together"),
            (["--direct", ServerTestSupport.card, ServerTestSupport.bundle], "one FILE"),
            (["--max-attempts", "3", ServerTestSupport.card], "is for a passcode"),
            (["--passcode-file", secret, "--max-attempts", "0", ServerTestSupport.card], "from 1 to 1000"),
            (["--passcode-file", secret, "--kdf", "scrypt:ln=30", ServerTestSupport.card], "scrypt log2(N) 30 is outside 10...20"),
            (["--exp", "1000", ServerTestSupport.card], "not in the future"),
            (["--label", String(repeating: "x", count: 81), ServerTestSupport.card], "at most 80"),
            ([notHealthData], "neither a SMART Health Card file"),
            ([], "needs at least one FILE"),
        ]
        for (arguments, says) in cases {
            let run = try TestSupport.cli(["link", "create", "--db", db, "--base-url", Self.base] + arguments)
            #expect(run.status == 2 && run.stderr.contains(says), "\(arguments): \(run.stderr)")
        }
        // A password in a PostgreSQL URL is refused before any connection.
        let password = try TestSupport.cli([
            "link", "list", "--db", "postgresql://app:hunter2@127.0.0.1:1/links",
        ])
        #expect(password.status == 2 && password.stderr.contains("~/.pgpass") && !password.stderr.contains("hunter2"))
        // Nothing was stored by the refused runs; then a database made for one base URL refuses another.
        try ServerTestSupport.link("create", db: db, base: Self.base, [ServerTestSupport.card])
        #expect(try Self.links(db).count == 1)
        let other = try TestSupport.cli([
            "link", "create", "--db", db, "--base-url", "https://other.example.org/shl", ServerTestSupport.card,
        ])
        #expect(other.status == 2 && other.stderr.contains("served at \(Self.base)"), "\(other.stderr)")
        let missing = try TestSupport.cli([
            "link", "list", "--db", "sqlite:" + dir.appendingPathComponent("none.db").path,
        ])
        #expect(missing.status == 2 && missing.stderr.contains("there is no SQLite database"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("none.db").path))
        let unknown = try TestSupport.cli(["link", "deactivate", "--db", db, "--id", String(repeating: "Z", count: 43)])
        #expect(unknown.status == 1)
        #expect(try TestSupport.cli(["link", "deactivate", "--db", db, "--id", "short"]).status == 2)
        #expect(try TestSupport.cli(["link", "frobnicate"]).status == 2)
    }

    /// Recipients are shown as given but with control characters escaped (a receiver chose them).
    @Test func auditShowsRecipientsSafely() throws {
        let dir = try TestSupport.tempDir("link-audit")
        let path = dir.appendingPathComponent("links.db").path
        let id = String(repeating: "C", count: 43)
        let database = try Database(url: .sqlite(path: path), role: .operatorCommand, create: true, now: 1)
        let store = DatabaseLinkStore(database: database)
        try store.create(StoredLink(id: id, flags: "", createdAt: 1))
        try store.record(
            AuditEntry(
                at: 1_800_000_000, linkID: id, kind: "manifest", recipient: "Dr. \u{1B}[31mRed", outcome: "served",
                status: 200))
        database.close()
        let run = try TestSupport.cli(["link", "audit", "--db", "sqlite:" + path, "--id", id])
        #expect(run.status == 0)
        #expect(!run.stdout.contains("\u{1B}") && run.stdout.contains("Dr. "), "\(run.stdout)")
        #expect(run.stdout.contains("2027-01-15 08:00:00 UTC") && run.stdout.contains("served"))
        let json = try TestSupport.cli(["link", "audit", "--db", "sqlite:" + path, "--json"])
        let entry = try JSONParser.parse(Array(json.stdout.utf8))
        #expect(entry["recipient"] == "Dr. \u{1B}[31mRed" && entry["time"] == "2027-01-15T08:00:00Z")
    }

    /// A sealed location's fetch is listed with the recipient of the manifest of the same link and grant; another
    /// link's manifest with the same grant does not lend it its recipient; a fetch whose manifest's record is gone
    /// says so (not "none given": one was). `--json` carries the grant.
    @Test func auditListsFetchesWithTheirManifestsRecipient() throws {
        let dir = try TestSupport.tempDir("link-audit-grant")
        let path = dir.appendingPathComponent("links.db").path
        let (a, b) = (String(repeating: "A", count: 43), String(repeating: "B", count: 43))
        let database = try Database(url: .sqlite(path: path), role: .operatorCommand, create: true, now: 1)
        let store = DatabaseLinkStore(database: database)
        try store.create(StoredLink(id: a, flags: "", createdAt: 1))
        try store.create(StoredLink(id: b, flags: "", createdAt: 1))
        func record(_ link: String, _ kind: String, _ recipient: String?, _ grant: String) throws {
            try store.record(
                AuditEntry(
                    at: 1_800_000_000, linkID: link, kind: kind, recipient: recipient, outcome: "served", status: 200,
                    grant: grant))
        }
        try record(a, "manifest", "Clinic A", "g1")
        try record(b, "manifest", "Clinic B", "g2")
        try record(a, "file", nil, "g1")
        try record(b, "file", nil, "g1")
        #expect(try store.audit(linkID: nil).map(\.recipient) == ["Clinic A", "Clinic B", "Clinic A", nil])
        database.close()
        let run = try TestSupport.cli(["link", "audit", "--db", "sqlite:" + path, "--id", b])
        #expect(run.status == 0)
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasSuffix("'Clinic B'"), "\(run.stdout)")
        #expect(lines.last?.hasSuffix("(no record of its manifest: pruned, lost in a crash, or the location was not made by this server)") == true)
        let json = try TestSupport.cli(["link", "audit", "--db", "sqlite:" + path, "--id", a, "--json"])
        let entries = try json.stdout.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        #expect(entries.map { $0["grant"] } == ["g1", "g1"] && entries.last?["recipient"] == "Clinic A")
    }
}
