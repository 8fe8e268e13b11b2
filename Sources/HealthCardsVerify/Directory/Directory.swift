import HealthCardsCore

/// The VCI directory, offline: a signed snapshot of every listed issuer's keys and revocation lists
/// (`vci_snapshot.json`, signed by `vci_snapshot.sig` with the key of `vci_snapshot.crt`), with the list of
/// issuers it covers (`vci-issuers.json`) and the day's audit (`daily_audit.json`), as published in the
/// `the-commons-project/vci-directory` repository (docs/directory.md). Bytes in: a verifier app loads the
/// files it downloaded; nothing is read from disk or fetched, and no clock is read.
///
/// The snapshot is trusted only once its signature verifies (ECDSA P-521 with SHA-512, DER, over its exact
/// bytes, checked by OpenSSL); a snapshot whose signature fails is refused before anything in it is read.
/// The issuer list and the audit are not signed: they only say which issuers are still listed (the others are
/// archival) and which had errors that day, never which keys are trusted.
///
/// Issuers are found by their `iss` exactly, then through a signed entry's `canonical_iss` (an alias host);
/// a key is found by its issuer and `kid` together, never by `kid` alone (tenants of one EHR vendor share
/// keys, so one kid is under several issuers).
///
/// ```swift
/// let directory = try Directory(snapshot: json, signature: sig, certificate: pinnedCert, issuerList: list,
///                               audit: audit)
/// var trust = TrustStore()
/// trust.add(directory: directory, now: now)
/// ```
public struct Directory: Sendable {
    /// What a directory reads at most (hostile input costs no more than these).
    public struct Limits: Sendable, Equatable {
        /// `vci_snapshot.json`: 32 MiB (the snapshot of 2026-08 is 0.7 MB).
        public var snapshotBytes = 32 << 20
        /// `vci_snapshot.sig`: 1 KiB (a P-521 DER signature is at most 139 bytes).
        public var signatureBytes = 1 << 10
        /// `vci-issuers.json`: 8 MiB.
        public var issuerListBytes = 8 << 20
        /// `daily_audit.json`: 16 MiB.
        public var auditBytes = 16 << 20
        /// Entries of the snapshot (`issuerInfo`): 100,000.
        public var entries = 100_000
        /// Keys of one entry: 1,000 (the most in 2026-08 is 20).
        public var keysPerEntry = 1_000
        /// CRLs of one entry: 1,000.
        public var crlsPerEntry = 1_000

        public init() {}
    }

    /// One issuer of the snapshot (`issuerInfo[i]`).
    public struct Issuer: Sendable {
        /// The position in the snapshot's `issuerInfo`.
        public let index: Int
        /// The position in `Directory.issuers` (entries left out of the snapshot's are not counted).
        public let position: Int
        /// `issuer.iss`: the issuer URL cards carry.
        public let iss: String
        /// `issuer.name`: how the directory names the issuer.
        public let name: String
        /// `issuer.website`, when given.
        public let website: String?
        /// `issuer.canonical_iss` of the (signed) snapshot entry, when given: the other `iss` this one stands for.
        public let canonicalIss: String?
        /// `canonical_iss` of the issuer in `vci-issuers.json` (unsigned; shown, never used to find keys).
        public let listedCanonicalIss: String?
        /// True when the issuer list names it, false when it does not (archival: kept in the snapshot for the
        /// record); nil when no issuer list was given.
        public let isListed: Bool?
        /// `lastRetrieved` as written.
        public let lastRetrievedText: String?
        /// `lastRetrieved` in seconds since 1970; nil when absent or not a date-time.
        public let lastRetrieved: Int64?
        /// The kids of its keys, in order.
        public let kids: [String]
        /// Its revocation lists: each list's kid and `ctr` (as a number; the snapshot writes a few as strings).
        public let crls: [(kid: String, ctr: Int?)]
        /// The errors the day's audit lists for it (empty when none, or no audit was given).
        public let auditErrors: [String]
        /// The entry's keys as a JWK Set (`{"keys":[…]}`), `crlVersion` written as a number.
        package let keySetBytes: [UInt8]
        /// The entry's revocation lists by kid, as CRL files (`ctr` written as a number).
        package let crlFiles: [String: [UInt8]]

