import HealthCards

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a program as a child process and measures it: wall time and peak resident memory (wait4).
struct ChildRun {
    var status: Int32
    var seconds: Double
    /// Peak resident set of the child, in bytes (`ru_maxrss`).
    var peakRSS: Int
    /// The child's stderr (last 4 KiB).
    var stderr: String

    static func run(_ program: String, _ arguments: [String]) throws -> ChildRun {
        let log = "/tmp/healthcards-bench-\(getpid()).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid = pid_t()
        let start = monotonic()
        let status = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard status == 0 else { throw BenchError("cannot run \(program): \(String(cString: strerror(status)))") }
        var waitStatus: Int32 = 0
        var usage = rusage()
        while wait4(pid, &waitStatus, 0, &usage) < 0 && errno == EINTR {}
        let seconds = monotonic() - start
        let text = (try? FileIO.read(log)).map { String(decoding: $0.suffix(4096), as: UTF8.self) } ?? ""
        unlink(log)
        let exit = (waitStatus & 0x7F) == 0 ? (waitStatus >> 8) & 0xFF : 128 + (waitStatus & 0x7F)
        return ChildRun(status: exit, seconds: seconds, peakRSS: Int(usage.ru_maxrss) * 1024, stderr: String(text.suffix(4096)))
    }
}

func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
