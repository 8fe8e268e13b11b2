import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsFixtures
import HealthCardsTestSupport

/// `issue --shard K/N` and `report merge` (docs/scale.md): a batch split over machines is the batch.
@Suite struct ShardTests {
    /// The shard of a key is the first 8 bytes of its SHA-256, big-endian, modulo N: held against coreutils'
    /// sha256sum, an implementation of its own.
    @Test func shardOfAKeyIsItsSHA256ModuloN() throws {
        let dir = try TestSupport.tempDir("shard-hash")
        for key in ["P-1001", "P-00000042", "Chloé-7", "urn:oid:2.16.840.1.113883.4.1|123-45-6789", ""] {
            let file = try TestSupport.write(key, to: "key.txt", in: dir)
            let sum = try TestSupport.run("/usr/bin/sha256sum", [file])
            let high = try #require(UInt64(String(sum.stdout.prefix(16)), radix: 16))
            for count in [1, 2, 3, 7, 16, 1000, Shard.maxCount] {
                #expect(Shard.of(key: key, count: count) == Int(high % UInt64(count)), "\(key) of \(count)")
            }
        }
        let shard = try Shard(index: Shard.of(key: "P-1001", count: 5), count: 5)
        #expect(shard.contains(key: "P-1001"))
        #expect(try (0..<5).filter { try Shard(index: $0, count: 5).contains(key: "P-1001") }.count == 1)
    }

    @Test func shardTextIsKOfN() throws {
        #expect(try Shard(parsing: "0/1") == Shard(index: 0, count: 1))
        #expect(try Shard(parsing: "3/16").description == "3/16")
        #expect(try Shard(parsing: "65535/65536").index == 65535)
        for bad in ["", "3", "3/3", "4/3", "-1/4", "1/0", "a/b", "1/65537", " 1/2", "1/2/3", "+1/2", "1/2 ", "0x1/2", "1.0/2"] {
            #expect(throws: HealthCardError.self, "\(bad)") { try Shard(parsing: bad) }
        }
        let error = try #require(throws: HealthCardError.self) { try Shard(parsing: "4/4") }
        #expect(error.kind == .configuration && error.text.contains("0 to 3"), "\(error.text)")
    }

