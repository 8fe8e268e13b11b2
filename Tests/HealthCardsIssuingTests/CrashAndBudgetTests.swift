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

/// The reported inputs of `Tests/Fixtures/cases/crash-and-budget/` and the kinds of fault behind them: no
/// input traps (each is a finding, or a rejected record, with exit status 0 or 1), and every input has a
/// budget checked before its cost is paid (docs/verify.md, "Budgets").
@Suite struct CrashAndBudgetTests {
    static let cases = VerifyFixtures.cases.appendingPathComponent("crash-and-budget")
    static let specKeySet = TestSupport.spec("issuer/.well-known/jwks.json").path

    /// A new signing key file (mode 0600) in `dir`.
    static func freshKey(in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("issuer.pem").path
        try KeyFile.writeNew(try P256Key.generate(), to: path)
        return path
    }

    // MARK: the reported inputs, through the CLI

    /// `nbf` -1e300 was an `Int64(Double)` trap (exit 132); it is NBF_OUT_OF_RANGE.
    @Test func nbfMinus1e300IsAFinding() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", Self.specKeySet, "--json",
            Self.cases.appendingPathComponent("nbf-minus-1e300.smart-health-card").path,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONParser.parse(run.stdout)
        let codes = TestSupport.allReports(report).flatMap { $0["findings"]?.arrayValue ?? [] }.compactMap {
            $0["code"]?.stringValue
        }
        #expect(codes.contains("NBF_OUT_OF_RANGE"))
        #expect(!codes.contains("NBF_MILLISECONDS"))
    }

    /// A dateTime zone `+-1:00` was a `UInt8` underflow in one record of a batch, which then died at that
    /// record on every run. The record is rejected with its reason, the report is written, the run ends
    /// (exit 1), and running it again ends the same way.
    @Test func badTimeZoneRecordIsRejectedAndTheBatchFinishes() throws {
        let dir = try TestSupport.tempDir("bad-zone")
        let key = try Self.freshKey(in: dir)
        let good = try TestSupport.write(
            JSONWriter.minifiedString(VerifyForge.bundle(doses: 1)) + "\n", to: "good.ndjson", in: dir)
        let out = dir.appendingPathComponent("out")
        let arguments = [
            "issue", "--issuer", "https://a.example", "--key", key, "--out", out.path, "--nbf", "1690000000",
            Self.cases.appendingPathComponent("bad-time-zone.ndjson").path, good,
        ]
        for _ in 0..<2 {
            let run = try TestSupport.cli(arguments)
            #expect(run.status == 1, "\(run.stderr)")
            let lines = try TestSupport.report(out)
            #expect(lines.map { $0["status"]?.stringValue } == ["rejected", "issued"])
            let message = lines.first?["errors"]?[0]?["message"]?.stringValue ?? ""
            #expect(lines.first?["errors"]?[0]?["code"]?.stringValue == "IMMUNIZATION_OCCURRENCE", "\(message)")
            #expect(message.contains("+-1:00"), "\(message)")
        }
    }

    /// A 76 KB PNG that says 20000 × 20000 pixels cost 795 MB; its size is refused from its header.
    @Test func hugePNGIsRefusedBeforeDecoding() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", Self.specKeySet, "--json",
            Self.cases.appendingPathComponent("png-20000x20000.png").path,
        ])
        #expect(run.status == 1)
        let report = try JSONParser.parse(run.stdout)
        let image = (report["credentials"]?.arrayValue ?? []).filter { $0["source"]?.stringValue == "qr-image" }
        let findings = image.flatMap { $0["findings"]?.arrayValue ?? [] }
        #expect(findings.compactMap { $0["code"]?.stringValue } == ["FILE_TOO_LARGE"])
        #expect(findings.first?["message"]?.stringValue?.contains("20000 × 20000") == true)
        // The library refuses it the same way, with any budget below its size.
        let png = try VerifyFixtures.bytes(Self.cases.appendingPathComponent("png-20000x20000.png"))
        #expect(throws: HealthCardError.self) { try GrayImage(png: png) }
        #expect(throws: HealthCardError.self) { try GrayImage(png: png, maxPixels: 400_000_000 - 1) }
    }

    /// Every reported input, through the CLI: a finding (exit 1), never a trap or a signal. (The chunk
    /// count's allocation is tested in `QRGroupingTests`.)
    @Test(arguments: [
        ("nbf-minus-1e300.smart-health-card", "NBF_OUT_OF_RANGE"), ("chunk-count-huge.txt", "QR_CHUNK_HEADER"),
        ("png-20000x20000.png", "FILE_TOO_LARGE"),
    ])
    func everyReportedVerifyInputIsAFinding(name: String, code: String) throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", Self.specKeySet, "--now", "1700000100", "--json",
            Self.cases.appendingPathComponent(name).path,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONParser.parse(run.stdout)
        let cards = (report["credentials"]?.arrayValue ?? []).filter { $0["source"]?.stringValue != "key-set" }
        let codes: [String] = cards.flatMap { $0["findings"]?.arrayValue ?? [] }.compactMap { $0["code"]?.stringValue }
        #expect(codes.contains(code), "\(codes)")
    }

    // MARK: conversions that trapped

    @Test func timeZonesAreTwoDigitsEachWithinFourteenHours() {
        for zone in [
            "+-1:00", "-+1:00", "+1-:00", "+01:-1", "+01:+1", "+ 1:00", "+1:000", "+٠١:٠٠", "+14:01", "-15:00",
            "+99:00", "+01:60",
        ] {
            #expect(!FHIRDate.isValidDateTime("2021-01-01T10:00:00" + zone), "\(zone)")
            #expect(FHIRDate.epochSeconds("2021-01-01T10:00:00" + zone) == nil, "\(zone)")
        }
        let utc: Int64 = 1_609_495_200  // 2021-01-01T10:00:00Z
        #expect(FHIRDate.epochSeconds("2021-01-01T10:00:00+14:00") == Optional(utc - 50_400))
        #expect(FHIRDate.epochSeconds("2021-01-01T10:00:00-14:00") == Optional(utc + 50_400))
        #expect(FHIRDate.epochSeconds("2021-01-01T10:00:00-05:30") == Optional(utc + 19_800))
        #expect(FHIRDate.epochSeconds("2021-01-01T10:00:00Z") == Optional(utc))
    }

    @Test func numericDatesOutsideTheirRangeAreFindings() throws {
        let forge = try VerifyForge()
        let cases: [(String, String, String)] = [
            ("nbf", "-1e300", "NBF_OUT_OF_RANGE"), ("nbf", "1e400", "NBF_OUT_OF_RANGE"),
            ("nbf", "-1", "NBF_OUT_OF_RANGE"),
            ("nbf", "9223372036854775808", "NBF_OUT_OF_RANGE"), ("nbf", "1690000000000", "NBF_MILLISECONDS"),
            ("exp", "-1e300", "EXP_OUT_OF_RANGE"), ("exp", "1e20", "EXP_OUT_OF_RANGE"),
            ("exp", "1900000000000", "EXP_MILLISECONDS"),
        ]
        for (member, lexeme, code) in cases {
            var claims = VerifyForge.claims()
            claims[member] = .number(try #require(JSONNumber(lexeme)))
            let codes = try forge.codes([
                try forge.card(try forge.jws(claims: claims), "\(member)\(code).smart-health-card")
            ])
            #expect(codes.contains(code), "\(member) \(lexeme): \(codes.sorted())")
        }
        #expect(NumericDate(-1e300) == nil && NumericDate(.infinity) == nil && NumericDate(100_000_000_000) == nil)
        #expect(NumericDate(1_690_000_000.9)?.whole == 1_690_000_000)
        #expect(NumericDate(0)?.whole == 0)
    }

    @Test func anyClockValueIsDescribedAndJudgedWithoutTrapping() {
        for seconds in [Int64.min, Int64.min + 1, -62_135_596_801, -1, 0, 253_402_300_800, Int64.max - 1, Int64.max] {
            #expect(!Clock.describe(seconds).isEmpty)
            #expect(!Clock.todayUTC(seconds).isEmpty)
            let findings = BundleValidator.validate(VerifyForge.bundle(), now: seconds)
            #expect(
                findings.all.allSatisfy { [.dateInFuture, .dateBeforeBirth].contains($0.code) } || findings.all.isEmpty)
        }
        #expect(Clock.describe(0) == "1970-01-01 00:00:00 UTC")
        #expect(Clock.describe(-1) == "1969-12-31 23:59:59 UTC")
        #expect(Clock.describe(253_402_300_799) == "9999-12-31 23:59:59 UTC")
    }

    // MARK: JSON

    @Test func numberLexemesAreCheckedWhenMade() throws {
        for good in ["0", "-0", "1", "-1.5", "1e5", "1E+5", "1.0e-5", "1687450764.656", "4.50"] {
            #expect(JSONNumber(good)?.lexeme == good)
        }
        for bad in [
            "", "-", "+1", "01", "1.", ".5", "1e", "1e+", "NaN", "Infinity", "0x10", "1,000", " 1", "1 ", "1,\"x\":2",
            "٣",
        ] {
            #expect(JSONNumber(bad) == nil, "\(bad)")
        }
        #expect(JSONValue.integer(Int64.min).numberLexeme == "-9223372036854775808")
        // A notBefore that is no number cannot break the payload's JSON: it is written as a string.
        let payload = Payload(issuer: "https://a.example", notBefore: "1,\"x\":1", fhirBundle: VerifyForge.bundle())
        #expect(try JSONParser.parse(payload.minifiedBytes)["nbf"] == .string("1,\"x\":1"))
        #expect(throws: HealthCardError.self) { try Template.typedValue("1.2.3", as: .decimal) }
        #expect(try Template.typedValue("4.50", as: .decimal) == .number("4.50"))
    }

    @Test func objectsOfManyMembersParseAndLookUpByKey() throws {
        let count = 100_000
        var text = "{"
        for i in 0..<count { text += (i == 0 ? "" : ",") + "\"k\(i)\":\(i)" }
        text += "}"
        let object = try #require(try JSONParser.parse(text).objectValue)
        #expect(object.count == count)
        #expect(object["k0"] == .number("0") && object["k99999"] == .number("99999") && object["k100000"] == nil)
        #expect(object.keys.prefix(3) == ["k0", "k1", "k2"])
        // A duplicate far from its first occurrence is found.
        #expect(throws: HealthCardError.self) { try JSONParser.parse(String(text.dropLast()) + ",\"k5\":0}") }
        // The key index follows removals and replacements.
        var copy = object
        #expect(copy.removeValue(forKey: "k10") == .number("10"))
        copy["k11"] = "eleven"
        copy["new"] = .bool(true)
        #expect(
            copy["k10"] == nil && copy["k11"] == "eleven" && copy["new"] == .bool(true) && copy["k12"] == .number("12"))
        #expect(copy.count == count && copy.keys.last == "new")
        var small: JSONObject = ["a": .number("1")]
        for i in 0..<20 { small["m\(i)"] = .integer(Int64(i)) }
        for i in 0..<20 where i % 2 == 0 { small["m\(i)"] = nil }
        #expect(small.keys == ["a"] + (0..<20).filter { $0 % 2 == 1 }.map { "m\($0)" })
        #expect((0..<20).allSatisfy { small["m\($0)"] == ($0 % 2 == 1 ? .integer(Int64($0)) : nil) })
    }

    // MARK: budgets

    @Test func filesOverTheirBudgetAreRefusedBeforeTheyAreRead() throws {
        let dir = try TestSupport.tempDir("budget")
        let big = dir.appendingPathComponent("big.smart-health-card")
        try Data(repeating: 0x20, count: InputBudget.cardFileBytes + 1).write(to: big)
        #expect(throws: HealthCardError.self) { try FileIO.read(big.path, maxBytes: InputBudget.cardFileBytes) }
        do {
            _ = try FileIO.read(big.path, maxBytes: 1000)
        } catch let error as HealthCardError {
            #expect(
                error.kind == .input && error.message.contains("1000 bytes")
                    && error.message.contains("\(InputBudget.cardFileBytes + 1) bytes"))
        }
        #expect(
            try FileIO.read(big.path, maxBytes: InputBudget.cardFileBytes + 1).count == InputBudget.cardFileBytes + 1)
        let forge = try VerifyForge()
        #expect(try forge.codes([big.path]) == ["FILE_TOO_LARGE"])
        // A file over budget met while walking a folder is reported when it is of a kind verify reads.
        let folder = dir.appendingPathComponent("walk")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(("shc:/" + String(repeating: "5", count: InputBudget.cardFileBytes)).utf8).write(
            to: folder.appendingPathComponent("qr.txt"))
        try Data(repeating: 0x41, count: InputBudget.cardFileBytes + 1).write(
            to: folder.appendingPathComponent("notes.bin"))
        let reports = try forge.verify([folder.path])
        #expect(reports.flatMap(\.findings).map(\.code).filter { $0 != .jwksNoKeys } == [.fileTooLarge])
    }

    @Test func cardFilesCheckAtMostTheirBudgetOfCredentials() throws {
        let forge = try VerifyForge()
        let jws = try forge.jws(claims: VerifyForge.claims())
        let many = JSONWriter.minified(
            .object([
                "verifiableCredential": .array(
                    Array(repeating: .string(jws), count: InputBudget.credentialsPerFile + 3))
            ]))
        let reports = try forge.verify([try forge.write(many, "many.smart-health-card")])
        let cards = reports.filter { $0.source == .smartHealthCard }
        #expect(cards.count == InputBudget.credentialsPerFile)
        #expect(cards.flatMap(\.findings).filter(\.isError).map(\.code) == [.fileTooLarge])
    }

    /// A file of payloads that each inflate to about 4 MiB is checked until its payloads reach 16 MiB.
    @Test func cardFilesCheckAtMostTheirBudgetOfPayloadBytes() throws {
        let forge = try VerifyForge()
        var bundle = VerifyForge.bundle(doses: 1).objectValue ?? [:]
        VerifyForge.changing(&bundle, "Immunization") {
            $0["lotNumber"] = .string(String(repeating: "a", count: 4_100_000))
        }
        let jws = try forge.jws(claims: VerifyForge.claims(bundle: .object(bundle)))
        let file = JSONWriter.minified(
            .object(["verifiableCredential": .array(Array(repeating: .string(jws), count: 6))]))
        #expect(file.count < InputBudget.cardFileBytes)
        let cards = try forge.verify([try forge.write(file, "big-payloads.smart-health-card")]).filter {
            $0.source == .smartHealthCard
        }
        #expect(cards.count == 5)
        #expect(cards.allSatisfy { $0.payloadBytes > 4_000_000 })
        let budget = try #require(cards.last?.findings.first { $0.code == .fileTooLarge })
        #expect(budget.message.contains("16 MiB after 5"), "\(budget.message)")
    }

    @Test func csvRecordsAndNDJSONLinesHaveABudget() throws {
        let dir = try TestSupport.tempDir("csv-budget")
        // A quote that never closes in a large file is refused after one record's budget.
        let path = try TestSupport.write(
            "a,b\n1,\"" + String(repeating: "x", count: InputBudget.csvRecordBytes + 10), to: "open.csv", in: dir)
        let reader = try CSVReader(path: path)
        _ = try reader.next()
        do {
            _ = try reader.next()
            Issue.record("an unterminated record over the budget was read")
        } catch let error as HealthCardError {
            #expect(error.message.contains("longer than 1 MiB"), "\(error.message)")
        }
        // As many empty fields (commas) as the budget allows, and no more.
        let commas = try TestSupport.write(
            String(repeating: ",", count: InputBudget.csvRecordBytes + 1), to: "commas.csv", in: dir)
        #expect(throws: HealthCardError.self) { _ = try CSVReader(path: commas).next() }
        // An NDJSON line over its budget is one rejected record; the lines around it are read.
        let bundle = JSONWriter.minifiedString(VerifyForge.bundle(doses: 1))
        let ndjson = try TestSupport.write(
            bundle + "\n" + String(repeating: " ", count: InputBudget.bundleBytes + 1) + "x\n\r\n" + bundle,
            to: "lines.NDJSON", in: dir)
        let records = try BundleInput.records(path: ndjson)
        #expect(records.map(\.source) == ["\(ndjson):1", "\(ndjson):2", "\(ndjson):4"])
        #expect(records.map { $0.errors.isEmpty } == [true, false, true])
        #expect(records.map(\.id) == ["lines-1", "lines-2", "lines-3"])
        #expect(records[1].errors.first?.message.contains("longer than 16 MiB") == true)
    }

    /// A patient with more rows than the budget is one rejected record, and its rows are not read; the
    /// patients around it are issued as usual.
    @Test func aPatientWithMoreRowsThanTheBudgetIsRejected() throws {
        let dir = try TestSupport.tempDir("rows-budget")
        let template = try Template(
            bytes: try FileIO.read(BatchTestSupport.template), source: BatchTestSupport.template)
        var csv = "recip_id,recip_first_name,recip_last_name,recip_dob,admin_date,cvx,vax_event_id\n"
        csv += "A,Ada,Testperson,1960-01-01,2021-01-15,207,E-A\n"
        for n in 0...InputBudget.csvRowsPerPatient { csv += "B,Bob,Testperson,1960-01-01,2021-01-15,207,E-\(n)\n" }
        csv += "C,Cy,Testperson,1960-01-01,2021-01-15,207,E-C\n"
        let path = try TestSupport.write(csv, to: "many.csv", in: dir)
        let input = try CSVTemplateInput(path: path, template: template)
        let cursor = input.cursor()
        var patients: [CSVTemplateInput.PatientRows] = []
        while let patient = try cursor.next() { patients.append(patient) }
        #expect(patients.map(\.id) == ["A", "B", "C"])
        #expect(patients.map(\.rows.count) == [1, 0, 1])
        #expect(patients[1].errors.first?.message.contains("more than \(InputBudget.csvRowsPerPatient) rows") == true)
        #expect(patients[0].inputBytes == "A,Ada,Testperson,1960-01-01,2021-01-15,207,E-A\n".utf8.count)
    }

    /// `.NDJSON` (any case) is NDJSON: each line is a record, in the library and through the CLI.
    @Test func inputExtensionsAreMatchedInAnyCase() throws {
        let dir = try TestSupport.tempDir("upper")
        let key = try Self.freshKey(in: dir)
        let line = JSONWriter.minifiedString(VerifyForge.bundle(doses: 1))
        let input = try TestSupport.write(line + "\n" + line + "\n", to: "TWO.NDJSON", in: dir)
        #expect(try BundleInput.records(path: input).count == 2)
        let out = dir.appendingPathComponent("out")
        let run = try TestSupport.cli([
            "issue", "--issuer", "https://a.example", "--key", key, "--out", out.path, "--nbf", "1690000000", input,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try TestSupport.report(out).map { $0["id"]?.stringValue } == ["TWO-1", "TWO-2"])
    }

    // MARK: threads and secrets

    /// The stop flag belongs to a run: a run given a stop request already made stops before its first
    /// record; a run with its own request finishes.
    @Test func aStopRequestStopsOnlyItsRun() throws {
        let dir = try TestSupport.tempDir("stop")
        let key = try P256Key.generate()
        let line = JSONWriter.minifiedString(VerifyForge.bundle(doses: 1))
        let input = try TestSupport.write(
            Array(repeating: line, count: 5).joined(separator: "\n"), to: "in.ndjson", in: dir)
        let settings = IssueSettings(issuer: "https://a.example", notBefore: 1_690_000_000)
        func batch(_ name: String) -> BatchIssuer {
            let batch = BatchIssuer(outDir: dir.appendingPathComponent(name).path, jobs: 2) {
                try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: SystemWallClock())
            }
            batch.qr = QRSettings(makeQR: false)
            return batch
        }
        let stopped = StopRequest()
        stopped.request(signal: SIGINT)
        let first = try batch("a").run([.bundles(path: input)], stop: stopped)
        #expect(first.interruptedBy == SIGINT && first.issued + first.rejected < 5)
        let second = try batch("b").run([.bundles(path: input)])
        #expect(second.interruptedBy == 0 && second.issued == 5)
    }

    @Test func secretsAreReadIntoWipedBuffersAndTheRidNeverComesFromAFailedHMAC() throws {
        let dir = try TestSupport.tempDir("secret")
        let path = try TestSupport.write("  GWdbF5850vxNt3HhHFl0dRvvN--C6rD77obJgGjK_Zg\n", to: "rid.secret", in: dir)
        chmod(path, 0o600)
        let secret = try RIDSecretFile.read(path)
        #expect(
            secret.text.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                == "GWdbF5850vxNt3HhHFl0dRvvN--C6rD77obJgGjK_Zg")
        #expect(try RID.derive(secret: secret, kid: TestBundles.specKid, patientID: "userid-00") == "MKyCxh7p6uQ")
        for bad in ["", "short", "not base64url at all!!!!!!", "GWdbF5850vxNt3HhHFl0dRvvN--C6rD77obJgGjK_Zg="] {
            #expect(throws: HealthCardError.self) { try RIDSecret(text: bad) }
        }
        let big = try TestSupport.write(
            String(repeating: "A", count: InputBudget.secretFileBytes + 1), to: "big.secret", in: dir)
        chmod(big, 0o600)
        #expect(throws: HealthCardError.self) { try RIDSecretFile.read(big) }
        // SecretBytes: exact contents, trimming in new buffers.
        let bytes = try SecretBytes.read(path: path)
        #expect(bytes.count == 46)
        #expect(bytes.trimmingFinalNewline().count == 45 && bytes.trimmingWhitespace().count == 43)
        #expect(bytes.slice(2, 4).withUnsafeBytes { Array($0) } == Array("GWdb".utf8))
        // A file holding more than its size said (a kernel file: size 0, text inside) is named as such, not as
        // over a budget of 0 bytes.
        let kernel = try #require(throws: HealthCardError.self) { try SecretBytes.read(path: "/proc/self/status") }
        #expect(kernel.kind == .io && kernel.message.contains("holds more than the 0 bytes its size said"), "\(kernel)")
        // Keys still load from a secret buffer, and the PEM labels are read from the bytes.
        let keyPath = try TestSupport.demoKey(in: dir)
        #expect(try KeyFile.load(path: keyPath, requirePrivate: true).hasPrivateKey)
        let pem = try VerifyFixtures.bytes(URL(fileURLWithPath: keyPath))
        #expect(pem.withUnsafeBytes { PEMLabel.all(in: $0) } == ["PRIVATE KEY"])
        #expect(pem.withUnsafeBytes { PEMLabel.contains(Array("BEGIN".utf8), in: $0) })
        #expect(SecureHeap.start())
    }

    /// A process that holds keys turns off core dumps and tracing (the commands that load keys do this
    /// first; here the test process itself).
    @Test func protectingSecretsTurnsOffCoreDumps() {
        #expect(ProcessProtection.protectSecrets())
        #expect(!ProcessProtection.isDumpable)
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_CORE.rawValue), &limit)
        #expect(limit.rlim_cur == 0)
    }
}
