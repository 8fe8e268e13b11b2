import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing

/// The fixture catalogue for verifier developers (`healthcards fixtures`): valid cards of every shape and
/// cards broken in one known way each, with the verdict a verifier must reach, made with the caller's
/// key and issuer and byte-for-byte reproducible (RFC 6979 signatures, content from a seed, times from
/// `now`). See docs/fixtures.md.
///
/// Layout of the folder it fills:
///
///     valid/                      cards a verifier must accept (.smart-health-card, .jws, .qr.txt, .png)
///     invalid/                    one file (or QR chunk set) per fault, and key sets with one bad key each
///     site/                       the issuer's .well-known/jwks.json and CRLs, its site record and host rules
///     manifest.json               every file: form, what is broken, verdict, finding codes (`FixtureManifest`)
public struct FixtureCatalogue {
    /// What the catalogue is made from.
    public struct Options: Sendable {
        /// The issuer URL (`iss`) of the cards.
        public var issuer: String
        /// The issuer's signing key, in memory: a public test key signs deterministically (RFC 6979), any other key
        /// with OpenSSL's random nonces (`FixtureSigner`).
        public var key: P256PrivateKey
        /// The time every verdict holds at, seconds since 1970; card times are counted from it.
        public var now: Int64
        /// Picks the synthetic content (names, birth dates, lots, dates) and the derived test keys.
        public var seed: UInt64
        /// How to check each file, as the program writing the catalogue says it (the command line gives its
        /// `verify` command); nil: the manifest says it in words.
        public var checkAdvice: String?
        /// True when `key` is the issuer key derived from the seed and the issuer (`derived`): a public test key,
        /// so the catalogue is signed deterministically.
        public private(set) var keyIsDerived = false

        public init(issuer: String, key: P256PrivateKey, now: Int64, seed: UInt64, checkAdvice: String? = nil) {
            self.issuer = issuer
            self.key = key
            self.now = now
            self.seed = seed
            self.checkAdvice = checkAdvice
        }

        /// Options whose issuer key is derived from `seed` and `issuer` (`DerivedKey`): anyone with the seed and the
        /// issuer URL derives the same key, so it is a public test key and the catalogue is the same bytes on every
        /// run, for any issuer URL. (A key of one's own signs with random nonces: `FixtureSigner`.)
        /// - Throws: `HealthCardError(.crypto)` when OpenSSL fails.
        public static func derived(issuer: String, now: Int64, seed: UInt64, checkAdvice: String? = nil) throws
            -> Options
        {
            let key = try DerivedKey.p256(from: Array("healthcards-fixtures/\(seed)/key/issuer/\(issuer)".utf8))
            var options = Options(
                issuer: issuer, key: P256PrivateKey(storage: key, location: .software), now: now, seed: seed,
                checkAdvice: checkAdvice)
            options.keyIsDerived = true
            return options
        }
    }

    let options: Options
    let people: FixturePeople
    let signer: FixtureSigner
    let kid: String
    /// A key no key set publishes (bad signatures, a header naming another kid).
    let unpublishedKey: PublicTestKey
    /// The issuer's second key, whose key set entry carries an `x5c` chain.
    let x5cKey: PublicTestKey
    /// The test CA that certifies `x5cKey`.
    let caKey: PublicTestKey
    /// The key of another issuer (`otherIssuer`), published in its own site folder.
    let otherIssuerKey: PublicTestKey
    let otherIssuer: String
    /// The issuer-wide revocation secret, derived from the seed.
    let ridSecret: RIDSecret

    /// Files made so far, in order: path relative to the catalogue folder, and bytes.
    var files: [(path: String, bytes: [UInt8])] = []
    var entries: [FixtureEntry] = []

    /// Folder and key set names.
    static let site = "site"
    static let otherSite = "invalid/key-not-from-issuer/site"

    /// `nbf` of the catalogue's cards: an hour before `now`.
    var notBefore: Int64 { options.now - 3_600 }
    /// The earliest `now` whose catalogue holds what its manifest says, in seconds since 1970
    /// (1973-03-03 09:46:40 UTC): `nbf-milliseconds` carries `nbf` × 1000, which verifiers take for
    /// milliseconds only at or above `NumericDate.millisecondsThreshold` (10^11, the year 5138 in seconds);
    /// below it that card is only "not yet valid". It also covers the 800 days of dates before `now`.
    public static let earliestNow = Int64(NumericDate.millisecondsThreshold) / 1_000 + 3_600
    /// The revocation list revokes the `rid` person's cards issued before this time (`rid.<cutoff>`).
    var ridCutoff: Int64 { options.now - 7 * 86_400 }

