import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
@testable import HealthCardsQR
@testable import HealthCardsQRReading
@testable import HealthCardsPrint
@testable import HealthCardsIssuing
@testable import HealthCardsSite
@testable import HealthCardsFixtures
import HealthCardsTestSupport

/// `healthcards fixtures`: the catalogue is judged three ways (`verify` reaches every manifest verdict and
/// code, the independent checker agrees where it can judge, two runs are byte-identical), its pipeline is
/// the one `issue` runs, and it covers every kind issue #14 lists.
@Suite struct FixturesTests {
    static let issuer = "https://issuer.example.org"
    /// A fixed time in the past, so `issue` (which judges dates at the real time) accepts the same Bundles.
    static let now: Int64 = 1_750_000_000

    /// One catalogue made through the command line, shared by the tests that only read it.
    static let catalogue: Result<URL, Error> = Result { try make(seed: 1) }

    static func make(seed: UInt64, into name: String = "fixtures") throws -> URL {
        let dir = try TestSupport.tempDir(name)
        let key = try TestSupport.demoKey(in: dir)
        let out = dir.appendingPathComponent("catalogue")
        let run = try TestSupport.cli([
            "fixtures", "--issuer", issuer, "--key", key, "--out", out.path,
            "--now", String(now), "--seed", String(seed),
        ])
        guard run.status == 0 else { throw HealthCardError(.io, "fixtures failed (\(run.status)): \(run.stderr)") }
        return out
    }

    static func manifest(_ dir: URL) throws -> FixtureManifest {
        try FixtureManifest(bytes: try VerifyFixtures.bytes(dir.appendingPathComponent("manifest.json")))
    }

