import Foundation
import Testing

import HealthCardsCore
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsVerify
import HealthCardsTestSupport

/// What `verify` says about the paths and revocation lists it is given, read from the real command's output: a
/// folder given with a trailing slash names its files with one `/`, a revocation list given alone is read with
/// the key set beside it (or named for what it is), and the REVOKED verdict ends in a sentence.
@Suite struct VerifyPathsAndListsTests {
    static let spec = "https://spec.smarthealth.cards/examples/issuer"
    static let specSite = TestSupport.spec("issuer").path
    static let specList = TestSupport.spec("issuer/.well-known/crl/3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s.json")

    /// `verify DIR/` printed `DIR//file`.
    @Test func aFolderWithATrailingSlashNamesItsFilesWithOneSlash() throws {
        let dir = try TestSupport.tempDir("verify-slash")
        try FileManager.default.copyItem(
            at: TestSupport.spec("example-00-e-file.smart-health-card"), to: dir.appendingPathComponent("a.smart-health-card"))
        for given in [dir.path + "/", dir.path + "//"] {
            let run = try TestSupport.cli(["verify", "--json", "--now", "1700000000", given])
            let card = try #require(try JSONParser.parse(run.stdout)["credentials"]?[0])
            #expect(card["file"] == .string(dir.path + "/a.smart-health-card"), "\(given): \(card["file"] ?? .null)")
            let text = try TestSupport.cli(["verify", "--now", "1700000000", given])
            #expect(!text.stdout.contains("//a.smart-health-card"), "\(text.stdout)")
            #expect(text.stdout.contains(dir.path + "/a.smart-health-card"), "\(text.stdout)")
        }
    }

    /// The REVOKED message was "…, which revokes cards …, the entry that decided." (a fragment).
    @Test func theRevokedMessageIsASentence() throws {
        let run = try TestSupport.cli([
            "verify", "--json", "--jwks", "\(Self.spec)=\(Self.specSite)", "--now", "1700000000",
            VerifyFixtures.cases.appendingPathComponent("crl-rid-timestamp-ms/example-03-e-file.smart-health-card").path,
        ])
        #expect(run.status == 1)
        let card = try #require(try JSONParser.parse(run.stdout)["credentials"]?[0])
        let message = try #require(
            card["findings"]?.arrayValue?.first { $0["code"] == "REVOKED" }?["message"]?.stringValue, "\(card)")
        #expect(!message.contains(", the entry that decided"), "\(message)")
        #expect(message.contains("\"vwAjHdarZuc.1687450765\", which revokes cards with this rid issued before"), "\(message)")
        #expect(message.contains(". That entry decided the verdict; the holder needs a new card from the issuer."), "\(message)")
    }

    /// A revocation list given alone was "FILE_UNKNOWN_TYPE … nothing to check", though the README says verify checks
    /// revocation lists: in its site's crl/ folder it is checked with the key set beside it (one report, naming the
    /// list); alone, it is CRL_WITHOUT_KEY_SET, saying what it is; with the key set given as --jwks, that key set's
    /// report stands for it.
    @Test func aRevocationListIsReadWithItsKeySet() throws {
        let beside = try TestSupport.cli(["verify", "--json", "--now", "1700000000", Self.specList.path])
        let json = try JSONParser.parse(beside.stdout)
        let all = (json["keySets"]?.arrayValue ?? []) + (json["other"]?.arrayValue ?? [])
        #expect(!all.contains { Self.codes($0).contains("FILE_UNKNOWN_TYPE") }, "\(beside.stdout)")
        let report = try #require(all.first { $0["source"] == "key-set" }, "\(beside.stdout)")
        // The key set's one finding is its example x5c leaf, expired in 2022 (JWK_X5C_VALIDITY, a warning on the key
        // set); the list itself is sound.
        #expect(beside.status == 0 && Self.codes(report) == ["JWK_X5C_VALIDITY"], "\(beside.stdout)")
        #expect(report["file"] == .string(TestSupport.spec("issuer/.well-known/jwks.json").path))
        let notes = report["notes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(notes.contains { $0.contains("is a revocation list (kid '3Kfdg") && $0.contains("ctr 1, 4 entries") }, "\(notes)")

        // The same list and its key set in one walk: one report.
        let walked = try TestSupport.cli(["verify", "--json", "--now", "1700000000", Self.specSite])
        let walkedJSON = try JSONParser.parse(walked.stdout)
        let walkedAll = (walkedJSON["keySets"]?.arrayValue ?? []) + (walkedJSON["other"]?.arrayValue ?? [])
        #expect(walkedAll.filter { $0["source"] == "key-set" }.count == 1, "\(walked.stdout)")

        let dir = try TestSupport.tempDir("verify-crl")
        let alone = dir.appendingPathComponent("list.json")
        try FileManager.default.copyItem(at: Self.specList, to: alone)
        let run = try TestSupport.cli(["verify", alone.path])
        #expect(run.status == 1)
        #expect(!run.stdout.contains("FILE_UNKNOWN_TYPE"), "\(run.stdout)")
        #expect(run.stdout.contains("error CRL_WITHOUT_KEY_SET"), "\(run.stdout)")
        #expect(run.stdout.contains("is a revocation list (kid '3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s', ctr 1, 4 entries)"))
        #expect(run.stdout.contains("--jwks"), "\(run.stdout)")

        let given = try TestSupport.cli([
            "verify", "--json", "--jwks", "\(Self.spec)=\(Self.specSite)", "--now", "1700000000", Self.specList.path,
        ])
        let givenJSON = try JSONParser.parse(given.stdout)
        #expect(givenJSON["keySets"]?.arrayValue?.count == 1, "\(given.stdout)")
        let givenOthers = givenJSON["other"]?.arrayValue ?? []
        #expect(givenOthers.isEmpty, "\(given.stdout)")
        #expect(!given.stdout.contains("NOTHING_TO_CHECK") && !given.stdout.contains("FILE_UNKNOWN_TYPE"), "\(given.stdout)")
    }

    static func codes(_ report: JSONValue) -> [String] {
        (report["findings"]?.arrayValue ?? []).compactMap { $0["code"]?.stringValue }
    }
}
