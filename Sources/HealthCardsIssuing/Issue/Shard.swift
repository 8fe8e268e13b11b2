import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// One part of a batch spread over several machines (docs/scale.md): shard `index` of `count` issues only the
/// records whose key hashes to it, and the union of the `count` shards is the batch, record for record.
///
/// The key of a record is the person's id as the run normalizes it (`PatientIdentity.normalize`): a CSV patient
/// id (all of a patient's rows are one record, so they land in one shard together), or for Bundle input the
/// Patient's `system|value` identifier (`PatientIdentity.ofBundle`), else the record's id (`<file stem>-<n>`);
/// a record with no id (a row that names no patient, a file that cannot be read) by its `source`. The shard
/// is the first 8 bytes of the key's SHA-256 (UTF-8), read as a big-endian unsigned number, modulo `count`:
/// the same on every run and every machine, computable by anyone (`printf '%s' P-1001 | sha256sum`).
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// This shard, from 0 to `count - 1` (a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX`).
    public let index: Int
    /// The number of shards, from 1 to `maxCount`.
    public let count: Int

    /// The most shards a batch may be split into.
    public static let maxCount = 65_536

    /// - Throws: `HealthCardError(.configuration)` unless `1 <= count <= maxCount` and `0 <= index < count`.
    public init(index: Int, count: Int) throws(HealthCardError) {
        guard (1...Self.maxCount).contains(count) else {
            throw HealthCardError(.configuration, "a batch is split into 1 to \(Self.maxCount) shards, not \(count)")
        }
        guard (0..<count).contains(index) else {
            throw HealthCardError(
                .configuration, "shard \(index) of \(count) does not exist: shards are numbered 0 to \(count - 1) (K/N with 0 <= K < N)")
        }
        self.index = index
        self.count = count
    }

    /// Reads `K/N` (e.g. `3/16`): whole decimal numbers, K from 0.
    /// - Throws: `HealthCardError(.configuration)` for any other text, or numbers out of range.
    public init(parsing text: String) throws(HealthCardError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        func number(_ part: Substring) -> Int? {
            guard !part.isEmpty, part.utf8.count <= 6, part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            return Int(part)
        }
        guard parts.count == 2, let index = number(parts[0]), let count = number(parts[1]) else {
            throw HealthCardError(
                .configuration,
                "shard \(Quote.text(text)) is not K/N: give the shard's number K (from 0) and the number of shards N, e.g. 0/4 to 3/4")
        }
        try self.init(index: index, count: count)
    }

    /// `K/N`.
    public var description: String { "\(index)/\(count)" }

    /// The shard (0 to `count - 1`) of a record's key: the first 8 bytes of SHA-256 of its UTF-8, big-endian, modulo
    /// `count`.
    public static func of(key: String, count: Int) -> Int {
        let digest = Digest.sha256(Array(key.utf8))
        let high = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(high % UInt64(max(1, count)))
    }

    /// True when the record with `key` belongs to this shard.
    public func contains(key: String) -> Bool { Self.of(key: key, count: count) == index }

    /// The key a record is sharded by (see the type's description).
    /// - Parameters:
    ///   - id: the record's id (a CSV patient id, `<file stem>-<n>` for Bundle input), or nil.
    ///   - bundle: for Bundle input, the Bundle as read; nil for CSV records.
    ///   - system: the identifier system naming the person in Bundle input (`PatientIdentity.ofBundle`), or nil.
    ///   - source: the record's `file:line`, for a record without an id.
    public static func key(id: String?, bundle: JSONValue?, system: String?, source: String) -> String {
        if let bundle, let identity = PatientIdentity.ofBundle(bundle, system: system).id { return identity }
        if let id { return PatientIdentity.normalize(id) }
        return source
    }
}

/// What a sharded run (`BatchIssuer.shard`) writes beside its report, `shard.json`, so the shards can be checked
/// together (`ShardMerge`): which shard of how many, the issuer and key, the inputs (name, size, records), the
/// number of records of the whole batch, and whether the run read it to its end.
///
/// Shape: `{"shard":K,"shards":N,"issuer":…,"kid":…,"nbf":…,"finished":true,"records":R,"reported":L,
/// "inputs":[{"path":…,"name":…,"bytes":…,"records":…}]}` (`nbf` whole seconds; `records` counts every record of
/// the batch, this shard's and the others'; `reported` this shard's report lines).
public struct ShardManifest: Sendable, Equatable {
    /// The file's name in the run's output folder.
    public static let fileName = "shard.json"

