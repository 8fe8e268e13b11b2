#if canImport(Glibc)
    import Glibc
#endif
import HealthCardsCore
import HealthCardsSite
import HealthCardsVerify
import HealthCardsQR
import HealthCardsQRReading
import HealthCardsPrint
import HealthCardsIssuing
import HealthCardsFixtures

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

    /// Runs `program` and measures it. A child so short-lived that no sample of its memory was taken after
    /// its exec is run again (up to three times in all); its figure is then the best one seen.
    static func run(_ program: String, _ arguments: [String]) throws -> ChildRun {
        var run = try once(program, arguments)
        var attempts = 1
        while !run.sampledAfterExec && attempts < 3 {
            run = try once(program, arguments)
            attempts += 1
        }
        return run.child
    }

    private static func once(_ program: String, _ arguments: [String]) throws -> (child: ChildRun, sampledAfterExec: Bool) {
        let log = "/tmp/healthcards-bench-\(getpid()).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let programFile = realPath(program) ?? program
        var pid = pid_t()
        let start = monotonic()
        let status = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard status == 0 else { throw BenchError("cannot run \(program): \(OS.errorText(status))") }
        // Peak RSS: the child's VmHWM, sampled every 2 ms, then 10 ms, until it exits, counting only samples
        // taken once the child runs `program` (before its exec, the child is a vfork of this process).
        // ru_maxrss from wait4 is no good here: exec carries the spawning process's resident size into it.
        var waitStatus: Int32 = 0
        var peak = 0
        var sampled = false
        var usage = rusage()
        var rounds = 0
        while true {
            let r = wait4(pid, &waitStatus, WNOHANG, &usage)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            if realPath("/proc/\(pid)/exe") == programFile {
                let mark = highWaterMark(pid)
                if mark > 0 {
                    peak = max(peak, mark)
                    sampled = true
                }
            }
            rounds += 1
            usleep(rounds < 100 ? 2_000 : 10_000)
        }
        let seconds = monotonic() - start
        let text = (try? FileIO.read(log)).map { String(decoding: $0.suffix(4096), as: UTF8.self) } ?? ""
        unlink(log)
        let exit = (waitStatus & 0x7F) == 0 ? (waitStatus >> 8) & 0xFF : 128 + (waitStatus & 0x7F)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
        return (ChildRun(status: exit, seconds: seconds, peakRSS: peak, cpuSeconds: cpu, stderr: String(text.suffix(4096))),
                sampled)
    }
}

/// The canonical path of `path` (symbolic links resolved), or nil.
func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
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

/// Child processes started without waiting, for the instruction counts: several callgrind runs at once (the
/// counts do not depend on what else runs), each with its own files for standard input and output.
enum Spawn {
    /// Starts `program` with `arguments`; standard input from `stdin` (default /dev/null), output to `stdout`
    /// and `stderr` (default /dev/null), the environment of this process plus `environment`.
    static func start(_ program: String, _ arguments: [String], stdin: String = "/dev/null", stdout: String = "/dev/null",
                      stderr: String = "/dev/null", environment: [String: String] = [:]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var env: [String] = []
        var i = 0
        while let entry = environ[i] {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "="), environment[String(text[..<eq])] != nil {
                i += 1
                continue
            }
            env.append(text)
            i += 1
        }
        env += environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer { for p in envp { free(p) } }
        var pid = pid_t()
        let status = program.contains("/")
            ? posix_spawn(&pid, program, &actions, nil, argv, envp) : posix_spawnp(&pid, program, &actions, nil, argv, envp)
        guard status == 0 else { throw BenchError("cannot run \(program): \(OS.errorText(status))") }
        return pid
    }

    /// What a child ended with: its exit status (128 + signal when a signal ended it) and CPU seconds.
    struct Ended {
        var pid: pid_t
        var status: Int32
        var cpuSeconds: Double
    }

    /// Waits for `pid` (or any child, for -1).
    static func waitEnded(_ pid: pid_t = -1) throws -> Ended {
        var waitStatus: Int32 = 0
        var usage = rusage()
        while true {
            let r = wait4(pid, &waitStatus, 0, &usage)
            if r > 0 {
                let exit = (waitStatus & 0x7F) == 0 ? (waitStatus >> 8) & 0xFF : 128 + (waitStatus & 0x7F)
                let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
                    + Double(usage.ru_stime.tv_usec) / 1e6
                return Ended(pid: r, status: exit, cpuSeconds: cpu)
            }
            if errno != EINTR { throw BenchError("wait4: \(OS.errorText(errno))") }
        }
    }

    /// Waits for `pid`; its exit status.
    static func wait(_ pid: pid_t) throws -> Int32 { try waitEnded(pid).status }
}