        /// True when `lastRetrieved` is before `cutoff` (seconds), or cannot be read.
        public func isStale(before cutoff: Int64) -> Bool { lastRetrieved.map { $0 < cutoff } ?? true }
    }

    /// How an issuer was found for an `iss`.
    public enum Match: Sendable, Equatable {
        /// An entry has exactly this `iss`.
        case exact
        /// No entry has this `iss`; an entry names it as its `canonical_iss`.
        case canonical
    }

    /// Counts over the snapshot (what `show` prints).
    public struct Counts: Sendable, Equatable {
        public var entries = 0
        /// Entries the issuer list names (all of them when no list was given).
        public var listed = 0
        /// Entries the issuer list does not name (0 when no list was given).
        public var archival = 0
        public var keys = 0
        public var entriesWithCRLs = 0
        public var entriesWithoutKeys = 0
        /// kids found under more than one entry.
        public var sharedKids = 0
        /// Listed issuers (in the issuer list) that carry a `canonical_iss`.
        public var listedWithCanonicalIss = 0
        /// Snapshot entries that carry a `canonical_iss`.
        public var entriesWithCanonicalIss = 0
        /// Issuers the audit lists with errors.
        public var auditErrors = 0
    }

    /// The snapshot's `time`, as written.
    public let time: String
    /// The snapshot's `time` in seconds since 1970, when it is a date-time.
    public let timeSeconds: Int64?
    /// The snapshot's `directory` (the issuer list's URL), when given.
    public let source: String?
    /// The entries, in the snapshot's order.
    public let issuers: [Issuer]
    /// The certificate that verified the snapshot's signature: its subject, validity and SHA-256 fingerprint.
    public let certificateSubject: String
    public let certificateFingerprint: String
    public let certificateValidity: X509Chain.Validity
    /// True when an issuer list (`vci-issuers.json`) was given: archival issuers can be told apart.
    public let hasIssuerList: Bool
    /// The audit's `auditTime`, when an audit was given.
    public let auditTime: String?
    /// What is odd in the snapshot but not refused (an entry without a usable iss is left out, and said here).
    public let findings: [Finding]
    public let counts: Counts

    private let byIss: [String: Int]
    private let byCanonical: [String: [Int]]
    private let byKid: [String: [Int]]

    /// The name findings are located at.
    public static let snapshotName = "vci_snapshot.json"

    /// The key age allowed by default: 365 days. A key the directory last fetched longer ago is stale
    /// (`DIRECTORY_KEYS_STALE`): the issuer has stopped publishing it.
    public static let defaultMaxKeyAge: Int64 = 365 * 86_400

