import HealthCardsCore

/// `.smart-health-card` files and text files holding one JWS or one QR text.
package enum CardFile {
    /// Checks `{"verifiableCredential":["<jws>",…]}` and each JWS in it.
    package static func check(_ bytes: [UInt8], file: String?, checker: JWSCheck) -> [CredentialReport] {
        var report = CredentialReport(source: .smartHealthCard, file: file)
        let limits = checker.limits
        guard bytes.count <= limits.fileBytes else {
            report.findings.append(Finding(
                .fileTooLarge, "the file is \(bytes.count) bytes; at most \(InputBudget.describe(bytes: limits.fileBytes)) are read (a "
                    + "card meant for a QR code is under 2 KB; split a larger file)", at: .init(file: file)))
            return [report]
        }
        var body = bytes
        if body.starts(with: UTF8BOM.bytes) {
            report.findings.append(Finding(.fileBOM, "the file starts with a UTF-8 byte order mark; remove it", at: .init(file: file)))
            body.removeFirst(3)
        }
        var parsed = try? JSONParser.parse(body)
        if parsed == nil, let end = body.lastIndex(of: UInt8(ascii: "}")), let prefix = try? JSONParser.parse(body[...end]) {
            report.findings.append(Finding(.fileTrailingCharacters, "\(body.count - end - 1) characters follow the JSON object; remove them", at: .init(file: file)))
            parsed = prefix
        }
        guard let json = parsed else {
            var detail = ""
            do { _ = try JSONParser.parseFailing(body) } catch { detail = ": \(error)" }
            report.findings.append(Finding(.fileNotJSON, "the file is not JSON\(detail)", at: .init(file: file)))
            return [report]
        }
        guard let list = json["verifiableCredential"]?.arrayValue, !list.isEmpty, list.allSatisfy({ $0.stringValue != nil }) else {
            report.findings.append(Finding(.fileNoCredentials, #"a .smart-health-card file is {"verifiableCredential":["<JWS>",...]} with at least one JWS string"#, at: .init(file: file, path: "verifiableCredential")))
            return [report]
        }
        var reports: [CredentialReport] = []
        var payloadBytes = 0
        for (i, item) in list.prefix(limits.credentialsPerFile).enumerated() {
            guard payloadBytes < limits.payloadBytesPerFile else { break }
            guard let jws = item.stringValue else { continue }
            var one = CredentialReport(source: .smartHealthCard, file: file, index: i)
            if i == 0 { one.findings = report.findings }
            checker.check(jws, into: &one)
            payloadBytes += one.payloadBytes
            reports.append(one)
        }
        if reports.count < list.count, !reports.isEmpty {
            let why = reports.count < limits.credentialsPerFile
                ? "its payloads reached \(InputBudget.describe(bytes: limits.payloadBytesPerFile)) after \(reports.count) of them"
                : "verify checks the first \(limits.credentialsPerFile) of a file"
            reports[reports.count - 1].findings.append(Finding(
                .fileTooLarge, "the file holds \(list.count) credentials and \(why) (docs/verify.md, \"Budgets\"), so the other "
                    + "\(list.count - reports.count) were not checked. Split the file", at: .init(file: file, path: "verifiableCredential")))
        }
        return reports
    }

    /// The text of a SMART Health Link file: a BOM is reported and removed, one final newline (`\n` or `\r\n`)
    /// too, without a finding; other whitespace around the link is left for the link check, which trims it
    /// with a warning (`SHL_TEXT_WHITESPACE`).
    package static func linkText(_ bytes: [UInt8], file: String?, findings: inout [Finding]) -> String {
        var body = bytes[...]
        if body.starts(with: UTF8BOM.bytes) {
            findings.append(Finding(.fileBOM, "the file starts with a UTF-8 byte order mark; remove it", at: .init(file: file)))
            body = body.dropFirst(3)
        }
        if body.last == 0x0A {
            body = body.dropLast()
            if body.last == 0x0D { body = body.dropLast() }
        }
        return String(decoding: Array(body), as: UTF8.self)
    }

    /// The text of a JWS or QR text file: a BOM and surrounding whitespace are reported and removed; one
    /// final newline (`\n` or `\r\n`) is allowed.
    package static func cleanText(_ bytes: [UInt8], file: String?, findings: inout [Finding]) -> String {
        var body = bytes[...]
        if body.starts(with: UTF8BOM.bytes) {
            findings.append(Finding(.fileBOM, "the file starts with a UTF-8 byte order mark; remove it", at: .init(file: file)))
            body = body.dropFirst(3)
        }
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
        // One final newline (LF or CRLF) is what every editor writes: not a finding, and not part of the text.
        if body.last == 0x0A {
            body = body.dropLast()
            if body.last == 0x0D { body = body.dropLast() }
        }
        let trimmed = body.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        if trimmed.count != body.count {
            let leading = body.first.map(isSpace) == true
            let what = leading ? "leading whitespace" : "whitespace after its text (beyond one final newline)"
            findings.append(Finding(.fileTrailingCharacters, "the file has \(what); the text must stand alone, followed by at most one newline", at: .init(file: file)))
        }
        return String(decoding: Array(trimmed), as: UTF8.self)
    }
}
