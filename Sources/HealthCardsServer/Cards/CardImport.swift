import HealthCardsCore
import HealthCardsVerify

#if canImport(Glibc)
    import Glibc
#endif

/// What a card's payload says, as `$health-cards-issue` filters on it (SMART Health Cards "Data Model").
public struct CardContent: Sendable, Equatable {
    /// `nbf`, seconds since 1970 (fractions dropped).
    public var nbf: Int64
    /// `vc.type`, sorted.
    public var types: [String]
    public var rid: String?
    /// The `resourceType` of every resource in `vc.credentialSubject.fhirBundle`.
    public var resourceTypes: Set<String>
    /// `system|code` of every `Immunization.vaccineCode` and `Observation.code` coding.
    public var codes: Set<String>
    /// The events' dates as written: `Immunization.occurrenceDateTime`, `Observation.effectiveDateTime`
    /// (or `effectivePeriod.start`/`end`, `effectiveInstant`).
    public var eventDates: [String]

    /// The most bytes of a payload inflated: a card's is a few KB (the same budget as a card file).
    public static let maxPayloadBytes = InputBudget.cardFileBytes

    /// Reads a compact JWS's payload (raw DEFLATE, `zip: DEF`). The signature is not checked: the cards are the
    /// operator's own batch output.
    /// - Throws: `HealthCardError(.input)` for a JWS that is not three parts, a payload that does not inflate
    ///   or is not a card's JSON.
    public init(jws: String) throws {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let deflated = Base64URL.decode(String(parts[1])) else {
            throw HealthCardError(.input, "a card is not a compact JWS (three base64url parts)")
        }
        let inflated: [UInt8]
        do {
            inflated = try RawInflate.inflateFailing(deflated)
        } catch {
            throw HealthCardError(.input, "a card's payload is not raw DEFLATE: \(error)")
        }
        guard inflated.count <= Self.maxPayloadBytes,
            let payload = try? JSONParser.parse(inflated), let vc = payload["vc"],
            let nbf = payload["nbf"]?.doubleValue, nbf.isFinite, abs(nbf) < 1e12
        else { throw HealthCardError(.input, "a card's payload is not a SMART Health Card's (nbf, vc)") }
        self.nbf = Int64(nbf)
        types = (vc["type"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
        rid = vc["rid"]?.stringValue
        var resourceTypes = Set<String>()
        var codes = Set<String>()
        var dates: [String] = []
        for entry in vc["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue ?? [] {
            guard let resource = entry["resource"], let type = resource["resourceType"]?.stringValue else { continue }
            resourceTypes.insert(type)
            let concept = type == "Immunization" ? resource["vaccineCode"] : type == "Observation" ? resource["code"] : nil
            for coding in concept?["coding"]?.arrayValue ?? [] {
                if let system = coding["system"]?.stringValue, let code = coding["code"]?.stringValue {
                    codes.insert(system + "|" + code)
                }
            }
            for name in ["occurrenceDateTime", "effectiveDateTime", "effectiveInstant"] {
                if let date = resource[name]?.stringValue { dates.append(date) }
            }
            for name in ["start", "end"] {
                if let date = resource["effectivePeriod"]?[name]?.stringValue { dates.append(date) }
            }
        }
        self.resourceTypes = resourceTypes
        self.codes = codes
        eventDates = dates
    }
}

/// Reads batch output folders (`issue --out OUT`: `report.ndjson` and the `.smart-health-card` files its lines
/// name) into `CardRun`s for a `CardStore`.
///
/// - A line of an issued record gives its person (the report's `id`, normalized with `PatientIdentity.normalize`,
///   as the batch did), and its cards: every credential of every `.smart-health-card` file the line lists.
/// - A line rejected because the site's list already revokes the record (`"revoked": true`) gives the person
///   and the revoked (kid, rid) pairs (its own and `revokedBy`'s): those cards are dropped from the database.
/// - The run's time is the report's modification time: re-importing a folder after a newer run replaces it.
public enum CardImport {
    /// The most bytes of a report read (a run of millions of records writes a few hundred MB).
    public static let maxReportBytes = 1 << 30

    /// Reads one output folder.
    /// - Parameters:
    ///   - folder: the batch output folder.
    ///   - verifier: the issuer's keys (its site's key set): each card's signature is verified with them (digest
    ///     section 1, "Signature"), and a card whose signature does not verify with a key of the set (`SIG_INVALID`,
    ///     `KID_UNKNOWN`, `KID_WRONG`, …) is left out of the run, listed in `CardRun.refused`. Nil: signatures are
    ///     not checked (the caller says so).
    ///   - now: the time the verifier judges at, in seconds since 1970.
    /// - Throws: `HealthCardError(.input)` for a folder without `report.ndjson`, a line that is not a report line
    ///   (naming `report.ndjson:line`), a listed file outside the folder, or a card that is not a compact JWS with
    ///   a card's payload; `.io` for a file that cannot be read.
    public static func read(folder: String, verifier: HealthCardVerifier? = nil, now: Int64 = 0) throws -> CardRun {
        guard FileIO.isDirectory(folder) else {
            throw HealthCardError(.input, "\(folder) is not a folder (a batch output holds report.ndjson)")
        }
        let source = realPath(folder) ?? folder
        let reportPath = source + "/report.ndjson"
        guard FileIO.isRegularFile(reportPath) else {
            throw HealthCardError(.input, "\(folder) has no report.ndjson: it is not the output folder of a batch run")
        }
        let runAt = modificationTime(reportPath) ?? 0
        let bytes = try FileIO.read(reportPath, maxBytes: maxReportBytes)
        var people = Set<String>()
        var cards: [StoredCard] = []
        var revoked = Set<[String]>()
        var revokedPeople = Set<String>()
        var positions: [String: Int] = [:]
        var refused: [RefusedCard] = []
        var lineNumber = 0
        for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
            let place = "report.ndjson:\(lineNumber)"
            guard line.count <= InputBudget.reportLineBytes, let object = try? JSONParser.parse(Array(line)),
                let status = object["status"]?.stringValue
            else { throw HealthCardError(.input, "\(folder)/\(place) is not a report line (a JSON object with a status)") }
            let id = object["id"]?.stringValue.map(PatientIdentity.normalize)
            if object["revoked"] == .bool(true) {
                if let id, !id.isEmpty {
                    people.insert(id)
                    revokedPeople.insert(id)
                }
                if let kid = object["kid"]?.stringValue, let rid = object["rid"]?.stringValue { revoked.insert([kid, rid]) }
                if let by = object["revokedBy"], let kid = by["kid"]?.stringValue, let rid = by["rid"]?.stringValue {
                    revoked.insert([kid, rid])
                }
                continue
            }
            guard status == "issued", let id, !id.isEmpty else { continue }
            people.insert(id)
            let kid = object["kid"]?.stringValue
            for file in (object["files"]?.arrayValue ?? []).compactMap(\.stringValue)
            where file.hasSuffix(".smart-health-card") {
                guard !file.hasPrefix("/"), !file.split(separator: "/").contains("..") else {
                    throw HealthCardError(.input, "\(folder)/\(place) names \(Quote.text(file)), outside the folder")
                }
                let json: JSONValue
                do {
                    json = try JSONParser.parse(try FileIO.read(source + "/" + file, maxBytes: InputBudget.cardFileBytes))
                } catch let error as HealthCardError {
                    throw error
                } catch {
                    throw HealthCardError(.input, "\(folder)/\(file) is not JSON: \(error)")
                }
                guard let list = json["verifiableCredential"]?.arrayValue else {
                    throw HealthCardError(.input, "\(folder)/\(file) has no verifiableCredential list")
                }
                for (index, item) in list.prefix(InputBudget.credentialsPerFile).enumerated() {
                    guard let jws = item.stringValue else { continue }
                    if let verifier, let refusal = refusal(of: jws, verifier: verifier, now: now) {
                        refused.append(RefusedCard(file: file, index: index, code: refusal.code, reason: refusal.message))
                        continue
                    }
                    let content: CardContent
                    do {
                        content = try CardContent(jws: jws)
                    } catch let error as HealthCardError {
                        throw HealthCardError(.input, "\(folder)/\(file): \(error.message)")
                    }
                    let position = positions[id, default: 0]
                    positions[id] = position + 1
                    cards.append(
                        StoredCard(
                            patient: id, source: source, position: position, runAt: runAt,
                            kid: kid ?? headerKid(jws), rid: content.rid, nbf: content.nbf, types: content.types,
                            jws: jws))
                }
            }
        }
        var run = CardRun(source: source, runAt: runAt, people: people, cards: cards, revoked: revoked)
        run.refused = refused
        run.revokedPeople = revokedPeople
        return run
    }

    /// Why a card's signature is not the issuer's: the first error finding on its signature or kid, or nil when
    /// the signature verified with a key of the verifier's key sets. Other findings (revocation among them:
    /// revoked cards are left out by the lists) do not refuse a card.
    static func refusal(of jws: String, verifier: HealthCardVerifier, now: Int64) -> Finding? {
        guard let report = verifier.verify(jws: jws, now: now).reports.first else {
            return Finding(.sigNotChecked, "the card could not be checked")
        }
        if report.signature == .verified { return nil }
        let errors = report.findings.filter(\.isError)
        let signatureCodes: [RuleCode] = [.sigInvalid, .kidUnknown, .kidWrong, .keyNotFromIssuer, .keySetInvalid, .sigDER, .sigLength]
        return errors.first { signatureCodes.contains($0.code) } ?? errors.first
            ?? Finding(.sigNotChecked, "the signature was not verified with a key of the issuer's key set")
    }

    /// The `kid` of a JWS header, when it has one.
    static func headerKid(_ jws: String) -> String? {
        guard let header = jws.split(separator: ".").first.flatMap({ Base64URL.decode(String($0)) }) else { return nil }
        return (try? JSONParser.parse(header))?["kid"]?.stringValue
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func modificationTime(_ path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Int64(st.st_mtim.tv_sec)
    }
}
