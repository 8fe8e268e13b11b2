internal import CProcess

#if canImport(Glibc)
    import Glibc
#endif

/// The process's standard output as the C library buffers it (`print` writes there).
public enum StandardOutput {
    /// Flushes standard output and says whether anything printed there could not be written (a full disk, a
    /// closed pipe, `> /dev/full`): nil when all was written, else the reason (`strerror`).
    public static func flushFailure() -> String? {
        guard CProcess_stdout_failed() != 0 else { return nil }
        return String(cString: strerror(errno))
    }
}
