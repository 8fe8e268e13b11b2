#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR

/// Checks the output folders of a batch's shards together (docs/scale.md) and writes their reports as one, as an
/// unsharded run would have written it: the lines of every shard in the batch's order (their `record`), each as
/// the shard wrote it without its `record` member.
///
/// The checks, each a `HealthCardError` with its code (nothing is written when any fails):
/// - `SHARD_INCOMPLETE`: every shard of `0/N` to `N-1/N` is given once, each run read its input to the end
///   (`ShardManifest.finished`), and every record of the batch is in exactly one shard's report;
/// - `SHARD_MISMATCH`: the shards were run alike: one number of shards, one issuer, one key (every issued line's
///   `kid` too), the same inputs (name, size, records), and each report as long as its `shard.json` says;
/// - `SHARD_PERSON_SPLIT`: no person is in two shards (an id, or the `ridFrom` a rid was derived from);
/// - `RID_COLLISION` (an error here): no rid belongs to two people (two `ridFrom`).
/// People and rids are compared by 64-bit hashes first (about 40 bytes a person in memory), and every match
/// is confirmed on the ids themselves before it is reported. Messages name shards and record numbers, never an
/// id or a name.
public enum ShardMerge {
    /// What a merge found and did.
    public struct Outcome: Sendable {
        /// The shards' manifests, by shard number.
        public var shards: [ShardManifest] = []
        /// Every reason the shards are not one batch; empty when the combined report was written.
        public var problems: [HealthCardError] = []
        /// Lines of the combined report (records of the batch), and of those the issued and rejected ones.
        public var records = 0
        public var issued = 0
        public var rejected = 0
    }

    /// The most problems of one kind reported (then a count of the rest).
    static let problemsShown = 20
    /// The longest report line read, in bytes.
    static let maxLineBytes = 16 << 20

