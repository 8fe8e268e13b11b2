import HealthCardsCore
import HealthCardsVerify
import Testing

/// The one error model as a client sees it (issue 31): rule codes are values a client can add to without
/// breaking a `switch`, and a refused setting keeps the specific rule code that `verify` gives the same problem.
@Suite struct ErrorModelTests {
    /// `Payload.validateIssuer` (and so `CardIssuer`) throws the issuer rule's own code, not the general
    /// CONFIGURATION_INVALID: a program that refuses a setting can say which rule it broke.
    @Test(arguments: [
        ("http://issuer.example.org", "ISS_NOT_HTTPS"),
        ("https://issuer.example.org/", "ISS_TRAILING_SLASH"),
        ("", "ISS_MISSING"),
        ("https://Issuer.example.org", "ISS_NOT_CANONICAL"),
        ("https://issuer.example.org?x=1", "ISS_MALFORMED"),
    ])
    func refusedIssuerKeepsItsCode(iss: String, code: String) throws {
        do {
            try Payload.validateIssuer(iss)
            Issue.record("\(iss) was accepted")
        } catch {
            #expect(error.code?.rawValue == code, "\(iss): \(error)")
            #expect(error.reportedCode.rawValue == code)
            #expect(error.kind == .configuration)
        }
    }

    /// The settings path end to end: `CardIssuer` refuses an http issuer with ISS_NOT_HTTPS.
    @Test func cardIssuerRefusesHTTPIssuerWithItsCode() throws {
        let key = try P256PrivateKey(pem: try Fixtures.bytes(Fixtures.demoKey), source: "demo key")
        let settings = IssueSettings(issuer: "http://issuer.example.org", notBefore: 1_699_999_000)
        do {
            _ = try CardIssuer(signer: try ES256Signer(key: key), settings: settings, clock: FixedWallClock(1_700_000_000))
            Issue.record("an http issuer was accepted")
        } catch let error as HealthCardError {
            #expect(error.reportedCode == .issNotHTTPS, "\(error)")
        }
    }

    /// Codes are values: every documented code is found by its text, texts are unique, and a code the library
    /// does not know is nil from `known` but can still be made by a client (an error by default).
    @Test func ruleCodesAreExtensibleValues() {
        #expect(RuleCode.known("SIG_INVALID") == .sigInvalid)
        #expect(RuleCode.known("NO_SUCH_CODE") == nil)
        #expect(Set(RuleCode.allCases.map(\.rawValue)).count == RuleCode.allCases.count)
        #expect(RuleCode.allCases.allSatisfy { RuleCode.known($0.rawValue) == $0 })
        let mine = RuleCode(rawValue: "MY_APP_RULE")
        #expect(mine.severity == .error)
        #expect(RuleCode.sigNotChecked.severity == .warning)
        #expect(RuleCode.sigInvalid.severity == .error)
        // A client's switch over codes compiles with a default and matches static members.
        func label(_ code: RuleCode) -> String {
            switch code {
            case .sigInvalid: return "forged or altered"
            case .expExpired: return "expired"
            default: return code.rawValue
            }
        }
        #expect(label(.sigInvalid) == "forged or altered" && label(mine) == "MY_APP_RULE")
    }
}
