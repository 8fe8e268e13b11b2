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
    /// User plus system CPU time of the child, in seconds.
    var cpuSeconds: Double
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
        // Peak RSS: the child's VmHWM, sampled every 10 ms until it exits. (ru_maxrss from wait4 is no
        // good here: exec carries the spawning process's resident size into it.)
        var waitStatus: Int32 = 0
        var peak = 0
        var usage = rusage()
        while true {
            let r = wait4(pid, &waitStatus, WNOHANG, &usage)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            peak = max(peak, highWaterMark(pid))
            usleep(10_000)
        }
        let seconds = monotonic() - start
        let text = (try? FileIO.read(log)).map { String(decoding: $0.suffix(4096), as: UTF8.self) } ?? ""
        unlink(log)
        let exit = (waitStatus & 0x7F) == 0 ? (waitStatus >> 8) & 0xFF : 128 + (waitStatus & 0x7F)
        return ChildRun(status: exit, seconds: seconds, peakRSS: peak,
                        cpuSeconds: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6, stderr: String(text.suffix(4096)))
    }
}

func monotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// `VmHWM` of a running process, in bytes (0 when it cannot be read).
func highWaterMark(_ pid: pid_t) -> Int {
    guard let bytes = try? FileIO.read("/proc/\(pid)/status") else { return 0 }
    for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let digits = line.filter { $0.isNumber }
        return (Int(digits) ?? 0) * 1024
    }
    return 0
}
