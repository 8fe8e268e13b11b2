import Foundation
import Testing

import HealthCardsCore
import HealthCardsFixtures
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsPrint
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsVerify
import HealthCardsTestSupport

/// The hand-written RFC 6979 signer is not constant-time: it signs only with keys whose private half is public
/// (issue 22). `issue --deterministic` refuses a real key; `fixtures` keeps working with any key (OpenSSL's random
/// nonces for a key that is not a public test key); an interrupted `fixtures` leaves no temporary folder.
@Suite struct PublicTestKeyTests {
    static let issuer = "https://issuer.example.org"

    /// The keys recognised as public are the ones whose private halves are published: the demo key file, the spec's
    /// example keys (PKCS#8 files derived from the spec's JWKS), and the RFC 6979 vector key; `keygen`'s are not.
    @Test func publicTestKeysAreTheOnesWhosePrivateHalvesArePublished() throws {
        let dir = try TestSupport.tempDir("public-test-keys")
        let demo = try KeySource.load(try TestSupport.demoKey(in: dir), requirePrivate: true)
        #expect(try PublicTestKey(demo).origin.contains("demo key"))
        #expect(try PublicTestKey(try TestSupport.specKey()).origin.contains("spec"))
        #expect(try PublicTestKey(try RFC6979Tests.vectorKey()).origin.contains("RFC 6979"))
        let own = try SiteTestSupport.keygen("own.pem", in: dir)
        #expect {
            _ = try PublicTestKey(try KeySource.load(own.path, requirePrivate: true))
        } throws: { error in
            "\(error)".contains("is not a public test key") && "\(error)".contains("not constant-time")
        }
    }

    /// `issue --deterministic` with a key of one's own is refused before anything is written; with the demo key it
    /// is reproducible (FixturesTests.issueDeterministicOption).
    @Test func issueDeterministicRefusesARealKey() throws {
        let dir = try TestSupport.tempDir("deterministic-real")
        let own = try SiteTestSupport.keygen("own.pem", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", own.path, "--deterministic", "--out", out.path, "--template",
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.json").path,
            SiteTestSupport.templates.appendingPathComponent("covid19-vaccination.sample.csv").path,
        ])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("key \(own.kid) is not a public test key"), "\(run.stderr)")
        #expect(run.stderr.contains("without asking for deterministic signatures"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    /// `fixtures` with the issuer's own key: every manifest verdict still holds (verify reaches every code), and the
    /// signatures come from OpenSSL's random nonces: two runs give the same files, with other signatures.
    @Test func fixturesWithAnOwnKeyKeepEveryVerdict() throws {
        let dir = try TestSupport.tempDir("fixtures-own-key")
        let own = try SiteTestSupport.keygen("own.pem", in: dir)
        func make(_ name: String) throws -> URL {
            let out = dir.appendingPathComponent(name)
            let run = try TestSupport.cli([
                "fixtures", "--issuer", Self.issuer, "--key", own.path, "--out", out.path, "--now",
                String(FixturesTests.now),
            ])
            #expect(run.status == 0, "\(run.stderr)")
            return out
        }
        let a = try make("a")
        let b = try make("b")
        let manifest = try FixturesTests.manifest(a)
        #expect(manifest.kid == own.kid)
        for entry in manifest.entries {
            let verifier = try FileVerifier(
                keySets: entry.keySets.map { a.appendingPathComponent($0).path }, now: manifest.now)
            let findings = try verifier.verify(entry.files.map { a.appendingPathComponent($0).path }).flatMap(
                \.findings)
            #expect(Set(findings.filter(\.isError).map(\.code)) == Set(entry.errors), "\(entry.name): \(findings)")
            #expect(
                Set(findings.filter { !$0.isError }.map(\.code)) == Set(entry.warnings), "\(entry.name): \(findings)")
        }
        let treeA = try FixturesTests.tree(a)
        let treeB = try FixturesTests.tree(b)
        #expect(treeA.keys.sorted() == treeB.keys.sorted())
        #expect(treeA["valid/covid19-1-dose.jws"] != nil)
        #expect(
            treeA["valid/covid19-1-dose.jws"] != treeB["valid/covid19-1-dose.jws"],
            "the own key signed deterministically")
    }

    /// Without `--key`, the issuer key is derived from the seed and the issuer (a public test key): the catalogue of a
    /// real issuer URL is the same bytes on every run, and its manifest names the derived key.
    @Test func fixturesWithoutAKeyAreReproducibleForAnyIssuer() throws {
        let dir = try TestSupport.tempDir("fixtures-derived")
        func make(_ name: String) throws -> URL {
            let out = dir.appendingPathComponent(name)
            let run = try TestSupport.cli([
                "fixtures", "--issuer", "https://issuer.myclinic.org", "--out", out.path, "--now",
                String(FixturesTests.now),
            ])
            #expect(run.status == 0, "\(run.stderr)")
            return out
        }
        let a = try FixturesTests.tree(try make("a"))
        let b = try FixturesTests.tree(try make("b"))
        #expect(!a.isEmpty && a == b)
        let manifest = try FixturesTests.manifest(dir.appendingPathComponent("a"))
        let derived = try FixtureCatalogue.Options.derived(issuer: "https://issuer.myclinic.org", now: 0, seed: 1)
        #expect(manifest.kid == derived.key.publicKey.kid && manifest.issuer == "https://issuer.myclinic.org")
    }

    /// SIGINT while `fixtures` builds: exit 130, no catalogue and no temporary folder; a folder a killed run left
    /// (a pid no longer running) is removed by the next run, one of a live process kept.
    @Test func anInterruptedFixturesRunLeavesNoTemporaryFolder() throws {
        let dir = try TestSupport.tempDir("fixtures-stop")
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("catalogue")
        let (process, _, errFile) = try TestSupport.start(
            ["fixtures", "--issuer", Self.issuer, "--key", key, "--out", out.path], log: "fixtures", in: dir)
        func temporaries() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter {
                $0.contains(".fixtures-")
            }
        }
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && temporaries().isEmpty && Date() < deadline { usleep(1000) }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        let stderr = String(decoding: try Data(contentsOf: errFile), as: UTF8.self)
        // Caught while it builds the catalogue in memory (seconds, after its temporary folder is made).
        #expect(process.terminationStatus == 130, "\(stderr)")
        #expect(stderr.contains("stopped by signal 2: no catalogue was written"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
        #expect(temporaries().isEmpty, "\(temporaries())")

        // Leftovers: a dead pid's folder goes, a live one's (this test runner's) stays.
        let dead = dir.appendingPathComponent(".catalogue.fixtures-new-999999999")
        let live = dir.appendingPathComponent(".catalogue.fixtures-new-\(getpid())")
        for folder in [dead, live] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let run = try TestSupport.cli(["fixtures", "--issuer", Self.issuer, "--key", key, "--out", out.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dead.path))
        #expect(FileManager.default.fileExists(atPath: live.path))
        #expect(FileManager.default.fileExists(atPath: out.path + "/manifest.json"))
    }
}