    /// The shards of a batch, run apart (another --jobs too), are the batch: every card byte for byte in exactly
    /// one shard (deterministic signatures, one nbf), and `report merge` writes the unsharded report exactly,
    /// rejected records included.
    @Test func shardsTogetherAreOneRunCardForCard() throws {
        let dir = try TestSupport.tempDir("shards")
        let key = try TestSupport.demoKey(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        #expect(try TestSupport.cli(["keygen", "--rid-secret", secret]).status == 0)
        let csv = try BatchTestSupport.synthetic(patients: 45, in: dir)
        // Two rejected records: a date that is no date, and a row that names no patient.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: csv))
        handle.seekToEndOfFile()
        handle.write(Data((
            "EV-9,1,P-bad-date,Ada,,Testperson,1960-04-12,F,Springfield,IL,Clinic,999999,2021-13-40,207,80777-0273-10,MOD,X1,2023-01-01,LA,C28161,1\n"
                + "EV-10,1,,Bob,,Sampleton,1970-01-01,M,Springfield,IL,Clinic,999999,2021-02-01,207,80777-0273-10,MOD,X2,2023-01-01,LA,C28161,1\n").utf8))
        try handle.close()
        func issue(_ out: String, _ extra: [String]) throws -> TestSupport.Run {
            try TestSupport.cli(BatchTestSupport.issueArguments(
                key: key, out: dir.appendingPathComponent(out), csv: csv,
                extra: ["--deterministic", "--rid-secret", secret, "--no-qr", "--quiet"] + extra))
        }
        let full = try issue("full", ["--jobs", "1"])
        #expect(full.status == 1, "\(full.stderr)")  // the two rejected records
        var shardCards: [String: String] = [:]  // card file → shard folder
        for k in 0..<3 {
            let run = try issue("shard\(k)", ["--shard", "\(k)/3", "--jobs", "2"])
            #expect(run.status == 0 || run.status == 1, "\(run.stderr)")
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("shard\(k)/cards").path) {
                #expect(shardCards[name] == nil, "\(name) is in two shards")
                shardCards[name] = "shard\(k)"
            }
            let manifest = try ShardManifest(
                bytes: try VerifyFixtures.bytes(dir.appendingPathComponent("shard\(k)/shard.json")), source: "shard.json")
            #expect(manifest.shard == (try Shard(index: k, count: 3)) && manifest.finished && manifest.records == 47)
            #expect(manifest.reported == (try TestSupport.report(dir.appendingPathComponent("shard\(k)"))).count)
        }
        let fullCards = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("full/cards").path)
        #expect(fullCards.count == 45 && Set(fullCards) == Set(shardCards.keys))
        for name in fullCards {
            let folder = try #require(shardCards[name])
            #expect(
                try VerifyFixtures.bytes(dir.appendingPathComponent("full/cards/\(name)"))
                    == VerifyFixtures.bytes(dir.appendingPathComponent("\(folder)/cards/\(name)")), "\(name)")
            // Each card is in the shard its patient id hashes to.
            #expect(folder == "shard\(Shard.of(key: String(name.dropLast(".smart-health-card".count)), count: 3))")
        }
        let merged = dir.appendingPathComponent("merged.ndjson")
        let merge = try TestSupport.cli(["report", "merge", "--out", merged.path] + (0..<3).reversed().map { dir.appendingPathComponent("shard\($0)").path })
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(merge.stderr.contains("merged 3 shards: 47 records (45 issued, 2 rejected)"), "\(merge.stderr)")
        let unsharded = try VerifyFixtures.bytes(dir.appendingPathComponent("full/report.ndjson"))
        #expect(try VerifyFixtures.bytes(merged) == unsharded)
        #expect(FileIO.mode(merged.path) == 0o600)
        // The unsharded report has no record numbers; a shard's lines end with theirs.
        #expect(!String(decoding: unsharded, as: UTF8.self).contains("\"record\""))
        #expect(try TestSupport.report(dir.appendingPathComponent("shard1")).allSatisfy { $0["record"]?.numberLexeme != nil })
    }

    /// What `report merge` refuses, each with its code, naming shards and record numbers but no patient id,
    /// and writing nothing (an existing output is left as it was).
    @Test func mergeRefusesShardsThatAreNotOneBatch() throws {
        let dir = try TestSupport.tempDir("shard-merge")
        let key = try TestSupport.demoKey(in: dir)
        let secret = dir.appendingPathComponent("rid.secret").path
        #expect(try TestSupport.cli(["keygen", "--rid-secret", secret]).status == 0)
        let csv = try BatchTestSupport.synthetic(patients: 24, in: dir)
        func issue(_ out: String, _ shard: String, csv: String = csv) throws {
            let run = try TestSupport.cli(BatchTestSupport.issueArguments(
                key: key, out: dir.appendingPathComponent(out), csv: csv,
                extra: ["--rid-secret", secret, "--no-qr", "--quiet", "--shard", shard]))
            #expect(run.status == 0, "\(run.stderr)")
        }
        for k in 0..<3 { try issue("s\(k)", "\(k)/3") }
        try issue("half", "1/2")
        let out = dir.appendingPathComponent("merged.ndjson")
        try Data("earlier\n".utf8).write(to: out)
        func merge(_ folders: [String]) throws -> TestSupport.Run {
            let run = try TestSupport.cli(["report", "merge", "--out", out.path] + folders.map { dir.appendingPathComponent($0).path })
            #expect(try String(contentsOf: out, encoding: .utf8) == "earlier\n", "the output was touched")
            #expect(!run.stderr.contains("P-000"), "a patient id was printed: \(run.stderr)")
            return run
        }
        var run = try merge(["s0", "s2"])
        #expect(run.status == 1 && run.stderr.contains("SHARD_INCOMPLETE: 1 of the 3 shards is missing (1)"), "\(run.stderr)")
        run = try merge(["s0", "s1", "s1", "s2"])
        #expect(run.status == 1 && run.stderr.contains("SHARD_INCOMPLETE: shard 1/3 is given more than once"), "\(run.stderr)")
        run = try merge(["s0", "half", "s2"])
        #expect(run.status == 1 && run.stderr.contains("SHARD_MISMATCH: the shards split the batch in different numbers of parts"), "\(run.stderr)")

        // Another input: a patient fewer.
        let other = try BatchTestSupport.synthetic(patients: 23, in: dir, name: "other.csv")
        try issue("o1", "1/3", csv: other)
        run = try merge(["s0", "o1", "s2"])
        #expect(run.status == 1 && run.stderr.contains("SHARD_MISMATCH") && run.stderr.contains("every shard must read the same inputs"), "\(run.stderr)")

        // Copies of the shards, then changed: a run that did not finish, a person in two shards, a rid of two people.
        func copy(_ from: String, _ to: String) throws {
            try FileManager.default.copyItem(at: dir.appendingPathComponent(from), to: dir.appendingPathComponent(to))
        }
        func lines(_ folder: String) throws -> [JSONObject] {
            try TestSupport.report(dir.appendingPathComponent(folder)).map { try #require($0.objectValue) }
        }
        func write(_ folder: String, _ lines: [JSONObject]) throws {
            let bytes: [UInt8] = lines.flatMap { line -> [UInt8] in JSONWriter.minified(.object(line)) + [0x0A] }
            try Data(bytes).write(to: dir.appendingPathComponent("\(folder)/report.ndjson"))
        }
        try copy("s2", "unfinished")
        let manifestURL = dir.appendingPathComponent("unfinished/shard.json")
        let manifest = try String(contentsOf: manifestURL, encoding: .utf8).replacingOccurrences(of: "\"finished\": true", with: "\"finished\": false")
        try Data(manifest.utf8).write(to: manifestURL)
        run = try merge(["s0", "s1", "unfinished"])
        #expect(run.status == 1 && run.stderr.contains("SHARD_INCOMPLETE: shard 2/3") && run.stderr.contains("did not finish"), "\(run.stderr)")

        let first = try #require(try lines("s0").first)
        try copy("s1", "split")
        var split = try lines("split")
        split[0]["id"] = first["id"]
        split[0]["ridFrom"] = first["ridFrom"]
        try write("split", split)
        run = try merge(["s0", "split", "s2"])
        let firstRecord = try #require(first["record"]?.numberLexeme), splitRecord = try #require(split[0]["record"]?.numberLexeme)
        #expect(run.status == 1 && run.stderr.contains("SHARD_PERSON_SPLIT: one person is in several shards: "), "\(run.stderr)")
        #expect(run.stderr.contains("record \(firstRecord) (shard 0)") && run.stderr.contains("record \(splitRecord) (shard 1)"), "\(run.stderr)")

        try copy("s2", "shared-rid")
        var shared = try lines("shared-rid")
        shared[0]["rid"] = first["rid"]
        try write("shared-rid", shared)
        run = try merge(["s0", "s1", "shared-rid"])
        #expect(run.status == 1 && run.stderr.contains("RID_COLLISION: one vc.rid belongs to two people"), "\(run.stderr)")

        try copy("s1", "short")
        try write("short", Array(try lines("short").dropLast()))
        run = try merge(["s0", "short", "s2"])
        #expect(run.status == 1 && run.stderr.contains("SHARD_INCOMPLETE") && run.stderr.contains("in no shard's report"), "\(run.stderr)")
        #expect(run.stderr.contains("SHARD_MISMATCH") && run.stderr.contains("the report changed after the run"), "\(run.stderr)")

        // Not a shard's folder at all.
        run = try TestSupport.cli(["report", "merge", "--out", out.path, dir.path])
        #expect(run.status == 2 && run.stderr.contains("holds no shard.json"), "\(run.stderr)")
        // And the shards as they are: merged.
        run = try TestSupport.cli(["report", "merge", "--out", out.path] + ["s0", "s1", "s2"].map { dir.appendingPathComponent($0).path })
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try TestSupport.report(dir.appendingPathComponent("s0")).count + (try lines("s1")).count + (try lines("s2")).count == 24)
    }

    /// docs/scale.md's Kubernetes Indexed Job runs as written: its container command, with the volumes' paths
    /// pointed at local folders and `JOB_COMPLETION_INDEX` set as the Job controller sets it, once per index of
    /// `completions`; the shards merge into the report of the same command run without --shard (the rids are
    /// derived, not random, so the lines are the same).
    @Test func theDocumentedIndexedJobRunsAndMerges() throws {
        let doc = try String(contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("docs/scale.md"), encoding: .utf8)
        let yaml = try #require(doc.components(separatedBy: "```yaml\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(yaml.contains("completionMode: Indexed"))
        let completions = try #require(yaml.split(separator: "\n").first { $0.contains("completions:") }
            .flatMap { Int($0.split(separator: ":")[1].split(separator: "#")[0].trimmingCharacters(in: .whitespaces)) })
        // The folded (`>-`) shell command: the lines below it, more indented, joined with spaces.
        let lines = yaml.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasSuffix("- >-") })
        let indent = lines[start + 1].prefix { $0 == " " }.count
        let script = lines[(start + 1)...].prefix { $0.prefix { $0 == " " }.count >= indent && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(script.contains("--shard \"$JOB_COMPLETION_INDEX/\(completions)\""), "\(script)")

        let dir = try TestSupport.tempDir("scale-doc")
        let fm = FileManager.default
        for folder in ["secrets", "input", "out"] { try fm.createDirectory(at: dir.appendingPathComponent(folder), withIntermediateDirectories: true) }
        let key = dir.appendingPathComponent("secrets/issuer.pem").path
        try fm.copyItem(atPath: TestSupport.demoKeySource.path, toPath: key)
        let secret = dir.appendingPathComponent("secrets/rid.secret").path
        #expect(try TestSupport.cli(["keygen", "--rid-secret", secret]).status == 0)
        // The secret volume's defaultMode.
        for file in [key, secret] { try fm.setAttributes([.posixPermissions: 0o400], ofItemAtPath: file) }
        let site = dir.appendingPathComponent("site").path
        let siteRun = try TestSupport.cli(["site", "--out", site, "--issuer", "https://registry.example.org", "--crl", key])
        #expect(siteRun.status == 0, "\(siteRun.stderr)")
        _ = try BatchTestSupport.synthetic(patients: 40, in: dir.appendingPathComponent("input"), name: "registry-extract.csv")
        var local = script
        for (from, to) in [(" /secrets/", " \(dir.path)/secrets/"), (" /site ", " \(site) "), (" /input/", " \(dir.path)/input/"),
                           ("\"/out/", "\"\(dir.path)/out/"),
                           ("/usr/share/healthcards/templates/", VerifyFixtures.repoRoot.appendingPathComponent("templates").path + "/")] {
            #expect(local.contains(from), "\(from) not in \(script)")
            local = local.replacingOccurrences(of: from, with: to)
        }
        let path = TestSupport.binDir.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        for index in 0..<completions {
            let run = try TestSupport.run("/bin/sh", ["-c", local], environment: ["JOB_COMPLETION_INDEX": String(index), "PATH": path])
            #expect(run.status == 0, "index \(index): \(run.stderr)")
        }
        let unsharded = local.replacingOccurrences(of: "--shard \"$JOB_COMPLETION_INDEX/\(completions)\" --out \"\(dir.path)/out/shard-$JOB_COMPLETION_INDEX\"",
                                                   with: "--out \(dir.path)/full")
        #expect(unsharded != local)
        #expect(try TestSupport.run("/bin/sh", ["-c", unsharded], environment: ["PATH": path]).status == 0)
        let merged = dir.appendingPathComponent("merged.ndjson").path
        let folders = (0..<completions).map { dir.appendingPathComponent("out/shard-\($0)").path }
        let merge = try TestSupport.cli(["report", "merge", "--out", merged] + folders)
        #expect(merge.status == 0 && merge.stderr.contains("40 records (40 issued, 0 rejected)"), "\(merge.stderr)")
        #expect(try VerifyFixtures.bytes(URL(fileURLWithPath: merged)) == VerifyFixtures.bytes(dir.appendingPathComponent("full/report.ndjson")))
    }
}
