// Runs the SMART Health Link service of HealthCardsServer in process, without a socket: a link store in an
// SQLite file in a temporary folder, a link made for the spec's example 00 card file, and the manifest protocol
// answered by the service's router at a fixed time, as a receiver would use it. Public API only. Exits 0 when the
// manifest names one file by location, that location gives a JWE that the link's key opens to exactly the card
// file's bytes, an unknown link is 404, and the store recorded both accesses.
import HealthCardsCore
import HealthCardsServer
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// The temporary folder this program made, removed at the end whatever the outcome.
var temporary = ""

@MainActor func fail(_ what: String) -> Never {
    print("link-server: \(what)")
    removeTree(temporary)
    exit(1)
}

/// The repository's root: the working folder when it holds Tests/Fixtures, else found from this file's place.
let root: String = {
    if access("Tests/Fixtures", F_OK) == 0 { return "." }
    return "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
}()
/// Removes what this program wrote under its temporary folder, depth first, following no symbolic link.
func removeTree(_ path: String) {
    var info = stat()
    guard !path.isEmpty, lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
        for name in FileIO.list(path) { removeTree(path + "/" + name) }
        rmdir(path)
    } else {
        unlink(path)
    }
}
var template = Array("/tmp/link-server-XXXXXX".utf8CString)
guard let made = mkdtemp(&template) else { fail("cannot make a temporary folder") }
temporary = String(cString: made)
let folder = temporary
defer { removeTree(temporary) }

let now: Int64 = 1_700_000_000  // 2023-11-14, seconds since 1970
do {
    let card = try FileIO.read(root + "/Tests/Fixtures/spec-examples/example-00-e-file.smart-health-card")
    let database = try Database(url: .sqlite(path: folder + "/links.db"), role: .server, create: true, maxConnections: 2, now: now)
    defer { database.close() }
    let store = DatabaseLinkStore(database: database)
    let base = try BaseURL("https://links.example.org/shl")

    // The operator's side: the card is encrypted here with a fresh key; the store gets only the JWE.
    let created = try LinkPublisher(store: store, baseURL: base)
        .create([try LinkContent.read(card, name: "example-00.smart-health-card")], options: .init(), now: now)
    print("link \(linkTag(created.id)) for \(card.count) bytes; flags \(created.link.flag ?? "none")")

    // The server's side, a minute later on a fixed clock: a receiver asks for the manifest, then fetches the file.
    let service = LinkService(configuration: .init(baseURL: base), store: store, clock: FixedWallClock(now + 60), log: MemoryLog())
    let router = Router(routes: service.routes)
    let ask = router.respond(HTTPRequest(method: "POST", path: "/shl/\(created.id)", body: Array(#"{"recipient":"Example Clinic"}"#.utf8)))
    let manifest = try JSONParser.parse(ask.response.body)
    let files = manifest["files"]?.arrayValue ?? []
    print("POST manifest: \(ask.response.status), \(files.count) file(s), \(files.first?["contentType"]?.stringValue ?? "?")")
    guard ask.response.status == 200, files.count == 1, let location = files[0]["location"]?.stringValue,
        location.hasPrefix(base.text + "/file/")
    else { fail("expected a manifest of one file by location") }

    let fetch = router.respond(HTTPRequest(method: "GET", path: "/shl/file/" + location.dropFirst(base.text.count + 6)))
    print("GET location: \(fetch.response.status) \(fetch.response.header("Content-Type") ?? "")")
    guard fetch.response.status == 200, let key = AES256Key.decode(base64url: created.link.key) else { fail("the location did not answer") }
    let opened = try JWE(compact: String(decoding: fetch.response.body, as: UTF8.self)).decrypt(key: key)
    print("the link's key opens the JWE: \(opened.plaintext.count) bytes, the card file: \(opened.plaintext == card)")
    guard opened.plaintext == card else { fail("the file decrypted is not the card file") }

    let unknown = router.respond(HTTPRequest(method: "POST", path: "/shl/" + String(repeating: "A", count: 43), body: Array(#"{"recipient":"x"}"#.utf8)))
    let audit = try store.audit(linkID: created.id)
    print("unknown link: \(unknown.response.status); access record: \(audit.map { "\($0.kind) \($0.outcome) \($0.status)" })")
    guard unknown.response.status == 404, audit.map(\.kind) == ["manifest", "file"], audit.allSatisfy({ $0.status == 200 }) else {
        fail("expected 404 for an unknown link and two accesses recorded")
    }
} catch {
    fail("\(error)")
}
print("link-server: OK")
