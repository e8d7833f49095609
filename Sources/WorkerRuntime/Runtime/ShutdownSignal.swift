import Dispatch
import Foundation

/// Waits for SIGTERM or SIGINT without a process-global handler function: the signals are ignored at
/// the C level and observed through Dispatch sources, so the handler code runs on a normal queue and
/// may do anything (log, stop the runtime) instead of being limited to async-signal-safe calls.
public final class ShutdownSignal {
    private let sources: [any DispatchSourceSignal]
    private let received = DispatchSemaphore(value: 0)

    public init(signals: [Int32] = [SIGTERM, SIGINT]) {
        let queue = DispatchQueue(label: "paypipe.signals")
        let received = self.received
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { received.signal() }
            source.resume()
            return source
        }
    }

    /// Blocks the calling thread until the first signal arrives.
    public func wait() {
        received.wait()
    }
}
