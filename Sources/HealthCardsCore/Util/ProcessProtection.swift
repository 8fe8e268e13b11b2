internal import CProcess

/// What a process that holds a private key (or a PIN, or the revocation secret) does first, so that the
/// secret cannot be read back from outside: OpenSSL's secure heap is started (private keys are kept
/// there, locked in memory), core dumps are turned off (`setrlimit(RLIMIT_CORE, 0)`) and the process is
/// made not dumpable (`prctl(PR_SET_DUMPABLE, 0)`: no core file, no `ptrace` by other processes of the
/// same user, `/proc/PID/mem` closed to them).
package enum ProcessProtection {
    /// Applies the protections; call it before loading a key. Safe to call more than once.
    /// - Returns: true when core dumps are off and the process is not dumpable (false where the
    ///   platform refuses; the command goes on).
    @discardableResult
    public static func protectSecrets() -> Bool {
        SecureHeap.start()
        return CProcess_protect_secrets() == 0
    }

    /// True while the process may dump core or be traced by its user's other processes.
    public static var isDumpable: Bool { CProcess_is_dumpable() == 1 }
}