    init(_ options: Options) throws {
        self.options = options
        people = FixturePeople(seed: options.seed, now: options.now)
        signer =
            options.keyIsDerived
            ? try FixtureSigner(testKey: PublicTestKey(derived: options.key.storage))
            : try FixtureSigner(key: options.key.storage)
        kid = JWK(key: options.key.publicKey).kid
        func derived(_ label: String) -> [UInt8] { Array("healthcards-fixtures/\(options.seed)/key/\(label)".utf8) }
        unpublishedKey = try DerivedKey.testKey(from: derived("unpublished"))
        x5cKey = try DerivedKey.testKey(from: derived("x5c"))
        caKey = try DerivedKey.testKey(from: derived("ca"))
        otherIssuerKey = try DerivedKey.testKey(from: derived("other-issuer"))
        otherIssuer =
            options.issuer == "https://other-issuer.example.org"
            ? "https://another-issuer.example.org" : "https://other-issuer.example.org"
        ridSecret = try RIDSecret(text: Base64URL.encode(Digest.sha256(Array("healthcards-fixtures/\(options.seed)/rid-secret".utf8))))
    }

    /// Makes the whole catalogue into `folder`, which must be empty or missing (see `FixtureFolder` for
    /// replacing an earlier catalogue).
    /// - Returns: the manifest written.
    /// - Throws: `HealthCardError(.key)` for a key that cannot sign deterministically, `.io` when a file
    ///   cannot be written; `.validation` or `.crypto` for a catalogue that does not come out as designed
    ///   (a bug: a valid card failing the issue gate, a size that cannot be reached).
    /// - Parameter stop: checked between stages and files: once requested, nothing more is made or written and
    ///   the manifest returned is partial (`FixtureFolder` then removes the folder).
    public static func make(_ options: Options, in folder: String, stop: StopRequest = StopRequest()) throws
        -> FixtureManifest
    {
        var catalogue = try FixtureCatalogue(options)
        let partial = FixtureManifest(issuer: options.issuer, kid: catalogue.kid, now: options.now, seed: options.seed, entries: [])
        for stage in 0..<3 {
            if stop.signal != 0 { return partial }
            switch stage {
            case 0: try catalogue.addValidCards()
            case 1: try catalogue.addFaults()
            default: try catalogue.addKeySetFaults()
            }
        }
        if stop.signal != 0 { return partial }
        try catalogue.writeSites(in: folder)
        for file in catalogue.files {
            if stop.signal != 0 { return partial }
            try FileIO.writeAtomically(file.bytes, to: folder + "/" + file.path, sync: false)
        }
        let manifest = FixtureManifest(
            issuer: options.issuer, kid: catalogue.kid, now: options.now, seed: options.seed,
            entries: catalogue.entries)
        try FileIO.writeAtomically(manifest.fileBytes(checkAdvice: options.checkAdvice), to: folder + "/" + FixtureManifest.fileName, sync: false)
        try FileIO.syncFileSystem(folder)
        return manifest
    }

    // MARK: - Building blocks

    /// Claims for a card of this issuer issued at `notBefore`.
    func claims(nbf: Int64? = nil, expires: Int64? = nil, rid: String? = nil) -> FixturePipeline.Claims {
        FixturePipeline.Claims(issuer: options.issuer, notBefore: String(nbf ?? notBefore), expires: expires, rid: rid)
    }

    /// Runs the pipeline for a record.
    func card(
        _ record: FixtureRecord, _ pipeline: FixturePipeline = FixturePipeline(), claims: FixturePipeline.Claims? = nil,
        signer: FixtureSigner? = nil
    ) throws -> FixturePipeline.Output {
        try pipeline.run(
            record.sourceBundle, claims: claims ?? self.claims(), signer: signer ?? self.signer, now: options.now)
    }

    /// A person with `count` COVID-19 doses.
    func covidRecord(_ name: String, doses count: Int = 1) -> FixtureRecord {
        var record = people.person(name)
        record.doses = people.doses(name, count: count, vaccine: FixturePeople.covid19)
        return record
    }

    mutating func add(_ path: String, _ bytes: [UInt8]) { files.append((path, bytes)) }

    mutating func add(_ entry: FixtureEntry) { entries.append(entry) }

