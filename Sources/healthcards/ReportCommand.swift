import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

/// `healthcards report merge`: the shards of one batch checked together and their reports made one.
enum ReportCommand {
    static let help = """
        Usage: healthcards report merge --out FILE SHARD_DIR...

        Commands:
          merge  check the output folders of a batch's shards together and write their combined report

        A batch spread over N machines is run as N shards (`healthcards issue --shard K/N`, each into its
        own --out; docs/scale.md). merge checks those folders together, from their report.ndjson and
        shard.json:
          - every shard from 0/N to N-1/N is there once, and each read its input to the end;
          - they were run alike: the same number of shards, issuer, key (the kid of every card too) and
            inputs (name, size, records);
          - every record of the batch is in exactly one shard's report;
          - no person is in two shards, and no vc.rid belongs to two people.
        Then it writes FILE: every shard's report lines in the batch's order, each as a run without --shard
        writes it (the same lines, without "record"), so FILE is the report.ndjson one run would have
        written (the files a line lists are in its shard's folder); revoke --report takes it. Nothing is
        written when a check fails: each problem is printed with its code (SHARD_INCOMPLETE,
        SHARD_MISMATCH, SHARD_PERSON_SPLIT, RID_COLLISION; docs/error-codes.md), naming shards and record
        numbers, never a patient id. People and rids are compared by 64-bit hashes (about 40 bytes a person
        in memory) and every match is confirmed on the ids before it is reported.

        Arguments:
          SHARD_DIR             the --out folder of one shard (it holds report.ndjson and shard.json)
        Options:
          --out FILE            the combined report, 0600 (it holds patient ids); - for standard output. A
                                regular file is replaced whole, once every check passed
          -h, --help            show this help

        Exit status: 0 the shards make one batch and FILE was written; 1 a check failed (nothing written);
        2 usage error, or a folder or FILE cannot be read or written.
        """

    static func run(_ args: [String]) throws -> ExitStatus {
        let parsed = try Arguments(args, valued: ["out"], flagNames: [], command: "report")
        if parsed.has("help") || parsed.positionals.first == "help" {
            say(help)
            return .ok
        }
        guard let subcommand = parsed.positionals.first else {
            throw HealthCardError(.configuration, "`healthcards report` needs a subcommand: merge; see `healthcards report --help`")
        }
        guard subcommand == "merge" else {
            throw HealthCardError(
                .configuration, "unknown subcommand \(Quote.text(subcommand)) of `healthcards report`; expected merge. See `healthcards report --help`")
        }
        let out = try parsed.required("out", command: "report merge")
        let folders = Array(parsed.positionals.dropFirst())
        guard !folders.isEmpty else {
            throw HealthCardError(.configuration, "`healthcards report merge` needs the output folder of every shard (SHARD_DIR...); see `healthcards report --help`")
        }
        for folder in folders where !FileIO.isDirectory(folder) {
            throw HealthCardError(.configuration, "\(folder) is not a folder: give the --out folder of each shard")
        }
        let outcome = try ShardMerge.merge(folders: folders, to: out == "-" ? "/dev/stdout" : out)
        guard outcome.problems.isEmpty else {
            for problem in outcome.problems { printError(problem.described(Hints.said)) }
            printError("the \(folders.count) folders are not the shards of one batch (\(outcome.problems.count) problem\(outcome.problems.count == 1 ? "" : "s")); nothing was written to \(out)")
            return .partial
        }
        let count = outcome.shards.first?.shard.count ?? folders.count
        printError("merged \(count) shard\(count == 1 ? "" : "s"): \(outcome.records) records (\(outcome.issued) issued, \(outcome.rejected) rejected); report: \(out)")
        return .ok
    }
}
