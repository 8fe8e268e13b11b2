import Foundation
import Testing

import HealthCardsCore
import HealthCardsTestSupport

/// CVX codes that exist in the CDC list but do not name a vaccine given.
@Suite struct ValidationCVXTests {
    func findings(cvx: String) throws -> BundleValidator.Findings {
        let bundle = VerifyForge.bundle(doses: 1)
        let text = JSONWriter.minifiedString(bundle).replacingOccurrences(of: "\"code\":\"207\"", with: "\"code\":\"\(cvx)\"")
        #expect(text.contains("\"code\":\"\(cvx)\""))
        return BundleValidator.validate(try BundleMinimizer.minimize(try JSONParser.parse(text)), now: Clock.nowSeconds())
    }

    @Test func noVaccineAdministeredIsAnError() throws {
        let f = try findings(cvx: "998")
        #expect(f.errors.map(\.code).contains(.codeCVXNoVaccine))
    }

    @Test func unknownVaccineIsAWarning() throws {
        let f = try findings(cvx: "999")
        #expect(f.errors.isEmpty)
        #expect(f.warnings.map(\.code).contains(.codeCVXUnspecified))
    }

    @Test func codeOutsideTheListIsAnError() throws {
        let f = try findings(cvx: "777")
        #expect(f.errors.map(\.code).contains(.codeCVXUnknown))
        #expect(try findings(cvx: "208").errors.isEmpty)
    }
}