    /// An entry with the defaults of this catalogue: verified with the issuer's site, judged by the checker;
    /// its conformance from `issuerNonconformance` (else: valid without errors, verifier-must-reject with).
    func entry(
        _ name: String, _ files: [String], kind: String, _ description: String, stage: String? = nil,
        errors: [RuleCode] = [], warnings: [RuleCode] = [], reference: [String] = [],
        keySets: [String] = [FixtureCatalogue.site], checker: FixtureEntry.Checker = .judges
    ) -> FixtureEntry {
        let note = Self.issuerNonconformance[name]
        return FixtureEntry(
            name: name, files: files, kind: kind, description: description, stage: stage, errors: errors,
            warnings: warnings, referenceValidator: reference, keySets: keySets, checker: checker,
            conformance: note == nil ? nil : .issuerNonconformance, conformanceNote: note)
    }

    /// The faults that break a rule on issuers but no rule a verifier must reject a card by, each with why a
    /// verifier may accept the file. Every other broken file is verifier-must-reject: a broken or foreign
    /// signature, a kid naming no key, a payload that does not inflate, a card not yet or no longer valid, a
    /// revoked rid, QR text that does not decode, a bad chunk set, a file that is no card file.
    static let issuerNonconformance: [String: String] = [
        "payload-not-minified":
            "the payload is still the card's JSON and verifies; minified JSON is the issuer's rule, for a smaller QR",
        "min-resource-id": minimization, "min-narrative": minimization, "min-coding-display": minimization,
        "min-codeableconcept-text": minimization, "min-meta": minimization,
        "qr-one-byte-segment": qrLayout, "qr-forced-v22": qrLayout, "qr-ecc-m": qrLayout, "qr-too-long": qrLayout,
        "qr-prefix-uppercase":
            "schemes are case-insensitive (RFC 3986 section 3.1): SHC:/ is the same URI as shc:/, which the spec writes",
        "qr-chunk-header-1-1": "the text decodes to the whole card; the spec writes a single QR without a chunk header",
        "qr-needless-chunks": "the chunks assemble into the card, which verifies; needless chunking is the issuer's fault",
        "keyset-wrong-use": "the encryption key is ignored, and the set's signing key verifies the issuer's cards",
        "keyset-kid-not-thumbprint": "the kid still names its key, which verifies what it signed; the kid is the issuer's to compute",
        "keyset-private-key":
            "the public key still verifies; publishing the private key is the issuer's failure (the key must be replaced)",
    ]
    static let minimization =
        "the card verifies and reads; data minimization is the issuer's rule (a smaller QR, less data shared)"
    static let qrLayout =
        "a scanner reads the symbol and the card inside verifies; the QR layout, version and ECC level are the issuer's rules"

    /// Writes a JWS as a `.smart-health-card` under `folder/name` and adds its entry.
    mutating func addCardFile(
        _ folder: String, _ name: String, _ jws: [JWS], _ description: String, stage: String? = nil,
        errors: [RuleCode] = [], warnings: [RuleCode] = [], reference: [String] = [],
        keySets: [String] = [FixtureCatalogue.site], checker: FixtureEntry.Checker = .judges,
        file: String? = nil
    ) {
        let path = "\(folder)/\(file ?? name).smart-health-card"
        add(path, FixtureOutput.file(jws))
        add(
            entry(
                name, [path], kind: "smart-health-card", description, stage: stage, errors: errors,
                warnings: Self.sizeWarnings(jws, warnings), reference: reference, keySets: keySets, checker: checker))
    }

    /// `warnings` with `JWS_TOO_LONG` when a JWS is over 1195 characters: the one expectation read from the
    /// bytes made, because the caller's issuer URL sets part of the size (an uncompressed payload with a long
    /// iss passes the limit, with a short one it does not).
    static func sizeWarnings(_ jws: [JWS], _ warnings: [RuleCode]) -> [RuleCode] {
        let tooLong = jws.contains { $0.compact.utf8.count > QRNumeric.maxSingleJWSCharacters }
        return tooLong && !warnings.contains(.jwsTooLong) ? warnings + [.jwsTooLong] : warnings
    }

    // MARK: - Valid cards

