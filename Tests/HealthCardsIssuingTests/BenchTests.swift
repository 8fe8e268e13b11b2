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

/// The benchmark executable runs on a small synthetic batch and writes every figure (no timing is judged).
@Suite struct BenchTests {
    @Test func benchRunsAndWritesEveryFigure() throws {
        let dir = try TestSupport.tempDir()
        let json = dir.appendingPathComponent("bench-results.json")
        let run = try TestSupport.run(BatchTestSupport.bench, [
            "run", "--patients", "60", "--scale", "150", "--work", dir.appendingPathComponent("work").path,
            "--json", json.path, "--template", BatchTestSupport.template, "--healthcards", TestSupport.healthcards,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let result = try JSONParser.parse(try VerifyFixtures.bytes(json))
        #expect(result["patients"] == .number("60"))
        #expect(result["stageCards"] == .number("60"))
        let stages = try #require(result["stageMicrosPerCard"]?.objectValue)
        #expect(stages.keys == ["csvRead", "templateMinimize", "validate", "payloadJSON", "deflate", "sign", "selfCheck", "qr", "png", "fileWrite", "total", "totalWithoutQR"])
        #expect(stages.allSatisfy { ($0.value.doubleValue ?? -1) > 0 })
        let endToEnd = try #require(result["endToEnd"]?.arrayValue)
        let cores = BatchIssuer.activeCores()
        let expectedRuns = Set([true, false].flatMap { qr in Set([1, cores]).map { "\(qr) \($0)" } })
        #expect(Set(endToEnd.map { "\($0["qr"] == .bool(true)) \($0["jobs"]!.numberLexeme!)" }) == expectedRuns)
        for figure in endToEnd + (result["scale"]?.arrayValue ?? []) {
            #expect((figure["cardsPerSecond"]?.doubleValue ?? 0) > 0)
            #expect((figure["peakRSSMB"]?.doubleValue ?? 0) > 1)
        }
        #expect(result["scale"]?[0]?["rows"]?.doubleValue.map { $0 >= 100 } == true)
        #expect(result["pngSettings"]?.arrayValue?.count == 10)
        #expect((result["pngBytes"]?.doubleValue ?? 0) > 500)
        #expect(result["targets"]?["jobsSpeedup"] == .number("1.8"))
        #expect(run.stdout.contains("end-to-end `healthcards issue` on 60 patients"))
        // Printed cards: in process, and `issue --pdf` end to end for 1 and all cores.
        let pdf = try #require(result["pdf"])
        #expect(pdf["cards"] == .number("60"))
        #expect((pdf["pagesPerCard"]?.doubleValue ?? 0) >= 1)
        #expect((pdf["pagesPerSecondOneCore"]?.doubleValue ?? 0) > 0)
        #expect(pdf["microsPerCard"]?.objectValue?.keys == ["readBack", "layout", "pdf"])
        let pdfRuns = try #require(pdf["endToEnd"]?.arrayValue)
        #expect(Set(pdfRuns.compactMap { $0["jobs"]?.numberLexeme }) == Set(Set([1, cores]).map(String.init)))
        for figure in pdfRuns {
            // Every card got its PDF, of one page or more.
            #expect((figure["pages"]?.doubleValue ?? 0) >= 60)
            #expect((figure["pagesPerSecondPerCore"]?.doubleValue ?? 0) > 0)
        }
    }

    /// `healthcards-bench worst --quick`: every worst case runs to an exit status of 0 or 1 (a finding or a
    /// rejected record, never a trap or a signal), and every figure is written.
    @Test func worstCasesEndWithAFindingOrSuccess() throws {
        let dir = try TestSupport.tempDir()
        let json = dir.appendingPathComponent("bench-worst.json")
        let run = try TestSupport.run(BatchTestSupport.bench, [
            "worst", "--quick", "--work", dir.appendingPathComponent("work").path, "--json", json.path,
            "--template", BatchTestSupport.template, "--healthcards", TestSupport.healthcards,
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let cases = try #require(try JSONParser.parse(try VerifyFixtures.bytes(json))["cases"]?.arrayValue)
        #expect(cases.compactMap { $0["name"]?.stringValue } == [
            "card file", "JWS file", "QR text file", "object members", "PNG", "PNG over budget", "PNG, no symbol", "JPEG",
            "JPEG, most scans", "JPEG over budget", "key set", "CRL", "issue .json", "issue .ndjson", "issue CSV record",
        ])
        for item in cases {
            let status = item["exitStatus"]?.numberLexeme
            #expect(status == "0" || status == "1", "\(item)")
            #expect((item["peakRSSMB"]?.doubleValue ?? 0) > 1)
        }
    }
}