    /// Every file under `dir` (relative path → bytes), links not followed.
    static func tree(_ dir: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        let base = dir.path + "/"
        for case let url as URL in FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)! {
            guard !FileIO.isDirectory(url.path) else { continue }
            out[String(url.path.dropFirst(base.count))] = try VerifyFixtures.bytes(url)
        }
        return out
    }

    /// The manifest separates what a verifier must reject (a broken signature, a wrong key, a bad chunk set)
    /// from an issuer's non-conformance a verifier may accept (a Bundle not minimized, `SHC:/`): issue 21.
    @Test func conformanceSaysWhatAVerifierMustReject() throws {
        let manifest = try Self.manifest(try Self.catalogue.get())
        let byName = Dictionary(manifest.entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for entry in manifest.entries {
            let inValid = entry.files.allSatisfy { $0.hasPrefix("valid/") }
            #expect((entry.conformance == .valid) == inValid, "\(entry.name): \(entry.conformance)")
            // Every verifier-must-reject file is an error in verify; an issuer's non-conformance says why a verifier
            // may accept it.
            if entry.conformance == .verifierMustReject { #expect(entry.invalid, "\(entry.name)") }
            if entry.conformance == .issuerNonconformance { #expect(entry.conformanceNote?.isEmpty == false, "\(entry.name)") }
        }
        for name in ["bad-signature", "kid-wrong", "key-not-from-issuer", "qr-chunk-index-out-of-range", "revoked", "expired",
                     "zlib-wrapped", "qr-odd-digits", "file-not-json"] {
            #expect(byName[name]?.conformance == .verifierMustReject, "\(name)")
        }
        for name in ["min-resource-id", "min-meta", "payload-not-minified", "qr-prefix-uppercase", "qr-needless-chunks",
                     "keyset-wrong-use"] {
            #expect(byName[name]?.conformance == .issuerNonconformance, "\(name)")
        }
        #expect(manifest.entries.filter { $0.conformance == .issuerNonconformance }.count >= 10)
        // SHC:/ is read, with a warning; the entry is an issuer's non-conformance with no error.
        let upper = try #require(byName["qr-prefix-uppercase"])
        #expect(upper.errors.isEmpty && upper.warnings == [.qrPrefixCase] && !upper.invalid)
        // The JSON says it, and reads back.
        let json = manifest.json
        #expect(json["files"]?.arrayValue?.contains { $0["name"] == "min-meta" && $0["conformance"] == "issuer-nonconformance" } == true)
        #expect(try FixtureManifest(bytes: manifest.fileBytes()).entries.map(\.conformance) == manifest.entries.map(\.conformance))
    }

    /// Check 1: `healthcards verify` gives every file exactly the manifest's error and warning codes, and the
    /// key sets the entries name are themselves clean.
    @Test func verifyReachesEveryVerdict() throws {
        let dir = try Self.catalogue.get()
        let manifest = try Self.manifest(dir)
        #expect(manifest.now == Self.now && manifest.issuer == Self.issuer)
        #expect(manifest.entries.count > 80)
        for entry in manifest.entries {
            let verifier = try FileVerifier(
                keySets: entry.keySets.map { dir.appendingPathComponent($0).path }, now: manifest.now)
            for report in verifier.keySetReports {
                #expect(report.findings.isEmpty, "\(entry.name): key set \(report.file): \(report.findings)")
            }
            let reports = try verifier.verify(entry.files.map { dir.appendingPathComponent($0).path })
            let findings = reports.flatMap(\.findings)
            let errors = Set(findings.filter(\.isError).map(\.code))
            let warnings = Set(findings.filter { !$0.isError }.map(\.code))
            #expect(errors == Set(entry.errors), "\(entry.name) (\(entry.kind)): \(findings)")
            #expect(warnings == Set(entry.warnings), "\(entry.name) (\(entry.kind)): \(findings)")
            if entry.kind == "key-set" {
                #expect(reports.count == 1 && reports[0].source == .keySet)
            } else {
                // One credential per file, or one per JWS of the two-JWS file, or one per chunk set.
                #expect(reports.allSatisfy { $0.source != .unknown && $0.source != .keySet }, "\(entry.name)")
            }
        }
    }

    /// The manifest lists every card, QR and key set file of valid/ and invalid/, and each file it lists exists.
    @Test func manifestListsEveryFile() throws {
        let dir = try Self.catalogue.get()
        let listed = Set(try Self.manifest(dir).entries.flatMap(\.files))
        let present = Set(
            try Self.tree(dir).keys.filter {
                ($0.hasPrefix("valid/") || $0.hasPrefix("invalid/"))
                    && !$0.hasPrefix("invalid/key-not-from-issuer/site/")
            })
        #expect(listed == present)
    }

    /// Check 2: the independent checker's valid/invalid verdict is the manifest's on every file it can
    /// judge; where the manifest records that it differs, it differs exactly that way.
    @Test(.enabled(if: TestSupport.checkerAvailable, TestSupport.checkerMissing))
    func checkerAgrees() throws {
        let dir = try Self.catalogue.get()
        let manifest = try Self.manifest(dir)
        let base = [
            "--json", "--jwks", dir.appendingPathComponent("site").path, "--now", String(manifest.now), "--apply-crl",
        ]
        func findings(_ files: [String]) throws -> [JSONValue] {
            let run = try TestSupport.check(base + files.map { dir.appendingPathComponent($0).path })
            #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
            return try JSONParser.parse(Array(run.stdout.utf8))["findings"]?.arrayValue ?? []
        }
        // Cards and QR codes in one run (chunk sets each sit in a folder of their own); each key set alone,
        // since the checker adds every key set it reads to the keys it verifies with.
        let cards = manifest.entries.filter { $0.kind != "key-set" }
        let shared = try findings(cards.flatMap(\.files))
        var judged = 0
        for entry in manifest.entries {
            let all = entry.kind == "key-set" ? try findings(entry.files) : shared
            var prefixes = entry.files.map { dir.appendingPathComponent($0).path }
            if entry.files.count > 1 { prefixes.append(FileIO.parent(of: prefixes[0])) }
            let mine = all.filter { finding in
                let at = finding["where"]?.stringValue ?? ""
                return prefixes.contains { at == $0 || at.hasPrefix($0 + " ") }
            }
            let rejects = mine.contains { $0["severity"]?.stringValue == "error" }
            switch entry.checker {
            case .judges:
                judged += 1
                #expect(rejects == entry.invalid, "\(entry.name) (\(entry.kind)): checker says \(mine)")
            case .differs(let invalid, let why):
                judged += 1
                #expect(
                    rejects == invalid, "\(entry.name): the manifest says the checker differs (\(why)); it says \(mine)"
                )
                #expect(invalid != entry.invalid)
            case .cannotJudge(let why):
                // What the manifest says of the checker holds: given this entry's key sets in order (several: the
                // checker keeps the last), it accepts the card verify rejects.
                guard entry.keySets.count > 1 else { break }
                let run = try TestSupport.check(
                    ["--json", "--now", String(manifest.now)] + entry.keySets.flatMap { ["--jwks", dir.appendingPathComponent($0).path] }
                        + entry.files.map { dir.appendingPathComponent($0).path })
                let errors = (try JSONParser.parse(Array(run.stdout.utf8))["findings"]?.arrayValue ?? [])
                    .filter { $0["severity"]?.stringValue == "error" }
                #expect(entry.invalid && errors.isEmpty, "\(entry.name): the manifest says the checker cannot judge it (\(why)); it says \(errors)")
            }
        }
        #expect(judged >= manifest.entries.count - 2)
        // Nothing is found about files the entries do not name (the site's own key set and CRLs are clean).
        let named = cards.flatMap { $0.files.map { dir.appendingPathComponent($0).path } }
        let stray = shared.filter { finding in
            let at = finding["where"]?.stringValue ?? ""
            return !named.contains {
                at == $0 || at.hasPrefix($0 + " ") || at == FileIO.parent(of: $0)
                    || at.hasPrefix(FileIO.parent(of: $0) + " (chunks")
            }
        }
        #expect(stray.isEmpty, "\(stray)")
    }

    /// Check 3: two runs with the same key, issuer, --now and --seed write identical bytes; another seed
    /// changes the content.
    @Test func twoRunsAreByteIdentical() throws {
        let first = try Self.tree(try Self.catalogue.get())
        let second = try Self.tree(try Self.make(seed: 1, into: "fixtures-again"))
        #expect(first.count > 90)
        #expect(first.keys.sorted() == second.keys.sorted())
        for (path, bytes) in first { #expect(second[path] == bytes, "\(path) differs between two runs") }
        let other = try Self.tree(try Self.make(seed: 2, into: "fixtures-seed2"))
        #expect(other["valid/covid19-1-dose.jws"] != first["valid/covid19-1-dose.jws"])
        #expect(other["site/.well-known/jwks.json"] != first["site/.well-known/jwks.json"])
    }

    /// The catalogue holds every kind issue #14 asks for.
    @Test func coversTheIssueList() throws {
        let manifest = try Self.manifest(try Self.catalogue.get())
        let names = Set(manifest.entries.map(\.name))
        let required = [
            "covid19-1-dose", "covid19-3-doses", "immunization-mmr", "lab-qualitative", "two-jws", "rid-not-revoked",
            "exp-future", "max-single-qr", "covid19-chunked", "x5c",
            "bad-signature", "der-signature", "der-signature-r-high", "der-signature-s-high", "der-signature-rs-high",
            "kid-wrong", "kid-missing", "zip-missing", "not-deflated", "zlib-wrapped", "nbf-milliseconds", "nbf-future",
            "expired", "iss-http", "iss-trailing-slash", "key-not-from-issuer", "revoked", "min-resource-id",
            "min-narrative", "min-coding-display", "min-meta", "min-references", "vc-type-missing",
            "ig-immunization-status", "ig-occurrence-missing", "ig-cvx-unknown", "qr-one-byte-segment", "qr-forced-v22",
            "qr-odd-digits", "qr-pair-over-77", "qr-chunk-header-1-1", "qr-needless-chunks",
            "qr-chunk-index-out-of-range",
            "file-not-json", "file-no-verifiable-credential", "file-trailing-garbage", "keyset-wrong-curve",
            "keyset-wrong-use", "keyset-wrong-alg", "keyset-kid-not-thumbprint", "keyset-private-key",
        ]
        #expect(Set(required).subtracting(names).isEmpty, "missing: \(Set(required).subtracting(names).sorted())")
        for name in [
            "covid19-1-dose", "covid19-3-doses", "immunization-mmr", "lab-qualitative", "rid-not-revoked",
            "exp-future", "max-single-qr", "x5c",
        ] {
            let forms = Set(manifest.entries.filter { $0.name == name }.map(\.kind))
            #expect(forms == ["smart-health-card", "jws", "qr-text", "qr-image"], "\(name): \(forms)")
        }
        let dir = try Self.catalogue.get()
        #expect(try VerifyFixtures.bytes(dir.appendingPathComponent("valid/max-single-qr.jws")).count == 1194)
        // docs/fixtures.md describes every entry.
        let docs = try VerifyFixtures.text(VerifyFixtures.repoRoot.appendingPathComponent("docs/fixtures.md"))
        for name in names { #expect(docs.contains("| `\(name)` |"), "docs/fixtures.md does not list \(name)") }
        // Every broken entry names the stage that was replaced; every valid one names none.
        for entry in manifest.entries {
            #expect(entry.files[0].hasPrefix("invalid/") == (entry.stage != nil), "\(entry.name)")
            #expect(
                entry.files[0].hasPrefix("valid/")
                    == (!entry.invalid && entry.warnings.allSatisfy { [.jwsTooLong, .qrChunked].contains($0) }),
                "\(entry.name)")
        }
    }

    /// The fixture pipeline with no stage replaced is the issuing pipeline: `issue --deterministic` makes the
    /// same card file and QR image from the same Bundle, key and nbf.
    @Test func defaultStagesAreTheIssuePipeline() throws {
        let dir = try TestSupport.tempDir("fixtures-issue")
        let keyPath = try TestSupport.demoKey(in: dir)
        let key = try KeySource.privateKey(keyPath)
        let catalogue = try FixtureCatalogue(.init(issuer: Self.issuer, key: key, now: Self.now, seed: 7))
        var record = catalogue.covidRecord("pipeline", doses: 2)
        record.labs = []
        let output = try catalogue.card(record)
        let input = try TestSupport.write(
            String(decoding: JSONWriter.minified(record.sourceBundle), as: UTF8.self),
            to: "bundle.json", in: dir)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", keyPath, "--out", out.path, "--quiet",
            "--deterministic", "--nbf", String(catalogue.notBefore), input,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let cards = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("cards").path)
        #expect(cards.count == 1)
        let file = try VerifyFixtures.bytes(out.appendingPathComponent("cards/\(cards[0])"))
        #expect(file == FixtureOutput.file([output.jws]))
        let stem = String(cards[0].dropLast(".smart-health-card".count))
        let png = try VerifyFixtures.bytes(out.appendingPathComponent("qr/\(stem).png"))
        #expect(png == (try QRImage().png(try FixtureOutput.symbols(output.jws)[0])))
    }

    /// `issue --deterministic` is reproducible; without it the signature is random (never deterministic
    /// silently); with an HSM key it is refused with a message saying why.
    @Test func issueDeterministicOption() throws {
        let dir = try TestSupport.tempDir("deterministic")
        let key = try TestSupport.demoKey(in: dir)
        let csv = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.sample.csv").path
        let template = VerifyFixtures.repoRoot.appendingPathComponent("templates/covid19-vaccination.json").path
        func issue(_ name: String, _ extra: [String]) throws -> [String: [UInt8]] {
            let out = dir.appendingPathComponent(name)
            let run = try TestSupport.cli(
                [
                    "issue", "--issuer", Self.issuer, "--key", key, "--template", template, "--out", out.path,
                    "--quiet", "--nbf", "1700000000",
                ] + extra + [csv])
            #expect(run.status == 0, "\(run.stderr)")
            return try Self.tree(out.appendingPathComponent("cards"))
        }
        let a = try issue("a", ["--deterministic"])
        let b = try issue("b", ["--deterministic", "--jobs", "1"])
        let c = try issue("c", [])
        #expect(!a.isEmpty && a == b)
        #expect(a.keys.sorted() == c.keys.sorted())
        for (name, bytes) in a { #expect(c[name] != bytes, "\(name): random nonces gave the deterministic signature") }
        let hsm = try TestSupport.cli([
            "issue", "--issuer", Self.issuer, "--key", "pkcs11:token=issuer;object=shc",
            "--template", template, "--out", dir.appendingPathComponent("d").path, "--deterministic", csv,
        ])
        #expect(hsm.status == 2)
        #expect(
            hsm.stderr.contains("--deterministic") && hsm.stderr.contains("PKCS#11") && hsm.stderr.contains("random"))
        let fixtures = try TestSupport.cli([
            "fixtures", "--issuer", Self.issuer, "--key", "pkcs11:token=issuer;object=shc",
            "--out", dir.appendingPathComponent("e").path,
        ])
        #expect(fixtures.status == 2)
        #expect(fixtures.stderr.contains("PKCS#11") && fixtures.stderr.contains("RFC 6979"))
    }

    /// Every `--now` that is accepted gives a catalogue whose manifest holds: the earliest one still has an
    /// `nbf-milliseconds` card that reads as milliseconds (at 1972-09-27 its nbf × 1000 was only a future
    /// time, NBF_NOT_YET_VALID, while the manifest said NBF_MILLISECONDS).
    @Test func theEarliestNowStillMakesTheMillisecondsFault() throws {
        let dir = try TestSupport.tempDir("fixtures-early")
        let key = try TestSupport.demoKey(in: dir)
        func fixtures(_ now: Int64) throws -> (TestSupport.Run, String) {
            let out = dir.appendingPathComponent("c\(now)").path
            let run = try TestSupport.cli([
                "fixtures", "--issuer", Self.issuer, "--key", key, "--out", out, "--now", String(now),
            ])
            return (run, out)
        }
        #expect(FixtureCatalogue.earliestNow == 100_003_600)
        let (early, earlyOut) = try fixtures(86_400_000)
        #expect(early.status == 2, "\(early.stderr)")
        #expect(early.stderr.contains("reads as milliseconds only from --now 100003600"), "\(early.stderr)")
        #expect(!FileManager.default.fileExists(atPath: earlyOut))
        let (first, out) = try fixtures(FixtureCatalogue.earliestNow)
        #expect(first.status == 0, "\(first.stderr)")
        let manifest = try Self.manifest(URL(fileURLWithPath: out))
        let entry = try #require(manifest.entries.first { $0.name == "nbf-milliseconds" })
        let verifier = try FileVerifier(keySets: ["\(out)/site"], now: manifest.now)
        let codes = try verifier.verify(entry.files.map { "\(out)/\($0)" }).flatMap(\.findings).map(\.code)
        #expect(codes == [.nbfMilliseconds])
    }

    /// `--out` is a new or empty folder, or an earlier catalogue (replaced whole); anything else is refused
    /// and left as it is.
    @Test func outFolderRules() throws {
        let dir = try TestSupport.tempDir("fixtures-out")
        let key = try TestSupport.demoKey(in: dir)
        func fixtures(_ out: String, _ now: Int64) throws -> TestSupport.Run {
            try TestSupport.cli(["fixtures", "--issuer", Self.issuer, "--key", key, "--out", out, "--now", String(now)])
        }
        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        #expect(try fixtures(empty.path, Self.now).status == 0)
        let before = try Self.manifest(empty)
        #expect(try fixtures(empty.path, Self.now + 86_400).status == 0)
        #expect(try Self.manifest(empty).now == before.now + 86_400)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter {
            $0.contains("fixtures-")
        }
        #expect(leftovers.isEmpty, "\(leftovers)")

        try TestSupport.write("notes", to: "empty/README.md", in: dir)
        let refused = try fixtures(empty.path, Self.now)
        #expect(refused.status == 2 && refused.stderr.contains("README.md"))
        #expect(try Self.manifest(empty).now == before.now + 86_400)

        let other = dir.appendingPathComponent("other")
        try TestSupport.write("x", to: "other/cards.csv", in: dir)
        let notCatalogue = try fixtures(other.path, Self.now)
        #expect(notCatalogue.status == 2 && notCatalogue.stderr.contains("no catalogue"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: other.path) == ["cards.csv"])

        let help = try TestSupport.cli(["fixtures", "--help"])
        #expect(help.status == 0 && help.stdout.contains("--seed") && help.stdout.contains("manifest.json"))
        #expect(try TestSupport.cli(["--help"]).stdout.contains("fixtures"))
    }
}
