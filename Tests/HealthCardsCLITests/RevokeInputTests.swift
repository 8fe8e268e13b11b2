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

@Suite struct RevokeInputTests {
    /// An empty --id (an unset shell variable) would add a permanent junk rid to a list that never shrinks.
    @Test func emptyIDIsRefusedAndNothingChanges() throws {
        let dir = try TestSupport.tempDir()
        let key = try TestSupport.demoKey(in: dir)
        let site = dir.appendingPathComponent("site").path
        let secret = dir.appendingPathComponent("rid.secret").path
        #expect(try TestSupport.cli(["keygen", "--rid-secret", secret]).status == 0)
        #expect(try TestSupport.cli(["site", "--out", site, key, "--issuer", "https://issuer.example.org", "--crl"]).status == 0)
        let kid = JWK(key: try P256Key.load(pem: try VerifyFixtures.bytes(URL(fileURLWithPath: key)), source: key, requirePrivate: true)).kid
        let crl = URL(fileURLWithPath: "\(site)/.well-known/crl/\(kid).json")
        let before = try VerifyFixtures.bytes(crl)
        for id in ["", "  "] {
            let run = try TestSupport.cli(["revoke", "--site", site, "--key", key, "--rid-secret", secret, "--id", id])
            #expect(run.status == 2)
            #expect(run.stderr.contains("--id is empty"))
        }
        #expect(try VerifyFixtures.bytes(crl) == before)
    }
}
