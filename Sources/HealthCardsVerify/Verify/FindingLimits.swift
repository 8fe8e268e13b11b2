import HealthCardsCore

extension CredentialReport {
    /// Keeps at most `perCode` findings of each rule code, in the order found; the next one of a code that
    /// had more says how many more there were ("… and N more"), with the severity of the worst one left out,
    /// so a hostile card cannot make a report (or `--json`) explode while its verdict stays what it was.
    package mutating func limitFindings(perCode: Int) {
        guard !findingsLimited else { return }
        findingsLimited = true
        let perCode = max(1, perCode)
        var counts: [RuleCode: Int] = [:]
        for finding in findings { counts[finding.code, default: 0] += 1 }
        guard counts.values.contains(where: { $0 > perCode }) else { return }
        var seen: [RuleCode: Int] = [:]
        var worst: [RuleCode: Finding.Severity] = [:]
        var kept: [Finding] = []
        var summaryAt: [RuleCode: Int] = [:]
        for finding in findings {
            let n = seen[finding.code, default: 0]
            seen[finding.code] = n + 1
            if n < perCode {
                kept.append(finding)
                continue
            }
            if finding.isError { worst[finding.code] = .error }
            if n == perCode {
                summaryAt[finding.code] = kept.count
                kept.append(finding)  // replaced below by the "and N more" finding
            }
        }
        for (code, index) in summaryAt {
            let more = counts[code, default: 0] - perCode
            let first = kept[index]
            var location = first.location
            location.path = nil
            location.chunk = nil
            let each = more == 1 ? "finding" : "findings"
            kept[index] = Finding(
                code,
                "… and \(more) more \(code.rawValue) \(each) here, not listed: at most \(perCode) of each rule code are listed "
                    + "per credential (the first one left out is at \(first.location.path ?? "the same place"))",
                at: location, severity: worst[code] ?? first.severity)
            omittedFindings[code, default: 0] += more
        }
        findings = kept
    }

    /// What a report keeps once its check ends, so that a hostile file's memory stays bounded by the limits, not
    /// by its size: at most `findingsPerCode` findings of each code, and of a payload over `echoedPayloadBytes`
    /// (which the JSON does not repeat) only what the summary and the later checks read: every member but the
    /// Bundle's entries, and the first `summaryEntries` entries (the rest counted in `entriesNotKept`). Eight
    /// credentials of 16,000 entries each kept their parsed payloads whole, over 200 MB.
    package mutating func keepWithinLimits(_ limits: VerifyLimits) {
        limitFindings(perCode: limits.findingsPerCode)
        guard payloadEchoOmitted, let payload,
            let entries = payload["vc"]?["credentialSubject"]?["fhirBundle"]?["entry"]?.arrayValue,
            entries.count > limits.summaryEntries,
            var object = payload.objectValue, var vc = object["vc"]?.objectValue,
            var subject = vc["credentialSubject"]?.objectValue, var bundle = subject["fhirBundle"]?.objectValue
        else { return }
        let kept = Array(entries.prefix(max(0, limits.summaryEntries)))
        entriesNotKept = entries.count - kept.count
        bundle["entry"] = .array(kept)
        subject["fhirBundle"] = .object(bundle)
        vc["credentialSubject"] = .object(subject)
        object["vc"] = .object(vc)
        self.payload = .object(object)
    }

    /// Keeps only the first error (so the verdict stands) and one `FINDINGS_CAPPED` finding saying how many
    /// were left out: for a report met after the run's findings reached `VerifyLimits.findingsPerRun`.
    package mutating func capFindings(runLimit: Int) {
        let firstError = findings.first(where: \.isError)
        let left = findings.count - (firstError == nil ? 0 : 1)
        guard left > 0 else { return }
        for finding in findings where finding != firstError { omittedFindings[finding.code, default: 0] += 1 }
        findings =
            (firstError.map { [$0] } ?? []) + [
                Finding(
                    .findingsCapped,
                    "\(left) more finding(s) of this \(source == .keySet ? "key set" : "credential") were not listed: the run had "
                        + "already listed \(runLimit) findings, its limit. Check fewer inputs at a time to see them",
                    at: .init(file: locationFile, credential: index))
            ]
    }
}

/// The findings listed so far in one check or run, against `VerifyLimits.findingsPerRun`: made for one call
/// (or one program run over many files) and dropped after it.
package final class FindingLedger {
    package let limit: Int
    package private(set) var listed = 0

    package init(limit: Int) { self.limit = max(1, limit) }

    /// Applies the limits to a finished report: `perCode`, then the run's. Returns it as it is to be kept.
    package func admit(_ report: CredentialReport, perCode: Int) -> CredentialReport {
        var report = report
        report.limitFindings(perCode: perCode)
        if listed + report.findings.count > limit {
            report.capFindings(runLimit: limit)
        }
        listed += report.findings.count
        return report
    }
}