    /// What makes `signature` no DER ECDSA signature at all (`SEQUENCE { INTEGER r, INTEGER s }`, at most 139 bytes
    /// for P-521, usually 137 to 139), said with the length found and the length expected, e.g. "is truncated: it is 100 bytes, and the
    /// DER signature it starts is 139 bytes"; nil when it has that shape (whether it verifies is another matter).
    /// A file cut short in a download is told apart from a signature that does not verify (a changed snapshot).
    static func signatureShapeProblem(_ signature: [UInt8]) -> String? {
        let expected = "a P-521 ECDSA signature is a DER SEQUENCE of two INTEGERs, usually 137 to 139 bytes"
        guard !signature.isEmpty else { return "is empty (0 bytes; \(expected))" }
        /// The DER element at `start`: its tag, where its content starts, and where it ends (possibly past `limit`).
        func element(at start: Int, limit: Int) -> (tag: UInt8, content: Int, end: Int)? {
            guard start + 2 <= limit else { return nil }
            let first = Int(signature[start + 1])
            if first < 0x80 { return (signature[start], start + 2, start + 2 + first) }
            // Long form: one or two length bytes are all a signature needs (139 bytes at most).
            let count = first & 0x7F
            guard (1...2).contains(count), start + 2 + count <= limit else { return nil }
            let length = signature[(start + 2)..<(start + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
            return (signature[start], start + 2 + count, start + 2 + count + length)
        }
        let head = signature.prefix(4).map { ($0 < 0x10 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: " ")
        let notDER = "is not a DER ECDSA signature (\(signature.count) byte\(signature.count == 1 ? "" : "s"), starting \(head); \(expected))"
        guard let sequence = element(at: 0, limit: signature.count), sequence.tag == 0x30 else { return notDER }
        if sequence.end > signature.count {
            return "is truncated: it is \(signature.count) byte\(signature.count == 1 ? "" : "s"), and the DER signature it starts is "
                + "\(sequence.end) bytes (\(expected))"
        }
        if sequence.end < signature.count {
            return "has \(signature.count - sequence.end) byte(s) after the DER signature it starts (\(signature.count) bytes where the "
                + "signature is \(sequence.end); \(expected))"
        }
        guard let r = element(at: sequence.content, limit: signature.count), r.tag == 0x02, r.end <= signature.count,
            let s = element(at: r.end, limit: signature.count), s.tag == 0x02, s.end == signature.count
        else { return notDER }
        return nil
    }

    /// Verifies and reads a snapshot.
    /// - Parameters:
    ///   - snapshot: `vci_snapshot.json`, exactly as downloaded.
    ///   - signature: `vci_snapshot.sig`: ECDSA P-521 / SHA-512, ASN.1 DER, over `snapshot`.
    ///   - certificate: the certificate (PEM or DER) whose EC P-521 key made the signature: pin your own copy
    ///     of `vci_snapshot.crt` rather than trust one downloaded beside the snapshot.
    ///   - certificateName: its name, for messages.
    ///   - issuerList: `vci-issuers.json`, when given: which issuers are listed (the others are archival).
    ///   - audit: `daily_audit.json`, when given: the issuers whose endpoints failed that day.
    /// - Throws: `HealthCardError` with `DIRECTORY_SIGNATURE_INVALID` when the signature does not verify (nothing
    ///   is read), `KEY_UNUSABLE` for a certificate that is not one with an EC P-521 key, `DIRECTORY_INVALID` for
    ///   a file over its budget or not of the directory's shape.
    public init(
        snapshot: [UInt8], signature: [UInt8], certificate: [UInt8], certificateName: String = "vci_snapshot.crt",
        issuerList: [UInt8]? = nil, audit: [UInt8]? = nil, limits: Limits = Limits()
    ) throws(HealthCardError) {
        func invalid(_ what: String) -> HealthCardError { HealthCardError(.input, code: .directoryInvalid, what) }
        guard snapshot.count <= limits.snapshotBytes else {
            throw invalid("\(Self.snapshotName) is \(snapshot.count) bytes; at most \(InputBudget.describe(bytes: limits.snapshotBytes)) are read")
        }
        guard signature.count <= limits.signatureBytes else {
            throw HealthCardError(.input, code: .directorySignatureInvalid,
                "vci_snapshot.sig is \(signature.count) bytes; a P-521 DER signature is at most 139. The directory is refused: "
                    + "download vci_snapshot.json and vci_snapshot.sig again, from the same commit")
        }
        let key = try CertificateKey(certificate: certificate, source: certificateName, curve: "P-521")
        // A file cut short or not a signature at all is said as such, not as a snapshot changed.
        if let problem = Self.signatureShapeProblem(signature) {
            throw HealthCardError(.input, code: .directorySignatureInvalid,
                "vci_snapshot.sig \(problem), so \(Self.snapshotName) cannot be checked with it. The directory is refused and no "
                    + "card is judged against it; download vci_snapshot.json and vci_snapshot.sig again, from the same commit "
                    + "of the directory")
        }
        guard key.verifyECDSASHA512(signatureDER: signature, message: snapshot) else {
            throw HealthCardError(.input, code: .directorySignatureInvalid,
                "the signature vci_snapshot.sig does not verify over \(Self.snapshotName) with the key of \(certificateName) "
                    + "(\(key.subject), SHA-256 \(key.sha256Fingerprint)): the snapshot was changed, the signature is of "
                    + "another snapshot, or another key made it. The directory is refused and no card is judged against it; "
                    + "download vci_snapshot.json and vci_snapshot.sig again, from the same commit of the directory")
        }
        certificateSubject = key.subject
        certificateFingerprint = key.sha256Fingerprint
        certificateValidity = key.validity

        let json: JSONValue
        do { json = try JSONParser.parseFailing(snapshot) } catch { throw invalid("\(Self.snapshotName) is not JSON: \(error)") }
        guard let info = json["issuerInfo"]?.arrayValue else {
            throw invalid("\(Self.snapshotName) has no issuerInfo array; a snapshot is {\"directory\",\"time\",\"issuerInfo\":[…]}")
        }
        guard info.count <= limits.entries else {
            throw invalid("\(Self.snapshotName) has \(info.count) entries; at most \(limits.entries) are read")
        }
        time = json["time"]?.stringValue ?? ""
        timeSeconds = Self.seconds(time)
        source = json["directory"]?.stringValue

        // The issuer list (unsigned): which issuers are listed, and their canonical_iss.
        var listed: [String: String?] = [:]
        if let issuerList {
            guard issuerList.count <= limits.issuerListBytes else {
                throw invalid("vci-issuers.json is \(issuerList.count) bytes; at most \(InputBudget.describe(bytes: limits.issuerListBytes)) are read")
            }
            let list: JSONValue
            do { list = try JSONParser.parseFailing(issuerList) } catch { throw invalid("vci-issuers.json is not JSON: \(error)") }
            guard let items = list["participating_issuers"]?.arrayValue else {
                throw invalid("vci-issuers.json has no participating_issuers array")
            }
            for item in items {
                guard let iss = item["iss"]?.stringValue else { continue }
                // updateValue: assigning a nil canonical_iss through the subscript would remove the issuer.
                listed.updateValue(item["canonical_iss"]?.stringValue, forKey: iss)
            }
        }
        hasIssuerList = issuerList != nil

        // The audit (unsigned): issuers with errors that day.
        var auditErrors: [String: [String]] = [:]
        if let audit {
            guard audit.count <= limits.auditBytes else {
                throw invalid("daily_audit.json is \(audit.count) bytes; at most \(InputBudget.describe(bytes: limits.auditBytes)) are read")
            }
            let document: JSONValue
            do { document = try JSONParser.parseFailing(audit) } catch { throw invalid("daily_audit.json is not JSON: \(error)") }
            auditTime = document["auditTime"]?.stringValue
            for item in document["issuersWithErrors"]?.arrayValue ?? [] {
                guard let iss = item["issuer"]?["iss"]?.stringValue else { continue }
                let errors = (item["errors"]?.arrayValue ?? []).compactMap(\.stringValue).map { String($0.prefix(500)) }
                auditErrors[iss, default: []] += errors.isEmpty ? ["(no detail)"] : errors
            }
        } else {
            auditTime = nil
        }

        var issuers: [Issuer] = []
        var findings: [Finding] = []
        var byIss: [String: Int] = [:]
        var byCanonical: [String: [Int]] = [:]
        var counts = Counts()
        var kidOwners: [String: Set<Int>] = [:]
        issuers.reserveCapacity(info.count)
        for (i, entry) in info.enumerated() {
            let path = "issuerInfo[\(i)]"
            func skip(_ why: String) {
                findings.append(Finding(.directoryInvalid, "\(path) is left out: \(why)",
                    at: .init(file: Self.snapshotName, path: path), severity: .warning))
            }
            guard let iss = entry["issuer"]?["iss"]?.stringValue, !iss.isEmpty else {
                skip("it has no issuer.iss")
                continue
            }
            guard byIss[iss] == nil else {
                skip("its iss \(Quote.text(iss, limit: 200)) is also that of issuerInfo[\(issuers[byIss[iss]!].index)]; the first is kept")
                continue
            }
            let keyList = entry["keys"]?.arrayValue ?? []
            guard keyList.count <= limits.keysPerEntry else {
                skip("it has \(keyList.count) keys; at most \(limits.keysPerEntry) are read")
                continue
            }
            let crlList = entry["crls"]?.arrayValue ?? []
            guard crlList.count <= limits.crlsPerEntry else {
                skip("it has \(crlList.count) revocation lists; at most \(limits.crlsPerEntry) are read")
                continue
            }
            // Keys as a JWK Set, crlVersion as a number (the snapshot writes a few as strings, e.g. "1").
            var keys: [JSONValue] = []
            var kids: [String] = []
            for key in keyList {
                guard var object = key.objectValue else {
                    keys.append(key)
                    continue
                }
                if let version = object["crlVersion"], let number = Self.wholeNumber(version) { object["crlVersion"] = number }
                if let kid = object["kid"]?.stringValue {
                    kids.append(kid)
                    kidOwners[kid, default: []].insert(issuers.count)
                }
                keys.append(.object(object))
            }
            var crlFiles: [String: [UInt8]] = [:]
            var crls: [(kid: String, ctr: Int?)] = []
            for crl in crlList {
                guard var object = crl.objectValue, let kid = object["kid"]?.stringValue else { continue }
                let ctr = object["ctr"].flatMap(Self.wholeNumber)
                if let ctr { object["ctr"] = ctr }
                crls.append((kid, ctr?.numberLexeme.flatMap { Int($0) }))
                if crlFiles[kid] == nil { crlFiles[kid] = JSONWriter.minified(.object(object)) }
            }
            let lastText = entry["lastRetrieved"]?.stringValue
            let isListed: Bool? = issuerList == nil ? nil : listed[iss] != nil
            let canonical = entry["issuer"]?["canonical_iss"]?.stringValue
            let issuer = Issuer(
                index: i, position: issuers.count, iss: iss, name: entry["issuer"]?["name"]?.stringValue ?? iss,
                website: entry["issuer"]?["website"]?.stringValue, canonicalIss: canonical,
                listedCanonicalIss: listed[iss] ?? nil, isListed: isListed, lastRetrievedText: lastText,
                lastRetrieved: lastText.flatMap(Self.seconds), kids: kids, crls: crls, auditErrors: auditErrors[iss] ?? [],
                keySetBytes: JSONWriter.minified(.object(["keys": .array(keys)])), crlFiles: crlFiles)
            byIss[iss] = issuers.count
            if let canonical, canonical != iss { byCanonical[canonical, default: []].append(issuers.count) }
            issuers.append(issuer)
            counts.entries += 1
            if isListed == false { counts.archival += 1 } else { counts.listed += 1 }
            counts.keys += keyList.count
            if !crlList.isEmpty { counts.entriesWithCRLs += 1 }
            if keyList.isEmpty { counts.entriesWithoutKeys += 1 }
            if canonical != nil { counts.entriesWithCanonicalIss += 1 }
            if !issuer.auditErrors.isEmpty { counts.auditErrors += 1 }
        }
        counts.sharedKids = kidOwners.values.filter { $0.count > 1 }.count
        counts.listedWithCanonicalIss = listed.values.filter { $0 != nil }.count
        self.issuers = issuers
        self.findings = findings
        self.byIss = byIss
        self.byCanonical = byCanonical
        self.byKid = kidOwners.mapValues { $0.sorted() }
        self.counts = counts
    }

    /// The issuer(s) a card with `iss` belongs to: the entry with exactly this `iss`; else the entries whose
    /// (signed) `canonical_iss` is this `iss`. Empty when the directory does not know it. A dictionary look-up:
    /// no scan of the entries.
    public func issuers(for iss: String) -> (issuers: [Issuer], match: Match)? {
        if let i = byIss[iss] { return ([issuers[i]], .exact) }
        if let aliases = byCanonical[iss], !aliases.isEmpty { return (aliases.map { issuers[$0] }, .canonical) }
        return nil
    }

    /// The snapshot entries that publish `kid`, whatever their issuer (for telling a card that names another
    /// issuer's key; never to choose a key).
    public func issuers(publishing kid: String) -> [Issuer] { (byKid[kid] ?? []).map { issuers[$0] } }

    /// A JSON number or a string of digits as a JSON number (no sign, fraction or exponent; below 2^53).
    static func wholeNumber(_ value: JSONValue) -> JSONValue? {
        let text = value.numberLexeme ?? value.stringValue
        guard let text, !text.isEmpty, text.count <= 15, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let number = Int64(text)
        else { return nil }
        return .integer(number)
    }

    /// An RFC 3339 date-time (`2026-08-22T04:43:50Z`) in seconds since 1970; nil for anything else.
    static func seconds(_ text: String) -> Int64? {
        guard text.utf8.count <= 40, text.contains("T"), let value = FHIRDateTime(text, allowPartial: false) else { return nil }
        return value.earliest
    }
}