    /// An input of the run as it was read.
    public struct Input: Sendable, Equatable {
        /// The path as given to the run.
        public var path: String
        /// Its last component: what shards on other machines are compared by.
        public var name: String
        /// Its size in bytes when the run started.
        public var bytes: Int
        /// Its records (CSV patients and rows matching none, Bundles, or 1 for a file that could not be read).
        public var records: Int

        public init(path: String, bytes: Int, records: Int) {
            self.path = path
            self.name = FileIO.basename(path)
            self.bytes = bytes
            self.records = records
        }
    }

    public var shard: Shard
    public var issuer: String
    public var kid: String
    /// The run's `nbf`, whole seconds since 1970 (shards may differ: each run's own time).
    public var notBefore: Int64
    /// True when the run read every record (it was not stopped by a signal or an output it could not write).
    public var finished: Bool
    /// Records of the whole batch, in every shard.
    public var records: Int
    /// Lines of this shard's report.
    public var reported: Int
    public var inputs: [Input]

    public init(shard: Shard, issuer: String, kid: String, notBefore: Int64, finished: Bool, records: Int, reported: Int, inputs: [Input]) {
        self.shard = shard
        self.issuer = issuer
        self.kid = kid
        self.notBefore = notBefore
        self.finished = finished
        self.records = records
        self.reported = reported
        self.inputs = inputs
    }

    /// The file's bytes (JSON, a final newline).
    public func json() -> [UInt8] {
        let value: JSONValue = .object([
            "shard": .integer(Int64(shard.index)), "shards": .integer(Int64(shard.count)), "issuer": .string(issuer),
            "kid": .string(kid), "nbf": .integer(notBefore), "finished": .bool(finished), "records": .integer(Int64(records)),
            "reported": .integer(Int64(reported)),
            "inputs": .array(inputs.map {
                .object(["path": .string($0.path), "name": .string($0.name), "bytes": .integer(Int64($0.bytes)),
                         "records": .integer(Int64($0.records))])
            }),
        ])
        return JSONWriter.pretty(value) + [0x0A]
    }

    /// Reads a manifest.
    /// - Parameter source: the file, for messages.
    /// - Throws: `HealthCardError(.input)` saying what is wrong.
    public init(bytes: [UInt8], source: String) throws {
        func bad(_ what: String) -> HealthCardError {
            HealthCardError(.input, "\(source) is not a shard's \(Self.fileName) (\(what)); it is written by a run that issues one shard K/N of a batch")
        }
        guard let json = try? JSONParser.parse(bytes), json.objectValue != nil else { throw bad("not a JSON object") }
        func int(_ value: JSONValue?, _ name: String) throws -> Int {
            guard let lexeme = value?.numberLexeme, let n = Int(lexeme), n >= 0 else { throw bad("\"\(name)\" is not a whole number") }
            return n
        }
        func text(_ value: JSONValue?, _ name: String) throws -> String {
            guard let s = value?.stringValue else { throw bad("\"\(name)\" is not a string") }
            return s
        }
        do {
            shard = try Shard(index: try int(json["shard"], "shard"), count: try int(json["shards"], "shards"))
        } catch let error as HealthCardError where error.kind == .configuration {
            throw bad(error.text)
        }
        issuer = try text(json["issuer"], "issuer")
        kid = try text(json["kid"], "kid")
        notBefore = Int64(try int(json["nbf"], "nbf"))
        guard case .bool(let done)? = json["finished"] else { throw bad("\"finished\" is not true or false") }
        finished = done
        records = try int(json["records"], "records")
        reported = try int(json["reported"], "reported")
        guard let list = json["inputs"]?.arrayValue else { throw bad("\"inputs\" is not a list") }
        inputs = try list.map { item in
            var input = Input(path: try text(item["path"], "inputs.path"), bytes: try int(item["bytes"], "inputs.bytes"),
                              records: try int(item["records"], "inputs.records"))
            input.name = try text(item["name"], "inputs.name")
            return input
        }
    }
}
