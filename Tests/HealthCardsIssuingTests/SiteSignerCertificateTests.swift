import Foundation
import Testing

import HealthCardsCore
import HealthCardsSite
import HealthCardsTestSupport

/// `issue --site` refuses, before signing, a key the site publishes with an x5c leaf certificate not valid at the
/// signing time: every verifier would reject those cards (`JWK_X5C_VALIDITY` is an error on a card). A trial signed
/// a card with an expired leaf, which `verify` then called invalid.
@Suite struct SiteSignerCertificateTests {
    /// The spec's example site: its key set (key EBKOr… carries an example chain whose leaf is valid 2021-06-01 to
    /// 2022-06-01) and a record naming the spec's issuer.
    static func specSite() throws -> PublishedSite {
        let dir = try TestSupport.tempDir("site-x5c-signer")
        let wellKnown = dir.appendingPathComponent(".well-known")
        try FileManager.default.createDirectory(at: wellKnown, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: TestSupport.spec("issuer/.well-known/jwks.json").path,
            toPath: wellKnown.appendingPathComponent("jwks.json").path)
        try FileIO.writeAtomically(
            SiteRecord(issuer: "https://spec.smarthealth.cards/examples/issuer").fileBytes,
            to: dir.appendingPathComponent(SiteRecord.fileName).path, access: .ownerOnly)
        return try PublishedSite(root: dir.path)
    }

    @Test func aKeyWhoseLeafIsNotValidNowIsRefused() throws {
        let site = try Self.specSite()
        let issuer = "https://spec.smarthealth.cards/examples/issuer"
        let kid = "EBKOr72QQDcTBUuVzAzkfBTGew0ZA16GuWty64nS-sw"
        #expect {
            try site.checkSigner(issuer: issuer, kid: kid, now: 1_700_000_000)
        } throws: { error in
            let error = error as? HealthCardError
            return error?.code == .jwkX5CValidity && error?.text.contains("not now") == true
                && error?.text.contains("every verifier would reject these cards") == true
        }
        // Within the leaf's validity, and for the key without x5c, signing goes on.
        try site.checkSigner(issuer: issuer, kid: kid, now: 1_640_000_000)
        try site.checkSigner(issuer: issuer, kid: "3Kfdg-XwP-7gXyywtUfUADwBumDOPKMQx-iELL11W9s", now: 1_700_000_000)
    }
}
