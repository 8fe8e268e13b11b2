/// One line of `OUT/report.ndjson`: what happened to one input record.
public struct ReportLine: Sendable {
    public enum Status: String, Sendable {
        case issued, rejected
    }
    /// `file:line` (CSV) or `file:index` (JSON, NDJSON).
    public var source: String
    public var id: String?
    public var status: Status
    public var errors: [HealthCardError]
    public var warnings: [HealthCardError]
    /// Files written for the record, relative to the output folder.
    public var files: [String]

    /// `{"source":…,"id":…,"status":…,"errors":[…],"warnings":[…],"files":[…]}` with a final newline.
    public var ndjson: [UInt8] {
        func issues(_ list: [HealthCardError]) -> JSONValue {
            .array(list.map { error in
                var o: JSONObject = ["kind": .string(error.kind.rawValue), "message": .string(error.message)]
                if let at = error.location { o["at"] = .string(at) }
                return .object(o)
            })
        }
        let object: JSONObject = [
            "source": .string(source), "id": id.map { .string($0) } ?? .null, "status": .string(status.rawValue),
            "errors": issues(errors), "warnings": issues(warnings), "files": .array(files.map { .string($0) }),
        ]
        return JSONWriter.minified(.object(object)) + [0x0A]
    }
}

/// Counts of a finished run.
public struct BatchSummary: Sendable, Equatable {
    public var issued = 0
    public var rejected = 0
    public var warnings = 0
    /// Wall time of the run, in seconds.
    public var seconds = 0.0
}