    /// Each valid card as `.smart-health-card`, `.jws`, `.qr.txt` and `.png` (chunked: a folder of QR texts
    /// and one of images), plus a file with two JWS.
    mutating func addValidCards() throws {
        try addValid(
            "covid19-1-dose", covidRecord("covid19-1-dose"), "A COVID-19 vaccination card with one dose (CVX 207).")
        try addValid(
            "covid19-3-doses", covidRecord("covid19-3-doses", doses: 3), "A COVID-19 vaccination card with three doses."
        )

        var mmr = people.person("immunization-mmr")
        mmr.doses = people.doses("immunization-mmr", count: 2, vaccine: FixturePeople.mmr)
        try addValid("immunization-mmr", mmr, "A vaccination card that is not COVID-19: two MMR doses (CVX 03).")

        var lab = people.person("lab-qualitative")
        lab.labs = [people.lab("lab-qualitative")]
        try addValid(
            "lab-qualitative", lab,
            "A lab result card: a qualitative SARS-CoV-2 antigen test (LOINC 94558-4), "
                + "not detected (SNOMED CT 260415000).")

        var both = covidRecord("two-jws")
        let vaccination = try card(both)
        both.doses = []
        both.labs = [people.lab("two-jws")]
        let test = try card(both)
        addCardFile(
            "valid", "two-jws", [vaccination.jws, test.jws],
            "A .smart-health-card file holding two JWS: a vaccination card and a lab result card of one person.")

        let ridPerson = covidRecord("rid")
        try addValid(
            "rid-not-revoked", ridPerson,
            "A card with vc.rid. The issuer's CRL lists that rid as "
                + "\"<rid>.\(ridCutoff)\" (cards issued before \(Clock.describe(ridCutoff))); this card was issued after, "
                + "so it is not revoked (invalid/revoked-before shows an earlier card of the same person).",
            claims: claims(rid: rid(ridPerson)))

        try addValid(
            "exp-future", covidRecord("exp-future"),
            "A card with exp ten years after nbf (cards rarely expire; "
                + "when they do, exp is in seconds).", claims: claims(expires: notBefore + 3_650 * 86_400))

        let (largest, length) = try largestSingleQRRecord()
        try addValid(
            "max-single-qr", largest,
            "The largest card one QR holds: a \(length)-character JWS, the most a "
                + "JWS with the standard 79-byte header can have within the 1195-character limit (1195 itself cannot "
                + "occur: base64url never gives a 1001-character payload part). Its QR is version 22.")

        try addChunked()

        try addValid(
            "x5c", covidRecord("x5c"),
            "A card signed by the issuer's second key, whose key set entry "
                + "carries an x5c chain (a leaf with subjectAltName URI \(options.issuer), and the test CA).",
            signer: try FixtureSigner(testKey: x5cKey))
    }

    /// The four forms of one valid card.
    mutating func addValid(
        _ name: String, _ record: FixtureRecord, _ description: String,
        claims: FixturePipeline.Claims? = nil, signer: FixtureSigner? = nil
    ) throws {
        let output = try card(record, claims: claims, signer: signer)
        let jws = output.jws
        addCardFile("valid", name, [jws], description)
        add("valid/\(name).jws", Array(jws.compact.utf8))
        add(entry(name, ["valid/\(name).jws"], kind: "jws", description + " As compact JWS text."))
        guard let text = try FixtureOutput.qrTexts(jws).first, let symbol = try FixtureOutput.symbols(jws).first else {
            throw HealthCardError(.qr, "fixture \(name): no QR text")
        }
        add("valid/\(name).qr.txt", text)
        add(entry(name, ["valid/\(name).qr.txt"], kind: "qr-text", description + " As shc:/ QR text."))
        add("valid/\(name).png", try QRImage().png(symbol))
        add(
            entry(
                name, ["valid/\(name).png"], kind: "qr-image",
                description + " As a QR image (version \(symbol.version), error correction L)."))
    }

    /// The rid `issue --rid-secret` would give `record`'s person with the catalogue's secret.
    func rid(_ record: FixtureRecord) throws -> String { try RID.derive(secret: ridSecret, kid: kid, patientID: record.patientID) }

    /// A card whose JWS is the longest that fits one QR: doses are added and their lots lengthened until
    /// the raw DEFLATE payload is exactly 750 bytes (`b64url` 1000 characters: a 1194-character JWS).
    func largestSingleQRRecord() throws -> (FixtureRecord, Int) {
        for count in 3...40 {
            for extra in 0...(13 * count) {
                var record = people.person("max-single-qr")
                record.doses = people.doses("max-single-qr", count: count, vaccine: FixturePeople.covid19, lotLength: 6)
                for i in record.doses.indices {
                    let more = extra / count + (i < extra % count ? 1 : 0)
                    var random = SeededRandom(seed: options.seed, label: "max-single-qr/lot/\(i)")
                    record.doses[i].lot += random.string(more, from: "ABCDEFGHJKLMNPRSTUVWXYZ0123456789")
                }
                let minimized = try BundleMinimizer.minimize(record.sourceBundle)
                let payload = Payload(
                    issuer: options.issuer, notBefore: String(notBefore),
                    types: Payload.types(for: minimized, policy: .legacy, isCOVID19: Terminology.isCOVID19Code),
                    fhirBundle: minimized)
                let deflated = try RawDeflater().deflate(payload.minifiedBytes).count
                if deflated > 750 { break }
                if deflated == 750 {
                    let length = try card(record).jws.compact.utf8.count
                    return (record, length)
                }
            }
        }
        throw HealthCardError(
            .validation, "no fixture card of exactly 750 deflated bytes was found; try another seed")
    }

