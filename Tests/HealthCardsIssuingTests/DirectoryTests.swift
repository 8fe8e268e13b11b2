import Foundation
import Testing

import HealthCardsCore
import HealthCardsVerify
import HealthCardsIssuing
import HealthCardsSite
import HealthCardsTestSupport

/// The VCI directory offline: the shipped snapshot of 2026-08-22 (../shared/data/vci-directory) and synthetic
/// snapshots signed at test time by a P-521 key made with OpenSSL.
@Suite(.serialized) struct DirectoryTests {
    static let shipped = VerifyFixtures.shared.appendingPathComponent("data/vci-directory")
    static let shippedPresent = FileManager.default.fileExists(atPath: shipped.appendingPathComponent("vci_snapshot.json").path)
    static let shippedMissing: Comment = "the VCI directory snapshot ../shared/data/vci-directory is not beside this clone; skipped"
    /// 2023-11-14: the synthetic cards' `now`.
    static let now: Int64 = VerifyForge.now

    // MARK: Helpers

    @discardableResult
    static func openssl(_ arguments: [String]) throws -> TestSupport.Run {
        let run = try TestSupport.run("/usr/bin/env", ["openssl"] + arguments)
        #expect(run.status == 0, "openssl \(arguments): \(run.stderr)")
        return run
    }

