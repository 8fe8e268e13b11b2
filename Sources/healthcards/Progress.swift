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

/// The `issue` progress line on a terminal: records done, rate, estimated time left, redrawn in
/// place at most 4 times a second on stderr. Holds nothing per record.
final class ProgressLine {
    let enabled: Bool
    private let start = Clock.monotonicSeconds()
    private var lastDraw = 0.0
    private var drawn = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(done: Int, total: Int) {
        guard enabled else { return }
        let now = Clock.monotonicSeconds()
        guard now - lastDraw >= 0.25 || done == total else { return }
        lastDraw = now
        let elapsed = now - start
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        var text = "\r\(done)/\(total) records"
        if total > 0 { text += " (\(done * 100 / total)%)" }
        text += ", \(Int(rate.rounded())) records/s"
        if rate > 0 && total > done { text += ", about \(Self.duration(Double(total - done) / rate)) left" }
        text += "\u{1B}[K"
        write(text)
        drawn = true
    }

    /// Erases the line before the summary is printed.
    func clear() {
        guard enabled && drawn else { return }
        write("\r\u{1B}[K")
        drawn = false
    }

    private func write(_ text: String) {
        var text = text
        text.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// `42 s`, `3 min 05 s`, `2 h 07 min`.
    static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        if s < 60 { return "\(s) s" }
        if s < 3600 { return "\(s / 60) min \(s % 60 < 10 ? "0" : "")\(s % 60) s" }
        return "\(s / 3600) h \(s % 3600 / 60 < 10 ? "0" : "")\(s % 3600 / 60) min"
    }
}

/// SIGINT and SIGTERM ask a running batch to stop cleanly; a second signal ends the process at once
/// (the next run removes what it left).
enum Signals {
    /// The stop request of the one batch this process runs, set by the handler. It is made in `install`,
    /// before the handler can run: a handler must not be the first to touch a lazily made global.
    static let stop = StopRequest()

    static func install() {
        _ = stop
        // A parent may have started us with these signals blocked; the workers inherit this mask.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        for sig in [SIGINT, SIGTERM] {
            signal(sig) { received in
                Signals.stop.request(signal: received)
                signal(received, SIG_DFL)
            }
        }
    }

    static func restore() {
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