    /// Checks the shards and, when nothing is wrong, writes the combined report to `out`.
    /// - Parameters:
    ///   - folders: the output folders of the shards (each holds `report.ndjson` and `shard.json`), in any order.
    ///   - out: the combined report's path (a regular file is replaced atomically; a FIFO or a device is written
    ///     in place; a link to this process's standard output writes there: `OutputTarget`).
    ///   - access: the report's mode (it holds patient ids: 0600 by default).
    /// - Returns: the outcome; `problems` empty means `out` was written.
    /// - Throws: `HealthCardError(.input)` when a folder holds no `shard.json` or `report.ndjson` or they cannot be
    ///   read, `.io` when `out` cannot be written.
    public static func merge(folders: [String], to out: String, access: OutputAccess = .ownerOnly) throws -> Outcome {
        var outcome = Outcome()
        guard !folders.isEmpty else { throw HealthCardError(.configuration, "give the output folders of the shards to merge") }
        var manifests: [(folder: String, manifest: ShardManifest)] = []
        for folder in folders {
            let path = "\(folder)/\(ShardManifest.fileName)"
            guard FileIO.exists(path) else {
                throw HealthCardError(
                    .input, "\(folder) holds no \(ShardManifest.fileName): it is not the output folder of a sharded run "
                        + "(a run that issues one shard K/N of a batch into its own output folder)")
            }
            manifests.append((folder, try ShardManifest(bytes: try FileIO.read(path), source: path)))
            let report = "\(folder)/report.ndjson"
            guard FileIO.isRegularFile(report) else { throw HealthCardError(.input, "\(folder) holds no report.ndjson") }
        }
        outcome.problems = checkManifests(manifests)
        manifests.sort { $0.manifest.shard.index < $1.manifest.shard.index }
        outcome.shards = manifests.map(\.manifest)
        guard outcome.problems.isEmpty else { return outcome }

        // Pass 1: every line, the batch's records in order, people and rids.
        var people = HashIndex(capacity: 1 << 16)  // hash of a person's key → shard
        var rids = HashIndex(capacity: 1 << 16)  // first 8 bytes of a rid → index in ridPeople
        var ridPeople: [UInt64] = []  // hash of the key each rid was derived from
        var suspectPeople = Set<UInt64>()
        var suspectRids = Set<UInt64>()
        let problems = Problems()
        let kid = manifests[0].manifest.kid
        try walk(manifests, problems: problems) { shard, line in
            if line.issued {
                outcome.issued += 1
                if let lineKid = line.kid, lineKid != kid {
                    problems.add(
                        .shardMismatch,
                        "record \(line.record) (shard \(shard)) was signed with key \(lineKid), not the batch's key \(kid)")
                }
            } else {
                outcome.rejected += 1
            }
            outcome.records += 1
            if let person = line.person {
                let hash = Self.hash(person)
                if let earlier = people.find(hash) {
                    if Int(earlier) != shard { suspectPeople.insert(hash) }
                } else {
                    people.set(hash, Int32(shard))
                }
                if let rid = line.rid {
                    let key = Self.ridKey(rid)
                    if let slot = rids.find(key) {
                        if ridPeople[Int(slot)] != hash { suspectRids.insert(key) }
                    } else if let slot = Int32(exactly: ridPeople.count) {
                        rids.set(key, slot)
                        ridPeople.append(hash)
                    }
                }
            }
        }
        // Pass 2, only when hashes matched across shards or rids: the ids themselves.
        if !suspectPeople.isEmpty || !suspectRids.isEmpty {
            var seen: [String: [(shard: Int, record: Int)]] = [:]
            var owners: [String: [(person: String, shard: Int, record: Int)]] = [:]
            let ignored = Problems()
            try walk(manifests, problems: ignored) { shard, line in
                guard let person = line.person else { return }
                if suspectPeople.contains(Self.hash(person)) { seen[person, default: []].append((shard, line.record)) }
                if let rid = line.rid, suspectRids.contains(Self.ridKey(rid)) {
                    owners[rid, default: []].append((person, shard, line.record))
                }
            }
            for places in seen.values.sorted(by: { $0[0].record < $1[0].record }) where Set(places.map(\.shard)).count > 1 {
                problems.add(
                    .shardPersonSplit,
                    "one person is in several shards: "
                        + places.map { "record \($0.record) (shard \($0.shard))" }.joined(separator: ", ")
                        + "; the shards were not split by the same person key (run every shard with the same inputs and settings)")
            }
            for list in owners.values.sorted(by: { $0[0].record < $1[0].record }) where Set(list.map(\.person)).count > 1 {
                problems.add(
                    .ridCollision,
                    "one vc.rid belongs to two people: "
                        + list.map { "record \($0.record) (shard \($0.shard))" }.joined(separator: ", ")
                        + "; revoking one would revoke the other. Two ids gave one rid (an HMAC collision): report it")
            }
        }
        outcome.problems = problems.all
        guard outcome.problems.isEmpty else { return outcome }

        // Pass 3: the combined report.
        let output = try StreamedFile(path: out, access: access)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 16)
        let ignored = Problems()
        try walk(manifests, problems: ignored) { _, line in
            buffer.append(contentsOf: line.withoutRecord)
            if buffer.count >= 1 << 16 {
                try output.write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try output.write(buffer)
        try output.finish()
        return outcome
    }

    /// The problems of the manifests alone: the set of shards, how they were run.
    static func checkManifests(_ manifests: [(folder: String, manifest: ShardManifest)]) -> [HealthCardError] {
        let problems = Problems()
        let first = manifests[0].manifest
        let counts = Set(manifests.map(\.manifest.shard.count))
        if counts.count > 1 {
            problems.add(
                .shardMismatch,
                "the shards split the batch in different numbers of parts: "
                    + manifests.map { "\($0.folder) is shard \($0.manifest.shard)" }.joined(separator: ", "))
            return problems.all
        }
        var byIndex: [Int: [String]] = [:]
        for (folder, manifest) in manifests { byIndex[manifest.shard.index, default: []].append(folder) }
        for (index, folders) in byIndex.sorted(by: { $0.key < $1.key }) where folders.count > 1 {
            problems.add(.shardIncomplete, "shard \(index)/\(first.shard.count) is given more than once: \(folders.joined(separator: ", "))")
        }
        let missing = (0..<first.shard.count).filter { byIndex[$0] == nil }
        if !missing.isEmpty {
            let shown = missing.prefix(problemsShown).map(String.init).joined(separator: ", ")
            problems.add(
                .shardIncomplete,
                "\(missing.count) of the \(first.shard.count) shards \(missing.count == 1 ? "is" : "are") missing (\(shown)"
                    + "\(missing.count > problemsShown ? ", …" : "")): give the output folder of every shard")
        }
        for (folder, manifest) in manifests where !manifest.finished {
            problems.add(
                .shardIncomplete,
                "shard \(manifest.shard) (\(folder)) did not finish: it was stopped before reading its input to the end. "
                    + "Run it again with the same command (the cards already made are kept)")
        }
        for (folder, manifest) in manifests.dropFirst() {
            if manifest.issuer != first.issuer {
                problems.add(.shardMismatch, "shard \(manifest.shard) (\(folder)) issued for \(manifest.issuer), shard \(first.shard) for \(first.issuer)")
            }
            if manifest.kid != first.kid {
                problems.add(.shardMismatch, "shard \(manifest.shard) (\(folder)) signed with key \(manifest.kid), shard \(first.shard) with \(first.kid)")
            }
            let mine = manifest.inputs.map { "\($0.name) (\($0.bytes) bytes, \($0.records) records)" }
            let theirs = first.inputs.map { "\($0.name) (\($0.bytes) bytes, \($0.records) records)" }
            if mine != theirs || manifest.records != first.records {
                problems.add(
                    .shardMismatch,
                    "shard \(manifest.shard) (\(folder)) read \(mine.joined(separator: ", ")), \(manifest.records) records in all; shard "
                        + "\(first.shard) read \(theirs.joined(separator: ", ")), \(first.records): every shard must read the same inputs")
            }
        }
        return problems.all
    }

    /// Problems, at most `problemsShown` of each code, then how many more.
    final class Problems {
        private(set) var list: [HealthCardError] = []
        private var counts: [RuleCode: Int] = [:]

        func add(_ code: RuleCode, _ message: String) {
            counts[code, default: 0] += 1
            guard counts[code]! <= problemsShown else { return }
            let kind: HealthCardError.Kind = code == .shardMismatch ? .configuration : .input
            list.append(HealthCardError(kind, code: code, severity: .error, message))
        }

        var all: [HealthCardError] {
            var out = list
            for (code, count) in counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > problemsShown {
                out.append(HealthCardError(.input, code: code, severity: .error, "and \(count - problemsShown) more \(code.rawValue) problems"))
            }
            return out
        }
    }

    /// One report line as the merge reads it.
    struct Line {
        var record: Int
        var issued: Bool
        var kid: String?
        /// The person: the id a rid was derived from, else the record's id.
        var person: String?
        var rid: String?
        /// The line as an unsharded run writes it: without `,"record":N`, with its newline.
        var withoutRecord: [UInt8]
    }

    /// Reads every shard's report in the batch's order (the smallest `record` first), checking that each shard's
    /// lines are well formed and in order and that every record of the batch comes once, and gives each line to
    /// `body` with its shard number.
    static func walk(_ manifests: [(folder: String, manifest: ShardManifest)], problems: Problems,
                     _ body: (Int, Line) throws -> Void) throws {
        struct Reader {
            let shard: Int
            let path: String
            let reader: LineReader
            let reported: Int
            var lines = 0
            var last = 0
            var head: Line?
        }
        var readers: [Reader] = []
        for (folder, manifest) in manifests {
            let path = "\(folder)/report.ndjson"
            readers.append(Reader(shard: manifest.shard.index, path: path, reader: try LineReader(path: path, maxLineBytes: maxLineBytes),
                                  reported: manifest.reported))
        }
        func advance(_ r: inout Reader) throws {
            r.head = nil
            while let next = try r.reader.next() {
                r.lines += 1
                guard let bytes = next.bytes else {
                    problems.add(.shardMismatch, "\(r.path):\(next.number) is over \(maxLineBytes) bytes: not a report line")
                    continue
                }
                guard let line = parse(bytes) else {
                    problems.add(.shardMismatch, "\(r.path):\(next.number) is not a line of a sharded run's report (it ends with \"record\")")
                    continue
                }
                guard line.record > r.last else {
                    problems.add(.shardMismatch, "\(r.path):\(next.number): record \(line.record) after record \(r.last): the report is out of order")
                    continue
                }
                r.last = line.record
                r.head = line
                return
            }
        }
        for i in readers.indices { try advance(&readers[i]) }
        var expected = 1
        let records = manifests[0].manifest.records
        while true {
            guard let i = readers.indices.filter({ readers[$0].head != nil }).min(by: { readers[$0].head!.record < readers[$1].head!.record }),
                let line = readers[i].head
            else { break }
            if line.record > expected {
                let range = line.record - 1 > expected ? "records \(expected) to \(line.record - 1) are" : "record \(expected) is"
                problems.add(.shardIncomplete, "\(range) in no shard's report")
            } else if line.record < expected {
                problems.add(.shardIncomplete, "record \(line.record) is in two shards' reports (shard \(readers[i].shard) and another)")
            }
            if line.record >= expected {
                try body(readers[i].shard, line)
                expected = line.record + 1
            }
            try advance(&readers[i])
        }
        if expected <= records {
            problems.add(.shardIncomplete, "records \(expected) to \(records) of the batch are in no shard's report")
        } else if expected > records + 1 {
            problems.add(.shardMismatch, "the reports hold records up to \(expected - 1), the batch has \(records)")
        }
        for r in readers where r.lines != r.reported {
            problems.add(
                .shardMismatch, "\(r.path) has \(r.lines) lines; the shard's \(ShardManifest.fileName) says \(r.reported): the report changed after the run")
        }
    }

    /// A sharded run's report line: a JSON object whose last member is `"record"`.
    static func parse(_ bytes: [UInt8]) -> Line? {
        guard let json = try? JSONParser.parse(bytes), let object = json.objectValue, let last = object.members.last,
            last.key == "record", let lexeme = last.value.numberLexeme, let record = Int(lexeme), record > 0
        else { return nil }
        let marker = Array(",\"record\":\(lexeme)}".utf8)
        guard bytes.count > marker.count, bytes.suffix(marker.count).elementsEqual(marker) else { return nil }
        var withoutRecord = Array(bytes.dropLast(marker.count))
        withoutRecord.append(UInt8(ascii: "}"))
        withoutRecord.append(0x0A)
        let id = object["id"]?.stringValue
        return Line(
            record: record, issued: object["status"]?.stringValue == "issued", kid: object["kid"]?.stringValue,
            person: object["ridFrom"]?.stringValue ?? id.map(PatientIdentity.normalize), rid: object["rid"]?.stringValue,
            withoutRecord: withoutRecord)
    }

    static func hash(_ text: String) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(text)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// A rid's first 8 bytes (it is a truncated HMAC), or a hash of its text when it is not base64url.
    static func ridKey(_ rid: String) -> UInt64 {
        guard let bytes = Base64URL.decode(rid), bytes.count >= 8 else { return hash(rid) }
        return bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
