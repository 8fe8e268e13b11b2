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

/// Keys belong to one issuer: a key verifies a card only when it comes from the key set of the card's
/// `iss` (case `key-bound-to-iss/`); site folders record their issuer; `issue --site` refuses another
/// issuer or an unpublished key; a broken key set or CRL makes the cards it vouches for invalid.
@Suite struct IssuerBindingTests {
    static let caseDir = VerifyFixtures.cases.appendingPathComponent("key-bound-to-iss")
    static let card = caseDir.appendingPathComponent(
        "card-claims-issuer.example.org-signed-by-spec-key.smart-health-card"
    ).path
    static let specSet = caseDir.appendingPathComponent("jwks-spec-issuer.json").path
    static let otherSet = caseDir.appendingPathComponent("jwks-issuer.example.org.json").path
    static let specIssuer = "https://spec.smarthealth.cards/examples/issuer"
    static let issuer = VerifyForge.issuer
    static let other = "https://other.example.org"

    func credential(_ run: TestSupport.Run) throws -> JSONValue {
        try #require(try JSONParser.parse(run.stdout)["credentials"]?.arrayValue?.last)
    }

    func codes(_ credential: JSONValue) -> [String] {
        credential["findings"]?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? []
    }

    /// The reported case, with the README's command: the card claims issuer.example.org and is signed with
    /// the spec issuer's key; the two key sets are not pooled.
    @Test func caseCardSignedWithAnotherIssuersKeyIsAnError() throws {
        let run = try TestSupport.cli([
            "verify", "--jwks", Self.specSet, "--jwks", Self.otherSet, "--now", "1700000100", Self.card,
        ])
        #expect(run.status == 1, "\(run.stdout)")
        #expect(
            run.stdout.contains("(signature not checked)") && !run.stdout.contains("signature verified"),
            "\(run.stdout)")
        #expect(
            run.stdout.contains(
                "error KEY_NOT_FROM_ISSUER at header.kid: the card's iss is https://issuer.example.org, but it is signed by key 3Kfdg"
            ))
        let json = try TestSupport.cli([
            "verify", "--json", "--jwks", Self.specSet, "--jwks", Self.otherSet, "--now", "1700000100", Self.card,
        ])
        let card = try credential(json)
        #expect(card["valid"] == .bool(false) && card["signature"]?.stringValue == "not-checked")
        #expect(codes(card) == ["KEY_NOT_FROM_ISSUER"])

        // Bound explicitly, each to its issuer: the key is the spec issuer's, so still not this card's.
        let bound = try TestSupport.cli([
            "verify", "--jwks", "\(Self.specIssuer)=\(Self.specSet)", "--jwks", "\(Self.issuer)=\(Self.otherSet)",
            "--now", "1700000100", Self.card,
        ])
        #expect(bound.status == 1)
        #expect(bound.stdout.contains("the key set of \(Self.specIssuer)"), "\(bound.stdout)")
        #expect(bound.stdout.contains("(signature NOT valid)"), "\(bound.stdout)")
        // The spec issuer's set bound to the spec issuer alone: the card's issuer has no key set, yet its key
        // is in another issuer's set.
        let alone = try TestSupport.cli([
            "verify", "--json", "--jwks", "\(Self.specIssuer)=\(Self.specSet)", "--now", "1700000100", Self.card,
        ])
        #expect(codes(try credential(alone)) == ["KEY_NOT_FROM_ISSUER"])
    }

    /// Forged keys A, B (and C) and issuers X, Y: which bindings verify a card of X signed with A.
    @Test func bindingDecidesWhichKeysVerify() throws {
        let forge = try VerifyForge()
        let a = forge.key
        let b = try P256Key.generate()
        let c = try P256Key.generate()
        let card = try forge.card(try forge.jws(claims: VerifyForge.claims()))
        func set(_ key: P256Key, _ name: String) throws -> String {
            try forge.writeKeySet([JWK(key: key).json], site: name)
        }
        let setA = try set(a, "a")
        let setB = try set(b, "b")
        let setC = try set(c, "c")
        func check(_ sets: [String], _ signature: CredentialReport.Signature, _ expected: [RuleCode], line: Int = #line)
            throws
        {
            let report = try #require(try forge.verify([card], keySets: sets).last)
            #expect(report.signature == signature, "line \(line): \(report.findings)")
            #expect(report.findings.map(\.code) == expected, "line \(line): \(report.findings)")
        }
        try check(["\(Self.issuer)=\(setA)"], .verified, [])
        try check(["\(Self.issuer)=\(setA)", "\(Self.other)=\(setB)"], .verified, [])
        try check(["\(Self.other)=\(setA)"], .notChecked, [.keyNotFromIssuer])
        try check(["\(Self.issuer)=\(setB)", "\(Self.other)=\(setA)"], .failed, [.keyNotFromIssuer])
        try check([setA, setB], .notChecked, [.keyNotFromIssuer])
        try check(["\(Self.other)=\(setB)", setC], .notChecked, [.sigNotChecked])
        try check([setA], .verified, [])  // one unbound key set alone stands for every issuer

        let several = try #require(try forge.verify([card], keySets: [setA, setB]).last?.findings.first)
        #expect(several.message.contains("which is not bound to an issuer"), "\(several.message)")
        #expect(several.message.contains("(\(Self.issuer)=\(setA))"), "\(several.message)")
        let none = try #require(
            try forge.verify([card], keySets: ["\(Self.other)=\(setB)", setC]).last?.findings.first)
        #expect(none.severity == .warning)
        #expect(none.message.hasPrefix("no key set of the card's issuer \(Self.issuer) was given"), "\(none.message)")

        // A site folder's record binds it.
        let site = forge.dir.appendingPathComponent("a").path
        _ = try forge.write(SiteRecord(issuer: Self.other).fileBytes, "a/\(SiteRecord.fileName)")
        try check([site], .notChecked, [.keyNotFromIssuer])
        try check([setA], .notChecked, [.keyNotFromIssuer])  // its .well-known/jwks.json belongs to the site too
        _ = try forge.write(SiteRecord(issuer: Self.issuer).fileBytes, "a/\(SiteRecord.fileName)")
        let verifier = try FileVerifier(keySets: [site, "\(Self.other)=\(setB)"], now: VerifyForge.now)
        #expect(verifier.verifier.trustStore.ring.sets.map(\.issuer) == [Self.issuer, Self.other])
        #expect(verifier.verifier.trustStore.ring.sets[0].binding == .siteRecord(site + "/" + SiteRecord.fileName))
        #expect(try verifier.verify([card]).last?.signature == .verified)
        // URL= that contradicts the site's record, or one key set given twice, is a usage error.
        #expect(throws: HealthCardError.self) { try FileVerifier(keySets: ["\(Self.other)=\(site)"], now: 0) }
        #expect(throws: HealthCardError.self) { try FileVerifier(keySets: [site, setA], now: 0) }
    }

    /// `site --issuer` records the issuer once; verify binds the site's keys to it; the host rules do not
    /// serve the record.
    @Test func siteRecordsItsIssuer() throws {
        let dir = try TestSupport.tempDir("binding")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        let record = site + "/" + SiteRecord.fileName
        try SiteTestSupport.cli(["site", "--out", site, key.path, "--issuer", Self.issuer])
        #expect(try SiteTestSupport.json(record) == .object(["issuer": .string(Self.issuer)]))
        // Laid out again without --issuer: kept. With another issuer: refused, nothing changed.
        try SiteTestSupport.cli(["site", "--out", site, key.path])
        #expect(try IssuerSite(root: site).readRecord() == SiteRecord(issuer: Self.issuer))
        let before = try SiteTestSupport.bytes(site + "/.well-known/jwks.json")
        let other = try SiteTestSupport.keygen("other.pem", in: dir)
        let moved = try SiteTestSupport.cli(
            ["site", "--out", site, key.path, other.path, "--issuer", Self.other], expect: 2)
        #expect(
            moved.stderr.contains("is the site of \(Self.issuer)") && moved.stderr.contains("never changes"),
            "\(moved.stderr)")
        #expect(try SiteTestSupport.bytes(site + "/.well-known/jwks.json") == before)
        #expect(try IssuerSite(root: site).readRecord() == SiteRecord(issuer: Self.issuer))
        // The rules keep the record from being served.
        let htaccess = try String(contentsOfFile: site + "/.htaccess", encoding: .utf8)
        #expect(htaccess.contains(#"RedirectMatch 404 (^|/)("#) && htaccess.contains(#"|healthcards-site\.json|"#))
        let nginx = try String(contentsOfFile: site + "/" + HostRules.nginxFileName, encoding: .utf8)
        #expect(nginx.contains(#"location ~ (^|/)("#) && nginx.contains(#"|healthcards-site\.json|"#))

        // verify --jwks SITE: bound to the recorded issuer, said in the key set's report; no "not bound" line.
        let out = dir.appendingPathComponent("out")
        try SiteTestSupport.issueSample(key: key.path, out: out)
        let run = try TestSupport.cli(["verify", "--jwks", site, "--now", "1700000100", out.path])
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout.contains("  issuer   \(Self.issuer) (recorded in \(record))"), "\(run.stdout)")
        #expect(!run.stdout.contains("is not bound to an issuer"))
        let json = try JSONParser.parse(
            try TestSupport.cli(["verify", "--json", "--jwks", site, "--now", "1700000100", out.path]).stdout)
        let keySet = try #require(json["keySets"]?.arrayValue?.first)
        #expect(keySet["issuer"]?.stringValue == Self.issuer && keySet["boundBy"]?.stringValue == "site-record")
        #expect(json["summary"]?["keySetNotBound"] == nil)
        let wrong = try TestSupport.cli(["verify", "--jwks", "\(Self.other)=\(site)", out.path])
        #expect(wrong.status == 2 && wrong.stderr.contains("records the issuer \(Self.issuer)"), "\(wrong.stderr)")
        // A bare key set alone: the summary says it stands for every issuer.
        let bare = try TestSupport.cli(["verify", "--json", "--jwks", site + "/.well-known/jwks.json", out.path])
        // Still the site's own jwks.json, so still bound.
        #expect(try JSONParser.parse(bare.stdout)["summary"]?["keySetNotBound"] == nil)
        let copy = try TestSupport.write(String(decoding: before, as: UTF8.self), to: "copy/jwks.json", in: dir)
        let unbound = try TestSupport.cli(["verify", "--jwks", copy, "--now", "1700000100", out.path])
        #expect(unbound.status == 0)
        #expect(
            unbound.stdout.contains(
                "verify: key set \(copy) is not bound to an issuer, so it was taken as the key set of every card's issuer"
            ), "\(unbound.stdout)")
    }

    @Test(.enabled(if: NginxServer.available, "nginx is not installed (make test installs it)"))
    func nginxDoesNotServeTheRecord() throws {
        let dir = try TestSupport.tempDir("binding-nginx")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let site = dir.appendingPathComponent("site")
        try SiteTestSupport.cli(["site", "--out", site.path, key.path, "--issuer", Self.issuer])
        let server = try NginxServer(root: site.path, in: dir.appendingPathComponent("nginx"))
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        #expect(try HTTPGet.fetch(base + "/" + SiteRecord.fileName).status == 404)
        #expect(try HTTPGet.fetch(base + "/.well-known/jwks.json").status == 200)
    }

    /// `issue --site SITE` refuses, before the batch and writing nothing, an issuer other than the site's
    /// or a key the site does not publish.
    @Test func issueChecksIssuerAndKeyAgainstTheSite() throws {
        let dir = try TestSupport.tempDir("issue-site")
        let key = try SiteTestSupport.keygen("issuer.pem", in: dir)
        let stranger = try SiteTestSupport.keygen("stranger.pem", in: dir)
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, key.path, "--issuer", Self.issuer])
        let input = try TestSupport.write(JSONWriter.minifiedString(VerifyForge.bundle()), to: "one.json", in: dir)
        func issue(_ issuer: String, _ keyPath: String, _ out: String, site: String) throws -> TestSupport.Run {
            try TestSupport.cli([
                "issue", "--issuer", issuer, "--key", keyPath, "--site", site, "--out",
                dir.appendingPathComponent(out).path,
                "--no-qr", "--quiet", input,
            ])
        }
        let ok = try issue(Self.issuer, key.path, "ok", site: site)
        #expect(ok.status == 0, "\(ok.stderr)")
        let typo = try issue("https://issuer.example.com", key.path, "typo", site: site)
        #expect(typo.status == 2)
        #expect(
            typo.stderr.contains(
                "--issuer https://issuer.example.com is not the issuer of site \(site), which is published at \(Self.issuer)"
            ), "\(typo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("typo").path))
        let unpublished = try issue(Self.issuer, stranger.path, "unpublished", site: site)
        #expect(unpublished.status == 2)
        #expect(
            unpublished.stderr.contains(
                "the signing key (kid \(stranger.kid)) is not in \(site)/.well-known/jwks.json"),
            "\(unpublished.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("unpublished").path))
        let bare = dir.appendingPathComponent("bare").path
        try SiteTestSupport.cli(["site", "--out", bare, key.path])
        let unrecorded = try issue(Self.issuer, key.path, "unrecorded", site: bare)
        #expect(unrecorded.status == 2 && unrecorded.stderr.contains("records no issuer"), "\(unrecorded.stderr)")
        let missing = try issue(Self.issuer, key.path, "missing", site: dir.appendingPathComponent("nothing").path)
        #expect(missing.status == 2 && missing.stderr.contains("is not an issuer site folder"), "\(missing.stderr)")
        // The library type SMART Health Links reuse.
        let published = try PublishedSite(root: site)
        #expect(published.issuer == Self.issuer && published.kids == [key.kid])
        #expect(throws: HealthCardError.self) { try published.checkSigner(issuer: Self.issuer, kid: stranger.kid, now: Clock.nowSeconds()) }
    }

    /// Errors in the key set entry or the CRL a card's key depends on make the card invalid, in the text and
    /// in --json; errors elsewhere in the key set do not.
    @Test func keySetAndCRLProblemsMakeTheirCardsInvalid() throws {
        let forge = try VerifyForge()
        let card = try forge.card(try forge.jws(claims: VerifyForge.claims()))
        let good = JWK(key: forge.key).json.objectValue!
        var badAlg = good
        badAlg["alg"] = "RS256"
        var leaky = JWK(key: try P256Key.generate()).json.objectValue!
        leaky["d"] = "AAAA"
        let cases: [(String, [JSONValue], String?, Bool)] = [
            ("alg", [.object(badAlg)], nil, false),
            ("other-key", [.object(good), .object(leaky)], nil, true),
            ("crl-method", [.object(good)], #"{"kid":"\#(forge.kid)","method":"hash","ctr":1,"rids":[]}"#, false),
            ("crl-version", [.object(good)], #"{"kid":"\#(forge.kid)","method":"rid","ctr":2,"rids":[]}"#, false),
        ]
        for (name, keys, crl, valid) in cases {
            let keySet = try forge.writeKeySet(keys, site: name)
            if let crl { _ = try forge.write(crl, "\(name)/.well-known/crl/\(forge.kid).json") }
            let run = try TestSupport.cli([
                "verify", "--json", "--jwks", keySet, "--now", String(VerifyForge.now), card,
            ])
            let credential = try credential(run)
            #expect(credential["valid"] == .bool(valid), "\(name): \(run.stdout)")
            #expect(credential["signature"]?.stringValue == "verified", "\(name)")
            #expect(codes(credential).contains("KEY_SET_INVALID") == !valid, "\(name): \(codes(credential))")
            let text = try TestSupport.cli(["verify", "--jwks", keySet, "--now", String(VerifyForge.now), card])
            #expect(text.stdout.contains("[credential 0]: " + (valid ? "OK" : "INVALID")), "\(name): \(text.stdout)")
            #expect(text.status == 1)
        }
    }
}
