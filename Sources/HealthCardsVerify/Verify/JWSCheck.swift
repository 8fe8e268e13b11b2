import HealthCardsCore

/// Checks one compact JWS as a SMART Health Cards verifier does: compact form, base64url, header, raw
/// DEFLATE, payload JSON, claims, the FHIR Bundle (with `BundleValidator`, the same rules `issue`
/// applies), signature and revocation (digest sections 1 to 4, 7 to 9).
package struct JWSCheck {
    /// The key sets to check signatures with, each bound to its issuer (`TrustStore`); none means the
    /// signature is not checked (a warning says so).
    package var keyRing: KeyRing
    /// The time to judge `nbf`, `exp` and clinical dates against, in seconds since the epoch.
    package var now: Int64
    package var limits: VerifyLimits

    package init(keyRing: KeyRing, now: Int64, limits: VerifyLimits = VerifyLimits()) {
        self.keyRing = keyRing
        self.now = now
        self.limits = limits
    }

    /// A checker with no keys: everything but the signature is checked.
    package init(now: Int64, limits: VerifyLimits = VerifyLimits()) {
        self.init(keyRing: KeyRing(), now: now, limits: limits)
    }

    /// Checks `jws` and adds what it finds to `report` (which names the file and credential index).
    package func check(_ jws: String, into report: inout CredentialReport, chunk: Int? = nil) {
        // Runs last (after the findings are added): the report keeps only what its limits allow.
        defer { report.keepWithinLimits(limits) }
        report.jws = jws
        let base = Finding.Location(file: report.locationFile, credential: report.index, chunk: chunk)
        var found: [Finding] = []
        defer { report.findings += found }
        func add(_ code: RuleCode, _ path: String?, _ message: String, _ severity: Finding.Severity? = nil) {
            var at = base
            at.path = path
            found.append(Finding(code, message, at: at, severity: severity))
        }
        // Compact form: three base64url parts, nothing else.
        let bytes = Array(jws.utf8)
        if let bad = bytes.firstIndex(where: { !isCompactCharacter($0) }) {
            let what = bytes[bad] == 0x3D ? "padding '='" : (bytes[bad] <= 0x20 ? "whitespace" : "the character '\(String(decoding: [bytes[bad]], as: UTF8.self))'")
            add(.jwsCompactForm, nil, "the JWS contains \(what) at character \(bad); a compact JWS uses only A-Z a-z 0-9 - _ and two '.'")
        }
        let pieces = bytes.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard pieces.count == 3 else {
            add(.jwsCompactForm, nil, "a compact JWS has 3 parts (header.payload.signature), found \(pieces.count)")
            return
        }
        let names = ["header", "payload", "signature"]
        var decoded: [[UInt8]?] = []
        for (i, piece) in pieces.enumerated() {
            let value = Base64URL.decode(Array(piece))
            if value == nil || piece.isEmpty {
                add(.jwsBase64URL, names[i], "the JWS \(names[i]) is not base64url without padding (RFC 4648 section 5)")
            }
            decoded.append(piece.isEmpty ? nil : value)
        }
        if bytes.count > QRNumeric.maxSingleJWSCharacters && report.source != .qrText && report.source != .qrImage {
            add(.jwsTooLong, nil, "the JWS is \(bytes.count) characters; one QR holds at most \(QRNumeric.maxSingleJWSCharacters), so its QR form needs chunking (deprecated)")
        }
        if let header = decoded[0] { checkHeader(header, report: &report, add: add) }
        let saysDEF = report.header?["zip"]?.stringValue == "DEF"
        var inflated = 0
        defer {
            report.payloadBytes = inflated
            report.payloadEchoOmitted = inflated > limits.echoedPayloadBytes
            report.summaryEntries = limits.summaryEntries
        }
        if let payload = decoded[1], let json = inflatePayload(payload, headerSaysDEF: saysDEF, inflatedBytes: &inflated, add: add) {
            report.payload = json
            ClaimsCheck(now: now).check(json, add: add)
            if let bundle = json["vc"]?["credentialSubject"]?["fhirBundle"], bundle.objectValue != nil {
                let checked = CheckedBundle(asFound: bundle, now: now)
                report.profile = checked.profile
                var findings = checked.findings
                if let nbf = NumericDate(json["nbf"]) {
                    findings += checked.eventsAfter(notBefore: nbf.whole, severity: .warning)
                }
                for finding in findings {
                    add(finding.code, finding.location.path, finding.message, finding.severity)
                }
            }
        }
        if let signature = decoded[2] {
            let signingInput = Array(bytes.prefix(pieces[0].count + 1 + pieces[1].count))
            let budget = SignatureBudget(limits.signatureVerificationsPerCredential)
            checkSignature(signature, signingInput: signingInput, report: &report, budget: budget, add: add)
        }
    }

    static let allowedHeader: Set<String> = ["alg", "zip", "kid"]
    /// The JWS extensions this verifier implements (`crit`, RFC 7515 section 4.1.11): none.
    static let implementedExtensions: Set<String> = []

    private func checkHeader(_ bytes: [UInt8], report: inout CredentialReport, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        guard let header = try? JSONParser.parse(bytes), let object = header.objectValue else {
            add(.headerNotJSON, "header", "the JWS header is not a JSON object", nil)
            return
        }
        report.header = header
        if object["alg"]?.stringValue != "ES256" {
            add(.headerAlg, "header.alg", "alg must be \"ES256\", found \(quoted(object["alg"]))", nil)
        }
        if object["zip"]?.stringValue != "DEF" {
            add(.headerZip, "header.zip", "zip must be \"DEF\" (the payload is raw DEFLATE), found \(quoted(object["zip"]))", nil)
        }
        if object["kid"]?.stringValue == nil {
            add(.headerKidMissing, "header.kid", "the header has no kid; it must be the RFC 7638 thumbprint of the signing key", nil)
        }
        if let crit = object["crit"] {
            let names = crit.arrayValue?.compactMap(\.stringValue) ?? []
            let wellFormed = crit.arrayValue.map { !$0.isEmpty && names.count == $0.count } ?? false
            let unknown = names.filter { !Self.implementedExtensions.contains($0) }
            if !wellFormed {
                add(.headerCrit, "header.crit", "crit is \(quoted(crit)); RFC 7515 section 4.1.11 makes it a non-empty array of the "
                    + "header parameter names a verifier must understand, so a JWS with this header is invalid", nil)
            } else if !unknown.isEmpty {
                add(.headerCrit, "header.crit", "crit names \(unknown.map { Quote.text($0) }.joined(separator: ", ")), an extension "
                    + "this verifier does not implement; RFC 7515 section 4.1.11: a JWS whose crit names one the verifier does "
                    + "not understand is invalid (SMART Health Cards headers carry only alg, zip and kid)", nil)
            }
        }
        for key in object.keys where !Self.allowedHeader.contains(key) && key != "crit" {
            add(.headerExtraMember, "header.\(key)", "the header has \(Quote.text(key)); SMART Health Cards headers carry only alg, zip and kid", nil)
        }
    }

    /// Raw-inflates and parses the payload; nil when it cannot be read.
    /// - Parameter inflatedBytes: set to the payload's size once inflated (for the per-file budget).
    private func inflatePayload(_ compressed: [UInt8], headerSaysDEF: Bool, inflatedBytes: inout Int,
                                add: (RuleCode, String?, String, Finding.Severity?) -> Void) -> JSONValue? {
        var bytes: [UInt8]
        do {
            bytes = try RawInflate.inflateFailing(compressed)
        } catch {
            switch error {
            case .zlibWrapped:
                add(.deflateZlibWrapped, "payload", "the payload is zlib-wrapped (RFC 1950 header \(hex(compressed.prefix(2))) and Adler-32 trailer), not raw DEFLATE; compress with windowBits -15 (deflateInit2(..., -15, ...))", nil)
                // Read on past the wrapper so the content is still checked: 2-byte header, 4-byte Adler-32.
                guard compressed.count > 6, let inner = try? RawInflate.inflate(Array(compressed.dropFirst(2).dropLast(4))) else { return nil }
                bytes = inner
            case .gzipWrapped:
                add(.deflateGzipWrapped, "payload", "the payload is gzip-wrapped, not raw DEFLATE (RFC 1951); compress with windowBits -15", nil)
                return nil
            case .tooLarge:
                add(.deflateTooLarge, "payload", "the payload inflates to more than \(RawInflate.maxOutput) bytes; refused", nil)
                return nil
            case .trailingData(let count):
                // What pako (the reference validator's inflater) and zlib's raw inflate do: stop at the end of the
                // stream. The signature covers the bytes as sent, so nothing after the stream can change what the
                // card says: an issuer-conformance defect (a warning), not a different card.
                guard let (inner, _) = try? RawInflate.inflateStoppingAtEnd(compressed) else {
                    add(.deflateTrailingData, "payload", "\(count) bytes follow the end of the DEFLATE stream; the payload is exactly one raw DEFLATE stream", nil)
                    return nil
                }
                add(.deflateTrailingData, "payload", "the issuer's payload has \(count) byte\(count == 1 ? "" : "s") after the end of its "
                    + "raw DEFLATE stream (the spec's payload is exactly one stream, finished with Z_FINISH). The card was read "
                    + "up to the end of the stream, as the reference validator (pako) and zlib's raw inflate read it; the "
                    + "signature covers the bytes as sent, so this is the issuer's defect, not a change to the card",
                    .warning)
                bytes = inner
            case .invalid(let message):
                guard (try? JSONParser.parse(compressed)) != nil else {
                    add(.deflateInvalid, "payload", "the payload is not raw DEFLATE (inflating it failed: \(message)); compress the minified payload JSON with raw DEFLATE (RFC 1951)", nil)
                    return nil
                }
                let header = headerSaysDEF ? "the header's zip \"DEF\" says it is" : "the header must say zip \"DEF\" and the payload be compressed"
                add(.deflateInvalid, "payload", "the payload is plain JSON, not compressed; raw-DEFLATE it (\(header))", nil)
                bytes = compressed
            }
        }
        inflatedBytes = bytes.count
        if bytes.starts(with: UTF8BOM.bytes) {
            add(.payloadBOM, "payload", "the payload JSON starts with a UTF-8 byte order mark; remove it (some mobile JSON parsers fail on it)", nil)
            bytes.removeFirst(3)
        }
        let json: JSONValue
        do { json = try JSONParser.parseFailing(bytes) } catch {
            add(.payloadNotJSON, "payload", "the inflated payload is not JSON: \(error)", nil)
            return nil
        }
        if let offset = Self.whitespaceOutsideStrings(bytes) {
            add(.payloadWhitespace, "payload", "the payload JSON has whitespace at byte \(offset); it must be minified (no spaces or newlines outside strings)", nil)
        }
        return json
    }

    /// Offset of the first JSON whitespace byte outside a string, or nil.
    static func whitespaceOutsideStrings(_ bytes: [UInt8]) -> Int? {
        var inString = false
        var escaped = false
        for (i, b) in bytes.enumerated() {
            if inString {
                if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
            } else if b == 0x22 {
                inString = true
            } else if b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
                return i
            }
        }
        return nil
    }

    private func checkSignature(_ signature: [UInt8], signingInput: [UInt8], report: inout CredentialReport,
                                budget: SignatureBudget, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        var raw = signature
        if signature.count != 64 {
            if let converted = try? ES256.rawSignature(fromDER: signature), signature.first == 0x30 {
                add(.sigDER, "signature", "the signature is ASN.1 DER (\(signature.count) bytes); ES256 in a JWS is the 64-byte R‖S form (RFC 7518 section 3.4). Convert it, e.g. swift-crypto rawRepresentation or OpenSSL ECDSA_SIG_get0 + BN_bn2binpad", nil)
                raw = converted
            } else {
                add(.sigLength, "signature", "the signature is \(signature.count) bytes; ES256 in a JWS is exactly 64 bytes (R‖S)", nil)
                report.signature = .failed
                return
            }
        }
        guard !keyRing.isEmpty else {
            add(.sigNotChecked, "signature", "no key set was given, so the signature was not checked; everything else was", nil)
            return
        }
        let iss = report.payload?["iss"]?.stringValue
        let kid = report.header?["kid"]?.stringValue
        func verifies(_ key: TrustedKey) -> Bool {
            budget.spend() && ES256.verify(signature: raw, message: signingInput, key: key.key)
        }
        /// What the budget left untried, for the message of a signature that did not verify.
        func untried() -> String {
            budget.refused == 0 ? "" : " (\(budget.refused) key(s) were not tried: at most \(limits.signatureVerificationsPerCredential) "
                + "signature verifications are spent on one credential)"
        }
        guard iss != nil || keyRing.standIn != nil else {
            // No readable iss (a payload that does not inflate or parse, or has no iss): which issuer's key set
            // applies cannot be known, so the signature is judged with the key the kid names in any set given.
            checkSignatureWithoutIssuer(
                kid: kid, verifies: verifies, budgetRefused: { budget.refused }, raw: raw, signature: signature, report: &report,
                add: add)
            return
        }
        // The card's issuer in the directory, when one is trusted: named as the directory names it, with its warnings.
        let listed = iss.flatMap { keyRing.directory?.lookup($0) }
        if let listed, let trust = keyRing.directory { noteDirectoryEntry(listed, trust: trust, report: &report, add: add) }
        let mine = keyRing.sets(for: iss)
        let keys = mine.flatMap(\.keys)
        // A key of another issuer's key set (or of an unbound set among several) that the card names or is signed by.
        func foreignKey() -> (set: KeyRing.KeySet, key: TrustedKey, signed: Bool)? {
            // The directory's entries that publish the kid, other than the card's issuer's: found by the kid's index.
            if let trust = keyRing.directory, let kid {
                let own = Set((listed?.entries ?? []).map(\.position))
                for entry in trust.directory.issuers(publishing: kid) where entry.iss != iss && !own.contains(entry.position) {
                    let set = trust.sets[entry.position]
                    if let key = set.keys.first(where: { $0.kid == kid || $0.thumbprint == kid }) { return (set, key, verifies(key)) }
                }
            }
            let others = keyRing.otherSets(for: iss)
            for set in others {
                for key in set.keys where key.kid == kid || key.thumbprint == kid { return (set, key, verifies(key)) }
            }
            for set in others {
                for key in set.keys where verifies(key) { return (set, key, true) }
            }
            return nil
        }
        // Past the guard above, a card without iss has the stand-in set, so `mine` is empty only for a known iss.
        guard !mine.isEmpty else {
            let iss = iss ?? "?"
            if let trust = keyRing.directory {
                let when = trust.directory.time.isEmpty ? "" : " of \(trust.directory.time)"
                add(.directoryIssuerUnknown, "iss", "the card's issuer \(Quote.text(iss, limit: 300)) is not in the VCI directory\(when) "
                    + "(neither as an iss nor as a canonical_iss) and no key set of its own was given, so the card is not verified. "
                    + "Check the iss letter for letter; if the issuer is genuine but not listed, give its key set bound to it "
                    + "(\(iss)=PATH)", nil)
            }
            if let foreign = foreignKey() {
                add(.keyNotFromIssuer, "header.kid", Self.foreignKeyMessage(foreign, iss: iss), nil)
            } else if keyRing.directory == nil {
                let given = keyRing.sets.map(\.described).joined(separator: ", ")
                add(.sigNotChecked, "signature", "no key set of the card's issuer \(iss) was given (given: \(given)), so the "
                    + "signature was not checked; a key verifies only cards of the issuer that publishes it. Give its key set "
                    + "bound to it (\(iss)=PATH), or its issuer site folder, which records \(iss) as its issuer", nil)
            }
            return
        }
        guard !keys.isEmpty else {
            // A key set was given for this issuer and none of it can be used: the signature cannot be verified,
            // which is an error on the card (a forged card must never pass as "signature not checked").
            let problems = mine.flatMap(\.problems).prefix(5).map { problem in
                problem.code.rawValue + (problem.location.path.map { " at \($0)" } ?? "")
            }
            let listed = problems.isEmpty ? "" : ": \(problems.joined(separator: ", "))"
            add(.keySetInvalid, "signature", "the key set given for the card's issuer (\(mine.map(\.described).joined(separator: ", "))) "
                + "holds no usable signing key\(listed), so the card's signature cannot be verified; a card is only as good as "
                + "the key that vouches for it (see the key set's findings)", nil)
            return
        }
        let candidates = keys.filter { $0.kid == kid || $0.thumbprint == kid }
        if let key = candidates.first(where: verifies) {
            report.signature = raw == signature ? .verified : .failed
            checkRevocation(key, report: report, add: add)
            checkKeyDependencies(key, report: report, add: add)
            return
        }
        if budget.refused > 0 {
            // A key the kid names was never tried: nothing is known of the signature, and saying it fails would
            // be as wrong as saying it verifies.
            Self.budgetSpent(limits, add: add)
            return
        }
        report.signature = .failed
        if !candidates.isEmpty {
            add(.sigInvalid, "signature", "the signature does not verify with key \(kid ?? "?"); the card was altered or signed with another key\(untried())", nil)
            return
        }
        if let other = keys.first(where: verifies) {
            if report.header == nil {
                // The header could not be read (JWS_HEADER_NOT_JSON says why), so it names no kid that could be
                // wrong: the signature is what it is, verified by this key.
                report.signature = raw == signature ? .verified : .failed
                checkRevocation(other, report: report, add: add)
                checkKeyDependencies(other, report: report, add: add)
                return
            }
            add(.kidWrong, "header.kid", "the header says kid \(quoted(report.header?["kid"])) but the card was signed by key \(other.thumbprint); the kid must be the signing key's RFC 7638 thumbprint", nil)
            return
        }
        if let iss, let foreign = foreignKey() {
            add(.keyNotFromIssuer, "header.kid", Self.foreignKeyMessage(foreign, iss: iss), nil)
            return
        }
        let known = keys.map(\.kid).joined(separator: ", ")
        if report.header == nil {
            add(.kidUnknown, "header.kid", "the JWS header could not be read, so the kid is unknown; no key in the key set (\(known)) verifies the signature", nil)
        } else if report.header?["kid"] == nil {
            add(.kidUnknown, "header.kid", "the header has no kid, and no key in the key set (\(known)) verifies the signature", nil)
        } else {
            add(.kidUnknown, "header.kid", "kid \(quoted(report.header?["kid"])) is not in the key set (\(known)) and no key in it verifies the signature\(untried())", nil)
        }
    }

    /// The signature of a card without a readable `iss` (its payload cannot be read, or names no issuer),
    /// among several key sets (or bound ones): no key set can be chosen by issuer, so the key the header's
    /// kid names, in whichever set holds it, judges the signature. `SIG_INVALID` when it does not verify,
    /// `KID_WRONG` when another key given does, `KID_UNKNOWN` when no key given is named or verifies. Never
    /// `KEY_NOT_FROM_ISSUER`: that needs a known issuer to compare the key's with.
    private func checkSignatureWithoutIssuer(
        kid: String?, verifies: (TrustedKey) -> Bool, budgetRefused: () -> Int, raw: [UInt8], signature: [UInt8],
        report: inout CredentialReport, add: (RuleCode, String?, String, Finding.Severity?) -> Void
    ) {
        let named = keyRing.sets.flatMap { set in set.keys.filter { $0.kid == kid || $0.thumbprint == kid }.map { (set, $0) } }
        let refused = budgetRefused()
        if let (_, key) = named.first(where: { verifies($0.1) }) {
            report.signature = raw == signature ? .verified : .failed
            checkRevocation(key, report: report, add: add)
            checkKeyDependencies(key, report: report, add: add)
            return
        }
        if budgetRefused() > refused {
            Self.budgetSpent(limits, add: add)
            return
        }
        report.signature = .failed
        if let (set, key) = named.first {
            add(.sigInvalid, "signature", "the signature does not verify with key \(key.kid) of \(set.file), the key its kid names "
                + "(the card's issuer is unknown: its payload names none that can be read); the card was altered or signed with "
                + "another key", nil)
            return
        }
        if let (set, other) = keyRing.sets.lazy.flatMap({ set in set.keys.map { (set, $0) } }).first(where: { verifies($0.1) }) {
            if report.header == nil {
                // As in checkSignature: an unreadable header names no kid that could be wrong.
                report.signature = raw == signature ? .verified : .failed
                checkRevocation(other, report: report, add: add)
                checkKeyDependencies(other, report: report, add: add)
                return
            }
            add(.kidWrong, "header.kid", "the header says kid \(quoted(report.header?["kid"])) but the card was signed by key "
                + "\(other.thumbprint) of \(set.file); the kid must be the signing key's RFC 7638 thumbprint", nil)
            return
        }
        let known = keyRing.sets.flatMap(\.keys).map(\.kid).joined(separator: ", ")
        let given = known.isEmpty ? "the key sets given hold no usable key" : "no key given (\(known))"
        if report.header == nil {
            add(.kidUnknown, "header.kid", "the JWS header could not be read, so the kid is unknown; \(given) verifies the signature", nil)
        } else if report.header?["kid"] == nil {
            add(.kidUnknown, "header.kid", "the header has no kid, and \(given) verifies the signature", nil)
        } else {
            add(.kidUnknown, "header.kid", "kid \(quoted(report.header?["kid"])) names no key of the key sets given, and \(given) verifies the signature", nil)
        }
    }

    /// The warnings a card of a directory issuer gets (archival, stale keys, the day's audit errors), and the
    /// name the report gives its issuer (the directory's).
    private func noteDirectoryEntry(
        _ listed: (entries: [Directory.Issuer], sets: [KeyRing.KeySet], match: Directory.Match),
        trust: KeyRing.DirectoryTrust, report: inout CredentialReport, add: (RuleCode, String?, String, Finding.Severity?) -> Void
    ) {
        let directory = trust.directory
        let names = listed.entries.map(\.name)
        report.issuerName = names.joined(separator: " / ")
        let snapshot = directory.time.isEmpty ? "the VCI directory" : "the VCI directory of \(directory.time)"
        for entry in listed.entries {
            let who = "\(Quote.text(entry.name, limit: 200)) (\(entry.iss))"
                + (listed.match == .canonical ? ", whose canonical_iss is the card's iss," : "")
            if entry.isListed == false {
                add(.directoryIssuerArchival, "iss", "the issuer \(who) is archival in \(snapshot): its keys are kept for the "
                    + "record but it is no longer listed in vci-issuers.json. Its cards may be genuine, yet the directory no longer "
                    + "vouches for it; accept them only if your policy takes issuers that left the directory", nil)
            }
            if entry.isStale(before: trust.staleBefore) {
                let last = entry.lastRetrievedText.map { "last retrieved \($0)" } ?? "with no readable lastRetrieved"
                add(.directoryKeysStale, "header.kid", "the keys of \(who) in \(snapshot) were \(last), more than "
                    + "\(trust.maxKeyAge / 86_400) days before now (\(Clock.describe(trust.staleBefore + trust.maxKeyAge))): the issuer "
                    + "no longer serves them, so a revocation made since then is not in the snapshot. Accept the card only if "
                    + "your policy takes old keys (the maximum key age sets the age allowed)", nil)
            }
            if !entry.auditErrors.isEmpty {
                let errors = entry.auditErrors.prefix(3).map { Quote.text($0, limit: 200) }.joined(separator: "; ")
                let when = directory.auditTime.map { " of \($0)" } ?? ""
                add(.directoryIssuerAuditError, "iss", "the directory's daily audit\(when) lists errors for \(who): \(errors). Its "
                    + "keys and revocation lists may have changed since the snapshot took them; the card was judged with the "
                    + "snapshot's", nil)
            }
        }
    }

    /// SIG_NOT_CHECKED, an error: the key the card names was not tried, the budget of verifications spent.
    static func budgetSpent(_ limits: VerifyLimits, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        add(.sigNotChecked, "signature", "the signature was not checked: at most \(limits.signatureVerificationsPerCredential) "
            + "signature verifications are spent on one credential, and the key its kid names was not reached (a key set "
            + "with many keys of one kid?); the card is not verified", .error)
    }

    /// KEY_NOT_FROM_ISSUER: what was found about a key of a key set that is not the card's issuer's.
    /// - Parameter iss: the card's issuer (known: without one, `checkSignatureWithoutIssuer` judges the card).
    static func foreignKeyMessage(_ foreign: (set: KeyRing.KeySet, key: TrustedKey, signed: Bool), iss: String) -> String {
        let key = "key \(foreign.key.kid) of \(foreign.set.file)"
        let found = foreign.signed ? "it is signed by \(key)" : "its kid names \(key)"
        let notEither = foreign.signed ? "" : " (and the signature does not verify with that key either)"
        if let owner = foreign.set.issuer {
            return "the card's iss is \(iss), but \(found), the key set of \(owner)\(notEither); a key verifies only cards of the "
                + "issuer that publishes it (<iss>/.well-known/jwks.json), so this card is not verified as \(iss)'s"
        }
        return "the card's iss is \(iss), but \(found), which is not bound to an issuer\(notEither); with several key sets, a key "
            + "verifies only cards of the issuer its key set is bound to. If \(foreign.set.file) is the key set of \(iss), bind "
            + "it (\(iss)=\(foreign.set.file)), or give the issuer site folder that records \(iss) as its issuer"
    }

    /// A card is only as sound as the key set and revocation list it depends on: their errors make it
    /// invalid (KEY_SET_INVALID), and the key's `x5c` must name the card's issuer (`X5CCheck`).
    private func checkKeyDependencies(_ key: TrustedKey, report: CredentialReport, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        if !key.problems.isEmpty {
            let listed = key.problems.prefix(5).map { problem -> String in
                let at = [problem.location.file == key.source ? nil : problem.location.file, problem.location.path].compactMap { $0 }
                return problem.code.rawValue + (at.isEmpty ? "" : " at " + at.joined(separator: " "))
            }
            let more = key.problems.count > 5 ? " and \(key.problems.count - 5) more" : ""
            add(.keySetInvalid, "header.kid", "the card is verified by key \(key.kid) of \(key.source), but that key set or the key's revocation "
                + "list has error(s): \(listed.joined(separator: ", "))\(more); a card is only as good as the key and list that vouch "
                + "for it (see the key set's findings)", nil)
        }
        let nbf = report.payload?["nbf"]?.doubleValue
        for (code, message, severity) in X5CCheck.cardFindings(key: key, iss: report.payload?["iss"]?.stringValue, nbf: nbf, now: now) {
            add(code, "header.kid", message, severity)
        }
    }

    /// Whether `jws` is signed by any key of any key set given, judged from its bytes alone (header kid
    /// first, then every key); nil when no key was given. Used to tell apart QR chunk sets.
    func signedByAnyKey(_ jws: String, budget: SignatureBudget) -> Bool? {
        let keys = keyRing.sets.flatMap(\.keys)
        guard !keys.isEmpty else { return nil }
        let bytes = Array(jws.utf8)
        let pieces = bytes.split(separator: 0x2E, omittingEmptySubsequences: false)
        guard pieces.count == 3, let signature = Base64URL.decode(Array(pieces[2])) else { return false }
        var raw = signature
        if raw.count != 64 {
            guard let converted = try? ES256.rawSignature(fromDER: signature) else { return false }
            raw = converted
        }
        let input = Array(bytes.prefix(pieces[0].count + 1 + pieces[1].count))
        let kid = Base64URL.decode(Array(pieces[0])).flatMap { try? JSONParser.parse($0) }?["kid"]?.stringValue
        let ordered = keys.filter { $0.kid == kid } + keys.filter { $0.kid != kid }
        return ordered.contains { budget.spend() && ES256.verify(signature: raw, message: input, key: $0.key) }
    }

    private func checkRevocation(_ key: TrustedKey, report: CredentialReport, add: (RuleCode, String?, String, Finding.Severity?) -> Void) {
        if key.crl == nil, let (file, reason) = key.crlRefused, report.payload?["vc"]?["rid"]?.stringValue != nil {
            // A list was given but refused: saying it was not given would send its publisher looking for a file that is there.
            add(.crlMissing, "vc.rid", "whether the card is revoked was not checked: the revocation list of its key \(key.kid) "
                + "was given (\(file)) but could not be used: \(reason); fix the list (see its "
                + "CRL_INVALID finding)", .warning)
            return
        }
        if key.crl == nil, let crlVersion = key.crlVersion, report.payload?["vc"]?["rid"]?.stringValue != nil {
            // The key says it has a revocation list and the card has a rid it could list, but no list came with
            // the key set: the card is not called OK without saying that its revocation was not checked.
            add(.crlMissing, "vc.rid", "whether the card is revoked was not checked: its key \(key.kid) publishes "
                + "crlVersion \(crlVersion), but that revocation list (crl/\(key.kid).json beside the key set, "
                + ".well-known/crl/ on the issuer's site) was not given; give the key set with its crl/ folder", .warning)
            return
        }
        guard let (crl, file) = key.crl, let rid = report.payload?["vc"]?["rid"]?.stringValue,
            let nbf = report.payload?["nbf"]?.doubleValue
        else { return }
        guard let entry = crl.entry(revoking: rid, nbf: nbf) else { return }
        let scope = entry.before.map { ", which revokes cards with this rid issued before \(Clock.describe($0)) (nbf \(report.payload?["nbf"]?.numberLexeme ?? "?") is before it)" }
            ?? ", which revokes every card with this rid"
        var suspect = ""
        if let entry = key.suspectEntries[entry.text] {
            suspect = " The entry is suspect (CRL_RID_TIMESTAMP on the key set)"
            if let meant = entry.meant {
                suspect += ": read as milliseconds it revokes cards issued before \(Clock.describe(meant)), and this card was "
                    + "issued \(nbf < Double(meant) ? "before" : "after") that (\(NumericDate(nbf).map { Clock.describe($0.whole) } ?? "?"))"
            }
        }
        add(.revoked, "vc.rid", "the card is revoked: \(file) (ctr \(crl.ctr)) lists \"\(entry.text)\"\(scope). That entry "
            + "decided the verdict; the holder needs a new card from the issuer.\(suspect)", nil)
    }

    private func isCompactCharacter(_ c: UInt8) -> Bool { RID.isBase64URLCharacter(c) || c == 0x2E }
}

func hex<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    let digits = Array("0123456789ABCDEF".utf8)
    return bytes.map { String(decoding: [digits[Int($0 >> 4)], digits[Int($0 & 15)]], as: UTF8.self) }.joined(separator: " ")
}