    /// A new P-521 key and its self-signed certificate (PEM), in `dir`.
    static func signingKey(in dir: URL, name: String = "signer") throws -> (key: String, cert: String) {
        let key = dir.appendingPathComponent("\(name).key.pem").path
        let cert = dir.appendingPathComponent("\(name).crt").path
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-521", "-nodes", "-keyout", key, "-out", cert,
            "-days", "3650", "-subj", "/CN=\(name).test", "-sha512",
        ])
        return (key, cert)
    }

    /// Signs `file` with `key` as the directory does: ECDSA with SHA-512, DER, written to `signature`.
    static func sign(_ file: String, key: String, to signature: String) throws {
        try openssl(["dgst", "-sha512", "-sign", key, "-out", signature, file])
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    static func copyShipped(to dir: URL) throws -> URL {
        let copy = dir.appendingPathComponent("vci")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for name in ["vci_snapshot.json", "vci_snapshot.sig", "vci_snapshot.crt", "vci-issuers.json", "daily_audit.json"] {
            try FileManager.default.copyItem(at: shipped.appendingPathComponent(name), to: copy.appendingPathComponent(name))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: copy.appendingPathComponent(name).path)
        }
        return copy
    }

    /// Changes one byte of a file (XOR 0x01 at `offset`, counted from the end when negative).
    static func flipByte(_ path: String, at offset: Int) throws {
        var data = try bytes(path)
        let i = offset >= 0 ? offset : data.count + offset
        data[i] ^= 0x01
        try Data(data).write(to: URL(fileURLWithPath: path))
    }

    /// One issuer of a synthetic snapshot.
    struct Entry {
        var iss: String
        var name: String
        var keys: [P256Key]
        var crl: CRL? = nil
        var lastRetrieved = "2023-11-01T04:00:00Z"
        var listed = true
        var canonicalIss: String? = nil
        var auditErrors: [String] = []
    }

    /// A synthetic directory folder: snapshot, issuer list and audit, signed by a new P-521 key.
    struct Synthetic {
        let folder: URL
        let cert: String
        let key: String

        init(_ entries: [Entry], in dir: URL) throws {
            folder = dir.appendingPathComponent("directory")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            (key, cert) = try DirectoryTests.signingKey(in: dir)
            var info: [JSONValue] = []
            var listed: [JSONValue] = []
            var audit: [JSONValue] = []
            for entry in entries {
                var issuer: JSONObject = ["iss": .string(entry.iss), "name": .string(entry.name)]
                if let canonical = entry.canonicalIss { issuer["canonical_iss"] = .string(canonical) }
                var object: JSONObject = [
                    "issuer": .object(issuer),
                    "keys": .array(entry.keys.map { key in
                        var jwk = JWK(key: key).json.objectValue!
                        if let crl = entry.crl, crl.kid == JWK(key: key).kid { jwk["crlVersion"] = .integer(Int64(crl.ctr)) }
                        return .object(jwk)
                    }),
                    "lastRetrieved": .string(entry.lastRetrieved),
                ]
                if let crl = entry.crl { object["crls"] = .array([try JSONParser.parse(crl.fileBytes)]) }
                info.append(.object(object))
                if entry.listed { listed.append(.object(issuer)) }
                if !entry.auditErrors.isEmpty {
                    audit.append(.object(["issuer": .object(issuer), "errors": .array(entry.auditErrors.map { .string($0) })]))
                }
            }
            let snapshot: JSONObject = [
                "directory": "https://example.org/vci-issuers.json", "time": "2023-11-01T04:00:00Z", "issuerInfo": .array(info),
            ]
            try Data(JSONWriter.pretty(.object(snapshot))).write(to: folder.appendingPathComponent("vci_snapshot.json"))
            try DirectoryTests.sign(
                folder.appendingPathComponent("vci_snapshot.json").path, key: key,
                to: folder.appendingPathComponent("vci_snapshot.sig").path)
            try FileManager.default.copyItem(atPath: cert, toPath: folder.appendingPathComponent("vci_snapshot.crt").path)
            try Data(JSONWriter.pretty(.object(["participating_issuers": .array(listed)])))
                .write(to: folder.appendingPathComponent("vci-issuers.json"))
            try Data(JSONWriter.pretty(.object(["auditTime": "2023-11-01T04:00:00Z", "issuersWithErrors": .array(audit)])))
                .write(to: folder.appendingPathComponent("daily_audit.json"))
        }

        func file(_ name: String) throws -> [UInt8] { try DirectoryTests.bytes(folder.appendingPathComponent(name).path) }

        /// The directory as a verifier app loads it, pinned to the test certificate.
        func load() throws -> Directory {
            try Directory(
                snapshot: try file("vci_snapshot.json"), signature: try file("vci_snapshot.sig"),
                certificate: try DirectoryTests.bytes(cert), issuerList: try file("vci-issuers.json"),
                audit: try file("daily_audit.json"))
        }
    }

    /// A compact JWS of a good vaccination card for `iss`, signed by `key` with the kid of `kidOf` (default `key`'s).
    static func card(iss: String, key: P256Key, kidOf: P256Key? = nil, rid: String? = nil) throws -> String {
        let forge = try VerifyForge()
        var claims = VerifyForge.claims()
        claims["iss"] = .string(iss)
        if let rid {
            var vc = claims["vc"]!.objectValue!
            vc["rid"] = .string(rid)
            claims["vc"] = .object(vc)
        }
        return try forge.jws(
            header: JWS.headerBytes(kid: JWK(key: kidOf ?? key).kid), payload: JSONWriter.minified(.object(claims)), signer: key)
    }

    static func codes(_ report: VerificationReport) -> [RuleCode] { report.findings.map(\.code) }

    // MARK: The shipped snapshot

    /// The shipped snapshot verifies with its certificate and holds what its README counted.
    @Test(.enabled(if: DirectoryTests.shippedPresent, DirectoryTests.shippedMissing)) func theShippedSnapshotVerifiesAndHoldsTheREADMECounts() throws {
        func file(_ name: String) throws -> [UInt8] { try Self.bytes(Self.shipped.appendingPathComponent(name).path) }
        let directory = try Directory(
            snapshot: try file("vci_snapshot.json"), signature: try file("vci_snapshot.sig"),
            certificate: try file("vci_snapshot.crt"), issuerList: try file("vci-issuers.json"), audit: try file("daily_audit.json"))
        #expect(directory.certificateSubject == "/CN=vci.org")
        #expect(directory.time == "2026-08-22T04:43:50Z")
        let c = directory.counts
        #expect(c.entries == 651 && c.listed == 637 && c.archival == 14 && c.keys == 961)
        #expect(c.entriesWithCRLs == 3 && c.entriesWithoutKeys == 1 && c.sharedKids == 46 && c.listedWithCanonicalIss == 11)
        #expect(directory.issuers.filter { $0.isStale(before: 1_767_225_600) }.count == 77)
        #expect(c.auditErrors > 0)
        // The CRLs agree with their keys (ctr written as a string in one entry, read as the number); the only
        // errors are the x5c leaves of three issuers that name the spec's example issuer instead of theirs, and
        // two Epic tenants' keys whose x is 31 bytes (a coordinate written without its leading zero byte).
        var trust = TrustStore()
        trust.add(directory: directory, now: 1_787_400_000)
        let broken = Set(trust.directoryEntryErrors.keys.map { directory.issuers[$0].iss })
        #expect(broken == [
            "https://pvc.service.yukon.ca/issuer", "https://health.ri.gov/sh.cards/production",
            "https://smart.medconciergela.com/api/ISSUER",
            "https://soap.bassett.org/FHIR/api/epic/2021/Security/Open/EcKeys/32001/SHC",
            "https://fhir.dchstx.org/FHIR-External/api/epic/2021/Security/Open/EcKeys/32001/SHC",
        ], "\(trust.directoryFindings.prefix(10))")
        #expect(Set(trust.directoryFindings.map(\.code)) == [.jwkX5CSAN, .jwkCoordinates], "\(trust.directoryFindings.prefix(10))")
        // A key is found by issuer and kid: a shared kid is under several issuers, each its own entry.
        let shared = try #require(directory.issuers.flatMap(\.kids).first { directory.issuers(publishing: $0).count > 1 })
        let owners = directory.issuers(publishing: shared)
        #expect(Set(owners.map(\.iss)).count == owners.count)
        for owner in owners { #expect(directory.issuers(for: owner.iss)?.issuers.map(\.iss) == [owner.iss]) }
    }

    /// Changing one byte of the snapshot or of its signature, or signing with another P-521 key, is refused
    /// (DIRECTORY_SIGNATURE_INVALID) through the library and `directory verify` (exit status 1); the shipped files
    /// pass (exit status 0), pinned or with a warning that they are not.
    @Test(.enabled(if: DirectoryTests.shippedPresent, DirectoryTests.shippedMissing)) func directoryVerifyAcceptsTheShippedSnapshotAndRefusesChangedOnes() throws {
        let dir = try TestSupport.tempDir("directory-verify")
        let pinned = Self.shipped.appendingPathComponent("vci_snapshot.crt").path
        let good = try TestSupport.cli(["directory", "verify", Self.shipped.path, "--cert", pinned])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("signature verified") && good.stdout.contains("pinned") && !good.stderr.contains("NOT_PINNED"))
        let unpinned = try TestSupport.cli(["directory", "verify", Self.shipped.path])
        #expect(unpinned.status == 0 && unpinned.stderr.contains("DIRECTORY_NOT_PINNED"), "\(unpinned.stderr)")

        let json = try Self.copyShipped(to: dir.appendingPathComponent("json"))
        // A byte inside an issuer's name ("State of California" -> "State of Californi`"): still JSON.
        let text = try Self.bytes(json.appendingPathComponent("vci_snapshot.json").path)
        let at = try #require(Self.find(Array("California".utf8), in: text)) + 9
        try Self.flipByte(json.appendingPathComponent("vci_snapshot.json").path, at: at)
        let signature = try Self.copyShipped(to: dir.appendingPathComponent("sig"))
        try Self.flipByte(signature.appendingPathComponent("vci_snapshot.sig").path, at: -1)
        let other = try Self.copyShipped(to: dir.appendingPathComponent("other"))
        let (otherKey, _) = try Self.signingKey(in: dir)
        try Self.sign(other.appendingPathComponent("vci_snapshot.json").path, key: otherKey,
                      to: other.appendingPathComponent("vci_snapshot.sig").path)
        for folder in [json, signature, other] {
            let run = try TestSupport.cli(["directory", "verify", folder.path, "--cert", pinned])
            #expect(run.status == 1 && run.stderr.contains("DIRECTORY_SIGNATURE_INVALID"), "\(folder.lastPathComponent): \(run.stderr)")
            #expect(!run.stdout.contains("signature verified"))
            #expect(throws: HealthCardError.self) {
                _ = try Directory(
                    snapshot: try Self.bytes(folder.appendingPathComponent("vci_snapshot.json").path),
                    signature: try Self.bytes(folder.appendingPathComponent("vci_snapshot.sig").path),
                    certificate: try Self.bytes(pinned))
            }
            do {
                _ = try Directory(
                    snapshot: try Self.bytes(folder.appendingPathComponent("vci_snapshot.json").path),
                    signature: try Self.bytes(folder.appendingPathComponent("vci_snapshot.sig").path),
                    certificate: try Self.bytes(pinned))
            } catch let error as HealthCardError { #expect(error.code == .directorySignatureInvalid) }
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// `directory show --json` gives the counts Python's json module computes from the same files.
    @Test(.enabled(if: DirectoryTests.shippedPresent && TestSupport.python != nil, "needs ../shared/data/vci-directory and the test Python"))
    func directoryShowCountsAgreeWithAnIndependentCount() throws {
        let script = """
            import json, sys, collections
            d = sys.argv[1]
            snap = json.load(open(d + "/vci_snapshot.json", encoding="utf-8"))
            listed = json.load(open(d + "/vci-issuers.json", encoding="utf-8"))["participating_issuers"]
            names = {i["iss"] for i in listed}
            info = snap["issuerInfo"]
            owners = collections.defaultdict(set)
            for n, e in enumerate(info):
                for k in e.get("keys", []):
                    owners[k["kid"]].add(n)
            print(json.dumps({
                "entries": len(info),
                "listed": sum(1 for e in info if e["issuer"]["iss"] in names),
                "archival": sum(1 for e in info if e["issuer"]["iss"] not in names),
                "keys": sum(len(e.get("keys", [])) for e in info),
                "entriesWithCRLs": sum(1 for e in info if e.get("crls")),
                "entriesWithoutKeys": sum(1 for e in info if not e.get("keys")),
                "stale": sum(1 for e in info if e["lastRetrieved"] < "2026-01-01"),
                "sharedKids": sum(1 for v in owners.values() if len(v) > 1),
                "canonicalIss": sum(1 for i in listed if "canonical_iss" in i),
            }))
            """
        let python = try TestSupport.run(TestSupport.python!, ["-c", script, Self.shipped.path])
        #expect(python.status == 0, "\(python.stderr)")
        let expected = try JSONParser.parse(python.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        // 2026-01-01T00:00:00Z, and no age allowed: stale is "last retrieved before 2026".
        let run = try TestSupport.cli([
            "directory", "show", Self.shipped.path, "--cert", Self.shipped.appendingPathComponent("vci_snapshot.crt").path,
            "--json", "--now", "1767225600", "--max-key-age", "0",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        let counts = try #require(try JSONParser.parse(run.stdout)["counts"])
        let expectedCounts = try #require(expected.objectValue)
        for (name, value) in expectedCounts {
            #expect(counts[name]?.numberLexeme == value.numberLexeme, "\(name): \(counts[name].map { "\($0)" } ?? "nil") vs \(value)")
        }
        // And the README's own numbers.
        let readme: [String: Int] = [
            "entries": 651, "listed": 637, "archival": 14, "keys": 961, "entriesWithCRLs": 3, "entriesWithoutKeys": 1, "stale": 77,
            "sharedKids": 46, "canonicalIss": 11,
        ]
        for (name, value) in readme { #expect(counts[name]?.numberLexeme == String(value), "\(name)") }
        // One issuer, found by iss.
        let one = try TestSupport.cli([
            "directory", "show", Self.shipped.path, "--iss", "https://myvaccinerecord.cdph.ca.gov/creds", "--json",
        ])
        #expect(one.status == 0)
        let shown = try JSONParser.parse(one.stdout)["issuers"]?[0]
        #expect(shown?["name"]?.stringValue == "State of California" && shown?["kids"]?.arrayValue?.count == 4)
        let missing = try TestSupport.cli(["directory", "show", Self.shipped.path, "--iss", "https://nowhere.example.org"])
        #expect(missing.status == 1 && missing.stderr.contains("not in the directory"))
    }

    // MARK: Synthetic snapshots: cards judged against the directory

    struct World {
        let a: P256Key
        let b: P256Key
        let archival: P256Key
        let stale: P256Key
        let audited: P256Key
        let aliased: P256Key
        let revokedRID = "c2Ftc29uLXJldm9rZWQ"
        let synthetic: Synthetic

        static let issA = "https://a.example.org/shc"
        static let issB = "https://b.example.org"

        init() throws {
            (a, b, archival) = (try P256Key.generate(), try P256Key.generate(), try P256Key.generate())
            (stale, audited, aliased) = (try P256Key.generate(), try P256Key.generate(), try P256Key.generate())
            let dir = try TestSupport.tempDir("directory-world")
            synthetic = try Synthetic([
                Entry(iss: Self.issA, name: "Issuer A Health", keys: [a],
                      crl: CRL(kid: JWK(key: a).kid, ctr: 2, entries: [.init(rid: revokedRID)])),
                Entry(iss: Self.issB, name: "Issuer B Clinics", keys: [b]),
                Entry(iss: "https://gone.example.org", name: "Gone County", keys: [archival], listed: false),
                Entry(iss: "https://old.example.org", name: "Old Pharmacy", keys: [stale], lastRetrieved: "2020-01-01T00:00:00Z"),
                Entry(iss: "https://audited.example.org", name: "Audited Lab", keys: [audited],
                      auditErrors: ["RequestError: getaddrinfo ENOTFOUND audited.example.org"]),
                Entry(iss: "https://tenant.example.org/shc", name: "Tenant Hospital", keys: [aliased],
                      canonicalIss: "https://alias.example.org/shc"),
            ], in: dir)
        }

        func verifier() throws -> HealthCardVerifier {
            var trust = TrustStore()
            trust.add(directory: try synthetic.load(), now: DirectoryTests.now)
            #expect(trust.directoryFindings.isEmpty, "\(trust.directoryFindings)")
            return HealthCardVerifier(trustStore: trust)
        }
    }

    /// Our own issuer's card verifies against the directory, named as the directory names it.
    @Test func aListedIssuersCardVerifiesAndIsNamedAsTheDirectoryNamesIt() throws {
        let world = try World()
        let report = try world.verifier().verify(jws: try Self.card(iss: World.issA, key: world.a), now: Self.now)
        #expect(report.isVerified, "\(report.findings)")
        #expect(report.credentials[0].issuerName == "Issuer A Health")
        #expect(report.warningCount == 0, "\(report.findings)")
        #expect(report.json["credentials"]?[0]?["issuerName"]?.stringValue == "Issuer A Health")
        // The card's iss through a canonical_iss: the entry that names it.
        let aliased = try world.verifier().verify(
            jws: try Self.card(iss: "https://alias.example.org/shc", key: world.aliased), now: Self.now)
        #expect(aliased.isVerified && aliased.credentials[0].issuerName == "Tenant Hospital", "\(aliased.findings)")
    }

    /// A rid on the entry's CRL revokes the card, as a site's CRL does.
    @Test func aRidOnTheEntrysCRLIsRevoked() throws {
        let world = try World()
        let revoked = try world.verifier().verify(
            jws: try Self.card(iss: World.issA, key: world.a, rid: world.revokedRID), now: Self.now)
        #expect(!revoked.isVerified && Self.codes(revoked).contains(.revoked), "\(revoked.findings)")
        let other = try world.verifier().verify(
            jws: try Self.card(iss: World.issA, key: world.a, rid: "b3RoZXItcmlk"), now: Self.now)
        #expect(other.isVerified, "\(other.findings)")
    }

    /// Stale keys, an archival issuer and an issuer in the day's audit errors are warnings; an issuer missing from
    /// the directory is an error.
    @Test func staleArchivalAuditedAndMissingIssuersEachGiveTheirFinding() throws {
        let world = try World()
        let verifier = try world.verifier()
        let stale = verifier.verify(jws: try Self.card(iss: "https://old.example.org", key: world.stale), now: Self.now)
        #expect(stale.isVerified && Self.codes(stale) == [.directoryKeysStale], "\(stale.findings)")
        let archival = verifier.verify(jws: try Self.card(iss: "https://gone.example.org", key: world.archival), now: Self.now)
        #expect(archival.isVerified && Self.codes(archival) == [.directoryIssuerArchival], "\(archival.findings)")
        let audited = verifier.verify(jws: try Self.card(iss: "https://audited.example.org", key: world.audited), now: Self.now)
        #expect(audited.isVerified && Self.codes(audited) == [.directoryIssuerAuditError], "\(audited.findings)")
        let missing = verifier.verify(jws: try Self.card(iss: "https://missing.example.org", key: try P256Key.generate()), now: Self.now)
        #expect(!missing.isVerified && Self.codes(missing).contains(.directoryIssuerUnknown), "\(missing.findings)")
        #expect(missing.findings.first { $0.code == .directoryIssuerUnknown }?.severity == .error)
        // A longer age allowed: the old keys are not stale.
        var trust = TrustStore()
        trust.add(directory: try world.synthetic.load(), now: Self.now, maxKeyAge: 10 * 365 * 86_400)
        let tolerant = HealthCardVerifier(trustStore: trust).verify(
            jws: try Self.card(iss: "https://old.example.org", key: world.stale), now: Self.now)
        #expect(tolerant.isVerified && tolerant.findings.isEmpty, "\(tolerant.findings)")
    }

    /// A card of issuer B that carries (and is signed with) a kid of issuer A is not verified: keys are found by
    /// issuer and kid together.
    @Test func aCardOfIssuerBWithAKidOfIssuerAIsNotVerified() throws {
        let world = try World()
        let verifier = try world.verifier()
        let forged = verifier.verify(jws: try Self.card(iss: World.issB, key: world.a), now: Self.now)
        #expect(!forged.isVerified && Self.codes(forged).contains(.keyNotFromIssuer), "\(forged.findings)")
        #expect(forged.credentials[0].signature != .verified)
        // Signed by B's key but naming A's kid: not verified either.
        let named = verifier.verify(jws: try Self.card(iss: World.issB, key: world.b, kidOf: world.a), now: Self.now)
        #expect(!named.isVerified, "\(named.findings)")
        // A card of an issuer missing from the directory signed with A's key is not A's.
        let missing = verifier.verify(jws: try Self.card(iss: "https://missing.example.org", key: world.a), now: Self.now)
        #expect(!missing.isVerified && Self.codes(missing).contains(.keyNotFromIssuer), "\(missing.findings)")
    }

    /// A snapshot changed after it was signed is refused by the library before anything in it is read.
    @Test func aChangedSyntheticSnapshotIsRefused() throws {
        let world = try World()
        var snapshot = try world.synthetic.file("vci_snapshot.json")
        let at = try #require(Self.find(Array("Issuer A".utf8), in: snapshot))
        snapshot[at] = UInt8(ascii: "J")
        do {
            _ = try Directory(snapshot: snapshot, signature: try world.synthetic.file("vci_snapshot.sig"),
                              certificate: try Self.bytes(world.synthetic.cert))
            Issue.record("a changed snapshot was accepted")
        } catch let error as HealthCardError { #expect(error.code == .directorySignatureInvalid) }
        // A P-256 certificate is not the directory's kind of key.
        let dir = try TestSupport.tempDir("directory-p256")
        let key = dir.appendingPathComponent("k.pem").path
        let cert = dir.appendingPathComponent("c.pem").path
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                          "-out", cert, "-days", "30", "-subj", "/CN=p256.test"])
        #expect(throws: HealthCardError.self) {
            _ = try Directory(snapshot: try world.synthetic.file("vci_snapshot.json"),
                              signature: try world.synthetic.file("vci_snapshot.sig"), certificate: try Self.bytes(cert))
        }
        // Hostile bytes never trap: garbage certificate, empty signature.
        #expect(throws: HealthCardError.self) {
            _ = try Directory(snapshot: [], signature: [], certificate: Array("not a certificate".utf8))
        }
        #expect(throws: HealthCardError.self) {
            _ = try Directory(snapshot: try world.synthetic.file("vci_snapshot.json"), signature: [],
                              certificate: try Self.bytes(world.synthetic.cert))
        }
    }

    /// A signed snapshot of odd shapes (wrong types everywhere, duplicate iss, keys that are not keys) loads without
    /// a trap: odd entries are left out with a finding, odd keys are findings of their entry, never trusted.
    @Test func oddShapesInASignedSnapshotNeverTrapAndAreNeverTrusted() throws {
        let dir = try TestSupport.tempDir("directory-odd")
        let (key, cert) = try Self.signingKey(in: dir)
        let odd = """
            {"time": 5, "issuerInfo": [1, "x", null, {"issuer": {"iss": 5}}, {"issuer": {"iss": ""}},
             {"issuer": {"iss": "https://x.example.org", "name": ["n"]}, "keys": "none", "crls": [{"kid": 1}, 7],
              "lastRetrieved": "yesterday"},
             {"issuer": {"iss": "https://x.example.org"}, "keys": []},
             {"issuer": {"iss": "https://y.example.org", "canonical_iss": 3}, "keys": [1, {"kty": "RSA"},
              {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "crlVersion": "-1"}],
              "crls": [{"kid": "k", "method": "rid", "ctr": "1e3", "rids": [5]}], "lastRetrieved": "2023-13-45T99:00:00Z"}]}
            """
        let path = try TestSupport.write(odd, to: "vci_snapshot.json", in: dir)
        try Self.sign(path, key: key, to: dir.appendingPathComponent("vci_snapshot.sig").path)
        let directory = try Directory(
            snapshot: try Self.bytes(path), signature: try Self.bytes(dir.appendingPathComponent("vci_snapshot.sig").path),
            certificate: try Self.bytes(cert), issuerList: Array(#"{"participating_issuers": [1, {"iss": 2}]}"#.utf8),
            audit: Array(#"{"issuersWithErrors": [null, {"issuer": 1}]}"#.utf8))
        #expect(directory.issuers.map(\.iss) == ["https://x.example.org", "https://y.example.org"])
        #expect(directory.findings.count == 6, "\(directory.findings)")
        #expect(directory.issuers.allSatisfy { $0.isStale(before: 0) && $0.isListed == false })
        var trust = TrustStore()
        trust.add(directory: directory, now: Self.now)
        let report = HealthCardVerifier(trustStore: trust).verify(
            jws: try Self.card(iss: "https://y.example.org", key: try P256Key.generate()), now: Self.now)
        #expect(!report.isVerified)
        // Not a directory at all: refused with DIRECTORY_INVALID once the signature verified.
        let array = try TestSupport.write("[]", to: "array.json", in: dir)
        try Self.sign(array, key: key, to: dir.appendingPathComponent("array.sig").path)
        do {
            _ = try Directory(snapshot: Array("[]".utf8), signature: try Self.bytes(dir.appendingPathComponent("array.sig").path),
                              certificate: try Self.bytes(cert))
            Issue.record("a snapshot without issuerInfo was accepted")
        } catch let error as HealthCardError { #expect(error.code == .directoryInvalid, "\(error)") }
    }

    /// `verify --directory` through the CLI: pinned with --directory-cert the card verifies (exit 0) and the report
    /// names its issuer; a changed snapshot is refused before any card is judged (exit 1).
    @Test func verifyDirectoryThroughTheCLI() throws {
        let world = try World()
        let forge = try VerifyForge()
        let card = try forge.card(try Self.card(iss: World.issA, key: world.a))
        let folder = world.synthetic.folder.path
        let ok = try TestSupport.cli([
            "verify", "--directory", folder, "--directory-cert", world.synthetic.cert, "--now", String(Self.now), "--json", card,
        ])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(!ok.stderr.contains("DIRECTORY_NOT_PINNED"))
        let document = try JSONParser.parse(ok.stdout)
        #expect(document["credentials"]?[0]?["issuerName"]?.stringValue == "Issuer A Health")
        #expect(document["summary"]?["directory"]?["pinned"] == .bool(true))
        let text = try TestSupport.cli(["verify", "--directory", folder, "--now", String(Self.now), card])
        #expect(text.status == 0 && text.stderr.contains("DIRECTORY_NOT_PINNED"), "\(text.stderr)")
        #expect(text.stdout.contains("Issuer A Health"))
        // With --jwks for an issuer not listed yet.
        let newcomer = try P256Key.generate()
        let newCard = try forge.card(try Self.card(iss: "https://new.example.org", key: newcomer), "new.smart-health-card")
        let jwks = try forge.write(JSONWriter.pretty(.object(["keys": [JWK(key: newcomer).json]])), "new-jwks.json")
        let both = try TestSupport.cli([
            "verify", "--directory", folder, "--directory-cert", world.synthetic.cert, "--jwks", "https://new.example.org=\(jwks)",
            "--now", String(Self.now), card, newCard,
        ])
        #expect(both.status == 0, "\(both.stdout)\(both.stderr)")
        let without = try TestSupport.cli([
            "verify", "--directory", folder, "--directory-cert", world.synthetic.cert, "--now", String(Self.now), newCard,
        ])
        #expect(without.status == 1 && without.stdout.contains("DIRECTORY_ISSUER_UNKNOWN"), "\(without.stdout)")
        // One byte of the snapshot changed: refused, no card judged.
        try Self.flipByte(world.synthetic.folder.appendingPathComponent("vci_snapshot.json").path, at: 40)
        let refused = try TestSupport.cli([
            "verify", "--directory", folder, "--directory-cert", world.synthetic.cert, "--now", String(Self.now), "--json", card,
        ])
        #expect(refused.status == 1 && refused.stderr.contains("DIRECTORY_SIGNATURE_INVALID"), "\(refused.stderr)")
        #expect(!refused.stdout.contains("credentials"))
    }

    // MARK: directory check

    /// A site `healthcards site` wrote passes the directory's key rules; a JWK without `use` or `alg` is reported.
    @Test func directoryCheckPassesASiteWrittenBySiteAndReportsAKeyWithoutUseOrAlg() throws {
        let world = try World()
        let dir = try TestSupport.tempDir("directory-check")
        let key = dir.appendingPathComponent("issuer.pem").path
        try SiteTestSupport.cli(["keygen", "--out", key])
        let site = dir.appendingPathComponent("site").path
        try SiteTestSupport.cli(["site", "--out", site, "--issuer", "https://newcomer.example.org", "--crl", key])
        let folder = world.synthetic.folder.path
        let good = try TestSupport.cli(["directory", "check", folder, "--cert", world.synthetic.cert, "--site", site, "--json"])
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        let document = try JSONParser.parse(good.stdout)
        #expect(document["keysPass"] == .bool(true))
        let codes = document["findings"]?.arrayValue?.compactMap { $0["code"]?.stringValue } ?? []
        // Not listed yet: a warning, never a key-rule problem.
        #expect(codes == ["DIRECTORY_ISSUER_UNKNOWN"], "\(codes)")
        #expect(document["findings"]?[0]?["severity"]?.stringValue == "warning")

        for member in ["use", "alg"] {
            let broken = dir.appendingPathComponent("site-\(member)").path
            try FileManager.default.copyItem(atPath: site, toPath: broken)
            let jwksPath = broken + "/.well-known/jwks.json"
            var jwks = try #require(try JSONParser.parse(try Self.bytes(jwksPath)).objectValue)
            var keys = try #require(jwks["keys"]?.arrayValue)
            var first = try #require(keys[0].objectValue)
            _ = first.removeValue(forKey: member)
            keys[0] = .object(first)
            jwks["keys"] = .array(keys)
            try Data(JSONWriter.pretty(.object(jwks))).write(to: URL(fileURLWithPath: jwksPath))
            let run = try TestSupport.cli(["directory", "check", folder, "--cert", world.synthetic.cert, "--site", broken])
            #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
            #expect(run.stdout.contains(member == "use" ? "JWK_USE" : "JWK_ALG"), "\(run.stdout)")
        }
        // Usage errors are status 2.
        #expect(try TestSupport.cli(["directory", "check", folder]).status == 2)
        #expect(try TestSupport.cli(["directory", "frobnicate", folder]).status == 2)
        #expect(try TestSupport.cli(["directory", "verify", dir.appendingPathComponent("nowhere").path]).status == 2)
        #expect(try TestSupport.cli(["directory", "--help"]).status == 0)
    }
}