    /// The record of the chunked card: enough doses for a JWS over 1195 characters (two chunks).
    func chunkedRecord() throws -> FixtureRecord {
        for count in 8...30 {
            var record = people.person("covid19-chunked")
            record.doses = people.doses("covid19-chunked", count: count, vaccine: FixturePeople.covid19, lotLength: 10)
            if try card(record).jws.compact.utf8.count > 1_300 { return record }
        }
        throw HealthCardError(.validation, "the chunked fixture card did not grow past 1300 characters")
    }

    /// The chunked (legacy) card: file, JWS, and its QR chunks as texts and as images, each set in a folder.
    mutating func addChunked() throws {
        let name = "covid19-chunked"
        let jws = try card(try chunkedRecord()).jws
        let length = jws.compact.utf8.count
        let description =
            "A card too long for one QR (a \(length)-character JWS), split into balanced chunked QR codes "
            + "as issuing with chunked QRs does (deprecated since SHC 1.3.0, still accepted)."
        addCardFile("valid", name, [jws], description)
        add("valid/\(name).jws", Array(jws.compact.utf8))
        add(
            entry(
                name, ["valid/\(name).jws"], kind: "jws", description + " As compact JWS text.", warnings: [.jwsTooLong]
            ))
        let texts = try FixtureOutput.qrTexts(jws)
        let symbols = try FixtureOutput.symbols(jws)
        var textFiles: [String] = []
        var imageFiles: [String] = []
        for (i, text) in texts.enumerated() {
            textFiles.append("valid/\(name)/qr-text/chunk-\(i + 1).qr.txt")
            add(textFiles[i], text)
            imageFiles.append("valid/\(name)/qr-image/chunk-\(i + 1).png")
            add(imageFiles[i], try QRImage().png(symbols[i]))
        }
        add(
            entry(
                name, textFiles, kind: "qr-text",
                description + " As \(texts.count) shc:/C/N/ QR texts (give them together).",
                warnings: [.qrChunked]))
        add(
            entry(
                name, imageFiles, kind: "qr-image", description + " As \(texts.count) QR images (give them together).",
                warnings: [.qrChunked]))
    }

    // MARK: - The issuer's site

    /// `site/`: the issuer's key set (its key, and the x5c key with its chain), an empty CRL for each, then the
    /// revocations (the `revoked` person, and the `rid` person's cards before the cutoff), laid out as
    /// `healthcards site --issuer` does. And the other issuer's site, for `key-not-from-issuer`.
    func writeSites(in folder: String) throws {
        let chain = try CertificateBuilder.chain(
            caKey: caKey,
            ca: .init(
                commonName: "healthcards fixtures test CA (seed \(options.seed))", serial: 1,
                notBefore: options.now - 400 * 86_400, notAfter: options.now + 3_650 * 86_400),
            leafKey: x5cKey,
            leaf: .init(
                commonName: "healthcards fixtures issuer key", serial: 2,
                notBefore: options.now - 400 * 86_400, notAfter: options.now + 3_650 * 86_400),
            issuerURL: options.issuer)
        var certified = JWK(key: x5cKey.key)
        certified.x5c = chain.map { Base64URL.encodeStandard($0) }
        let site = IssuerSite(root: folder + "/" + Self.site)
        _ = try site.publish(
            keys: [JWK(key: options.key.publicKey), certified], createCRLs: true,
            pathPrefix: Self.pathPrefix(options.issuer), issuer: options.issuer)
        _ = try site.revoke(
            [CRL.Entry(rid: rid(covidRecord("revoked"))), CRL.Entry(rid: rid(covidRecord("rid")), before: ridCutoff)],
            kid: kid)
        let other = IssuerSite(root: folder + "/" + Self.otherSite)
        _ = try other.publish(
            keys: [JWK(key: otherIssuerKey.key)], createCRLs: true, pathPrefix: Self.pathPrefix(otherIssuer),
            issuer: otherIssuer)
    }

    /// The path part of an issuer URL (`/shc` of `https://host/shc`), for the `_headers` file.
    static func pathPrefix(_ issuer: String) -> String {
        let rest = issuer.dropFirst("https://".count)
        guard let slash = rest.firstIndex(of: "/") else { return "" }
        return String(rest[slash...])
    }
}
