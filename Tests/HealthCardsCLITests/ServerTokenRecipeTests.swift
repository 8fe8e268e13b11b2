import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// docs/server.md gives an operator a recipe to mint a test access token before the clinic's authorization server
/// is wired up (before, they had to write a program). The lines between `<!-- token-recipe -->` markers are run
/// exactly as written, by bash, with the `healthcards` under test first on PATH; the token they write is then sent
/// to a real `serve` (started with the documented `--auth-issuer`, `--auth-jwks`, `--audience`) over a socket, and
/// it is served P-1001's card; the same token altered is refused (401), and it opens no other patient (403).
@Suite(.serialized) struct ServerTokenRecipeTests {
    /// The shell lines of the documented recipe.
    static func recipe() throws -> String {
        let doc = try String(
            contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("docs/server.md"), encoding: .utf8)
        let start = try #require(doc.range(of: "<!-- token-recipe -->\n```sh\n"))
        let end = try #require(doc.range(of: "```\n<!-- /token-recipe -->", range: start.upperBound..<doc.endIndex))
        return String(doc[start.upperBound..<end.lowerBound])
    }

    @Test(.enabled(
        if: FileManager.default.isExecutableFile(atPath: HealthCardsIssueTests.openssl), "the openssl program is not installed"))
    func theDocumentedTokenRecipeMintsATokenTheServerAccepts() throws {
        let batch = try HealthCardsIssueTests.batch()
        let dir = batch.dir.appendingPathComponent("recipe")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = TestSupport.binDir.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let run = try TestSupport.run(
            "/bin/bash", ["-e", "-o", "pipefail", "-c", try Self.recipe()], cwd: dir,
            environment: ProcessInfo.processInfo.environment.merging(["PATH": path]) { $1 })
        try #require(run.status == 0, "\(run.stderr)")
        let token = try String(contentsOf: dir.appendingPathComponent("token.txt"), encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        #expect(token.split(separator: ".").count == 3 && Base64URL.decode(String(token.split(separator: ".")[2]))?.count == 64)

        let db = try ServerTestSupport.database(.sqlite, in: batch.dir)
        let imported = try TestSupport.cli(["cards", "import", "--db", db, "--site", batch.site.path, batch.vax.path])
        #expect(imported.status == 0, "\(imported.stderr)")
        let server = try ServerProcess(
            db: db,
            ["--auth-issuer", "https://auth.example.org", "--auth-jwks", dir.appendingPathComponent("auth-jwks.json").path,
             "--audience", "https://links.example.org/fhir"],
            in: batch.dir)
        defer { server.stop() }
        func ask(_ patient: String, token: String) throws -> HealthCardsIssueTests.Answer {
            try HealthCardsIssueTests.http(
                "POST", port: server.port, "/fhir/Patient/\(patient)/$health-cards-issue",
                body: HealthCardsIssueTests.parameters([("credentialType", "valueUri", "Immunization")]),
                headers: ["Content-Type": "application/fhir+json", "Authorization": "Bearer " + token])
        }
        let served = try ask("P-1001", token: token)
        #expect(served.status == 200, "\(String(decoding: served.body, as: UTF8.self))")
        #expect(HealthCardsIssueTests.credentials(served).count == 1)
        var altered = Array(token.utf8)
        altered[altered.count - 5] = altered[altered.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(try ask("P-1001", token: String(decoding: altered, as: UTF8.self)).status == 401)
        #expect(try ask("P-1004", token: token).status == 403)
    }
}
