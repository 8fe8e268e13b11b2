import Foundation
import Testing

import HealthCardsCore
@testable import HealthCardsServer
import HealthCardsTestSupport

/// The `coding.system` of the rule code in the server's `OperationOutcome`s was a made-up GitHub URL
/// (`https://github.com/healthcards/healthcards/docs/error-codes.md`, a repository that is not the project's). It is
/// the project's own `urn:uuid:` (docs/error-codes.md, "The code system's URI"): a well-formed RFC 9562 version 4
/// UUID URN, the same in every answer and in the docs.
@Suite struct OperationOutcomeSystemTests {
    static let system = "urn:uuid:15cfebe7-d4cb-4779-821d-cf9d0e763e4f"

    @Test func theRuleCodeSystemIsTheProjectsUUIDURN() throws {
        for (status, code, rule) in [
            (400, "invalid", RuleCode.operationBody), (401, "login", .operationUnauthorized),
            (403, "forbidden", .operationForbidden), (404, "not-found", .operationUnknownPatient),
            (503, "transient", .operationUnavailable),
        ] {
            let answer = HealthCardsIssueService.operationOutcome(status, code: code, rule: rule, "why", outcome: "x")
            let json = try JSONParser.parse(answer.body)
            let coding = try #require(json["issue"]?[0]?["details"]?["coding"]?[0])
            #expect(coding["system"] == .string(Self.system), "\(coding)")
            #expect(coding["code"] == .string(rule.rawValue))
            #expect(!String(decoding: answer.body, as: UTF8.self).contains("github.com"))
        }
        // RFC 9562: 8-4-4-4-12 lowercase hex, version 4, variant 10xx.
        let uuid = Array(Self.system.dropFirst("urn:uuid:".count))
        #expect(uuid.count == 36 && [8, 13, 18, 23].allSatisfy { uuid[$0] == "-" })
        #expect(uuid.enumerated().allSatisfy { [8, 13, 18, 23].contains($0.offset) || "0123456789abcdef".contains($0.element) })
        #expect(uuid[14] == "4" && "89ab".contains(uuid[19]))
        let doc = try String(
            contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("docs/error-codes.md"), encoding: .utf8)
        #expect(doc.contains("`system` is **`\(Self.system)`**"))
        let server = try String(
            contentsOf: VerifyFixtures.repoRoot.appendingPathComponent("docs/server.md"), encoding: .utf8)
        #expect(server.contains(Self.system), "docs/server.md names the system of its OperationOutcomes")
    }
}
