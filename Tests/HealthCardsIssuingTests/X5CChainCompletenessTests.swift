import Foundation
import Testing

@testable import HealthCardsCore
@testable import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsTestSupport

/// An `x5c` chain verifies only when it is complete: each certificate signed by the next, the last one a
/// self-signed root whose own signature verifies. A lone leaf or a chain without its root is `JWK_X5C_CHAIN`
/// (an error on the key set and, through `KEY_SET_INVALID`, on the card), and the key set's note never says
/// "verified" of it. Fixtures: `Tests/Fixtures/x5c-chains/` (README there).
@Suite struct X5CChainCompletenessTests {
    static let dir = VerifyFixtures.fixtures.appendingPathComponent("x5c-chains")
    static let issuer = "https://issuer.example.org"
    static let now: Int64 = 1_700_000_100

    static func keySet(_ name: String) -> String { dir.appendingPathComponent("jwks-\(name).json").path }
    static func card(_ name: String) -> String { dir.appendingPathComponent("card-\(name).smart-health-card").path }

    /// The key set's and the card's reports for variant `name`, the key set bound to the card's issuer.
    static func verify(_ name: String) throws -> (keySet: CredentialReport, card: CredentialReport) {
        let verifier = try FileVerifier(keySets: ["\(issuer)=\(keySet(name))"], now: now)
        let set = try #require(verifier.keySetReports.first)
        let card = try #require(try verifier.verify([card(name)]).last)
        return (set, card)
    }

    static func chainDERs(_ name: String) throws -> [[UInt8]] {
        let json = try JSONParser.parse(try VerifyFixtures.bytes(URL(fileURLWithPath: keySet(name))))
        return (json["keys"]?[0]?["x5c"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(Base64URL.decodeStandard) }
    }

    /// The complete chain (leaf, intermediate, root) is the control: it verifies, and the note says up to which root.
    @Test func completeChainVerifies() throws {
        let (set, card) = try Self.verify("control")
        #expect(set.findings.isEmpty, "\(set.findings)")
        #expect(set.notes.contains { $0.contains("chain of 3 certificate(s) verified by OpenSSL up to its self-signed root /CN=Test Root") },
                "\(set.notes)")
        #expect(card.findings.isEmpty, "\(card.findings)")
        #expect(card.signature == .verified && card.isValid)
    }

    /// A leaf alone, issued by CN=Test Int: nothing checked who signed it.
    @Test func leafAloneIsNotAVerifiedChain() throws {
        let (set, card) = try Self.verify("leaf-only-selfsigned-no")
        let chain = try #require(set.findings.first { $0.code == .jwkX5CChain }, "\(set.findings)")
        #expect(chain.isError && chain.location.path == "keys[0].x5c")
        #expect(chain.message.contains("the leaf certificate (/CN=Leaf) is issued by /CN=Test Int, which is not in the chain"),
                "\(chain.message)")
        #expect(chain.message.contains("up to the self-signed root certificate"), "\(chain.message)")
        #expect(!set.notes.contains { $0.contains("verified") }, "\(set.notes)")
        #expect(card.findings.map(\.code).contains(.keySetInvalid), "\(card.findings)")
        #expect(!card.isValid)
    }

    /// Leaf and intermediate without the root: the intermediate's issuer (CN=Test Root) is missing.
    @Test func chainWithoutItsRootIsRefused() throws {
        let (set, card) = try Self.verify("no-root")
        let chain = try #require(set.findings.first { $0.code == .jwkX5CChain }, "\(set.findings)")
        #expect(chain.message.contains("certificate 2, the last one (/CN=Test Int) is issued by /CN=Test Root, which is not in the chain"),
                "\(chain.message)")
        #expect(!set.notes.contains { $0.contains("verified") }, "\(set.notes)")
        #expect(!card.isValid)
        // The same chain with its root verifies: the root is what was missing.
        let complete = try Self.chainDERs("control")
        let withRoot = try Self.chainDERs("no-root") + [complete[2]]
        #expect(try X509Chain(der: withRoot, source: "t").subjects.last == "/CN=Test Root")
    }

    /// A last certificate that names itself as issuer but whose self-signature does not verify is no root.
    @Test func rootWhoseSelfSignatureFailsIsRefused() throws {
        var ders = try Self.chainDERs("control")
        ders[2][ders[2].count - 1] ^= 0x01  // the last byte of the root's ECDSA signature
        do {
            _ = try X509Chain(checkingDER: ders, source: "t")
            Issue.record("a root with a broken self-signature was accepted")
        } catch let failure {
            #expect(failure.kind == .chain)
            #expect(failure.message.contains("self-signature does not verify"), "\(failure.message)")
        }
    }

    /// The spec's own example key set carries its whole chain (leaf, CA, root): it still verifies.
    @Test func specExampleChainStillVerifies() throws {
        let json = try VerifyFixtures.bytes(TestSupport.spec("issuer/.well-known/jwks.json"))
        let result = KeySetCheck.check(
            bytes: json, file: "jwks.json", issuer: "https://spec.smarthealth.cards/examples/issuer", now: 1_640_000_000)
        #expect(result.findings.isEmpty, "\(result.findings)")
        #expect(result.notes.contains { $0.contains("chain of 3 certificate(s) verified by OpenSSL up to its self-signed root /CN=SMART Health Card Example Root CA") },
                "\(result.notes)")
    }
}
