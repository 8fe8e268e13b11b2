import Foundation
import Testing

import HealthCardsCore
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsVerify
import HealthCardsTestSupport

/// `verify --json` output, of every shape (cards of each source, a chunk set, key sets bound and not,
/// links, inputs read as nothing, skipped paths, findings over the per-code limit), validated with Python's
/// `jsonschema` against the schema docs/verify.md gives, plus what a schema cannot say: the summary's counts
/// are the arrays' lengths and the findings' totals.
@Suite struct VerifyJSONSchemaTests {
    static let page = VerifyFixtures.repoRoot.appendingPathComponent("docs/verify.md")
    static let marker = "<!-- verify-json-schema"

    /// The schema: the ```json block after the marker in docs/verify.md.
    static func schema() throws -> String {
        let doc = try String(contentsOf: page, encoding: .utf8)
        let after = try #require(doc.range(of: marker).map { doc[$0.upperBound...] })
        let start = try #require(after.range(of: "```json\n"))
        let body = after[start.upperBound...]
        let end = try #require(body.range(of: "\n```"))
        return String(body[..<end.lowerBound])
    }

    /// Validates each document against the schema and checks the counts; returns the problems found.
    static let checker = #"""
        import json, sys
        from jsonschema import Draft202012Validator
        schema = json.load(open(sys.argv[1]))
        Draft202012Validator.check_schema(schema)
        validator = Draft202012Validator(schema)
        problems = []
        for path in sys.argv[2:]:
            doc = json.load(open(path))
            for error in validator.iter_errors(doc):
                problems.append(f"{path}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
            arrays = ["keySets", "credentials", "links", "other"]
            for name in arrays:
                if doc["summary"][name] != len(doc[name]):
                    problems.append(f"{path}: summary.{name} {doc['summary'][name]} != {len(doc[name])}")
            reports = [r for name in arrays for r in doc[name]]
            for severity, count in (("error", "errors"), ("warning", "warnings")):
                listed = sum(1 for r in reports for f in r["findings"] if f["severity"] == severity)
                if doc["summary"][count] != listed:
                    problems.append(f"{path}: summary.{count} {doc['summary'][count]} != {listed} listed")
                for r in reports:
                    own = sum(1 for f in r["findings"] if f["severity"] == severity)
                    if r[count] != own:
                        problems.append(f"{path}: {r['files']} {count} {r[count]} != {own}")
            for r in reports:
                if ("file" in r) != (len(r["files"]) == 1) or ("file" in r and r["file"] != r["files"][0]):
                    problems.append(f"{path}: file/files disagree in {r['files']}")
                if r["valid"] != (r["errors"] == 0):
                    problems.append(f"{path}: valid {r['valid']} with {r['errors']} errors")
            for r in doc["credentials"]:
                if r["verified"] != (r["valid"] and r["signature"] == "verified"):
                    problems.append(f"{path}: verified {r['verified']} with valid {r['valid']}, signature {r['signature']}")
            for r in doc["links"]:
                unchecked = any(f["code"] in ("SHL_NOT_RESOLVED", "SHL_MANIFEST_NOT_CHECKED") for f in r["findings"])
                if r["verified"] != (r["valid"] and not unchecked):
                    problems.append(f"{path}: link verified {r['verified']} with valid {r['valid']}, unchecked {unchecked}")
            unverified = sum(1 for r in doc["credentials"] + doc["links"] if not r["verified"])
            if doc["summary"]["notVerified"] != unverified:
                problems.append(f"{path}: summary.notVerified {doc['summary']['notVerified']} != {unverified}")
        print("\n".join(problems))
        sys.exit(1 if problems else 0)
        """#

    @Test(.enabled(if: TestSupport.python != nil, "no test Python at .build/test-venv (make test makes it)"))
    func everyShapeOfOutputMatchesTheDocumentedSchema() throws {
        let dir = try TestSupport.tempDir("verify-json-schema")
        let spec = VerifyFixtures.specExamples
        let site = spec.appendingPathComponent("issuer").path
        // A folder of a card, a chunk set (given out of order under other names), a PNG, a JWS, a key set
        // (met in the walk), a FIFO (skipped) and a card over the per-code limit.
        let walk = dir.appendingPathComponent("walk")
        try FileManager.default.createDirectory(at: walk, withIntermediateDirectories: true)
        for (from, to) in [
            ("example-00-e-file.smart-health-card", "a.smart-health-card"),
            ("example-02-f-qr-code-numeric-value-2.txt", "q1.txt"),
            ("example-02-f-qr-code-numeric-value-0.txt", "q2.txt"),
            ("example-02-f-qr-code-numeric-value-1.txt", "q3.txt"),
            ("example-01-d-jws.txt", "one.jws"), ("derived/qr-png/example-00-g-qr-code-0.png", "qr.png"),
            ("example-02-e-file.smart-health-card", "many-findings.smart-health-card"),
        ] {
            try FileManager.default.copyItem(at: spec.appendingPathComponent(from), to: walk.appendingPathComponent(to))
        }
        try FileManager.default.copyItem(
            at: spec.appendingPathComponent("issuer/.well-known/jwks.json"),
            to: walk.appendingPathComponent("jwks.json"))
        #expect(mkfifo(walk.appendingPathComponent("pipe").path, 0o600) == 0)
        let empty = dir.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let shl = VerifyFixtures.cases.appendingPathComponent("shl-cty-upper-case")
        let runs: [[String]] = [
            // The spec's site: bound by URL=, with its CRL; the walk's own key set is reported, not used.
            ["--jwks", "https://spec.smarthealth.cards/examples/issuer=\(site)", walk.path],
            // One bare key set alone: it stands for every issuer, and the summary says it was not bound.
            [
                "--jwks", spec.appendingPathComponent("issuer/.well-known/jwks.json").path,
                walk.appendingPathComponent("a.smart-health-card").path,
            ],
            // Links: a card inside, and content of a type verify does not check.
            [
                "--jwks", shl.appendingPathComponent("site").path, "--shl-site",
                shl.appendingPathComponent("site").path,
                shl.appendingPathComponent("link-cty-upper.txt").path,
                shl.appendingPathComponent("link-cty-good.txt").path,
            ],
            // Nothing to check, and no key set at all.
            [empty.path],
        ]
        var documents: [String] = []
        for (i, arguments) in runs.enumerated() {
            let run = try TestSupport.cli(["verify", "--json", "--now", "1700000100"] + arguments)
            #expect(run.status == 0 || run.status == 1, "\(arguments): \(run.stderr)")
            documents.append(try TestSupport.write(run.stdout, to: "run-\(i).json", in: dir))
        }
        // The shapes the runs were meant to cover are there.
        let all = try documents.map {
            try JSONParser.parse(Array(try String(contentsOfFile: $0, encoding: .utf8).utf8))
        }
        #expect(all[0]["credentials"]?.arrayValue?.contains { $0["files"]?.arrayValue?.count == 3 } == true)
        #expect(all[0]["credentials"]?.arrayValue?.contains { $0["findingsOmitted"] != nil } == true)
        #expect(all[0]["credentials"]?.arrayValue?.contains { $0["source"] == "qr-image" } == true)
        #expect(all[0]["keySets"]?.arrayValue?.count == 2 && all[0]["summary"]?["skipped"] != nil)
        #expect(all[1]["summary"]?["keySetNotBound"] != nil)
        #expect(all[2]["links"]?.arrayValue?.count == 2 && all[3]["other"]?.arrayValue?.count == 1)
        let schema = try TestSupport.write(try Self.schema(), to: "schema.json", in: dir)
        let script = try TestSupport.write(Self.checker, to: "check.py", in: dir)
        let python = try #require(TestSupport.python)
        let check = try TestSupport.run(python, [script, schema] + documents)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        // And the checker can fail: a summary that miscounts, and a finding without a code, are caught.
        var broken = try JSONParser.parse(Array(try String(contentsOfFile: documents[0], encoding: .utf8).utf8))
            .objectValue!
        var summary = broken["summary"]!.objectValue!
        summary["credentials"] = .integer(99)
        broken["summary"] = .object(summary)
        let miscounted = try TestSupport.write(
            String(decoding: JSONWriter.pretty(.object(broken)), as: UTF8.self), to: "broken.json", in: dir)
        let caught = try TestSupport.run(python, [script, schema, miscounted])
        #expect(caught.status == 1 && caught.stdout.contains("summary.credentials 99"), "\(caught.stdout)")
        let codeless = try TestSupport.write(
            try String(contentsOfFile: documents[3], encoding: .utf8).replacingOccurrences(
                of: "\"code\": \"NOTHING_TO_CHECK\",", with: ""), to: "codeless.json", in: dir)
        let caught2 = try TestSupport.run(python, [script, schema, codeless])
        #expect(caught2.status == 1 && caught2.stdout.contains("'code' is a required property"), "\(caught2.stdout)")
    }
}
