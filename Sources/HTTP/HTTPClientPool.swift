import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads, each owning one keep-alive ``HTTPClient`` for its whole life, that run a batch of
/// requests concurrently.
///
/// Why: a stage that makes one call per message would otherwise either call one at a time (the round trip bounds
/// its throughput) or create a client per call (a new TCP/TLS connection per call). A libcurl handle must stay on
/// one thread, so the handles live on the pool's threads and jobs travel to them, never the other way round.
public final class HTTPClientPool: Sendable {
    /// Work for one pool thread, given that thread's client.
    public typealias Job = @Sendable (HTTPClient) -> Void

    public let size: Int
    private let configuration: HTTPClientConfiguration
    private let name: String
    private let queue = Mutex<[Job]>([])
    private let started = Mutex(false)
    private let available = DispatchSemaphore(value: 0)

    /// `size` threads named `name-<n>`, started on the first ``perform(_:_:)``; each creates its client there.
    public init(size: Int, configuration: HTTPClientConfiguration, name: String) {
        self.size = max(1, size)
        self.configuration = configuration
        self.name = name
    }

    private func startIfNeeded() {
        let start = started.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        guard start else { return }
        for index in 0..<size {
            let thread = Thread { [self] in
                let client = HTTPClient(configuration: configuration)
                while true {
                    available.wait()
                    guard let job = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                    job(client)
                }
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Runs `body(index, client)` for every index in `0..<count` on the pool's threads, at most `size` at a time, and
    /// returns the results in index order once all are done. Must not be called from a pool thread (it would wait
    /// for itself).
    public func perform<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int, HTTPClient) -> T) -> [T] {
        guard count > 0 else { return [] }
        startIfNeeded()
        let results = Mutex<[Int: T]>([:])
        let group = DispatchGroup()
        let jobs: [Job] = (0..<count).map { index in
            group.enter()
            return { client in
                let result = body(index, client)
                results.withLock { $0[index] = result }
                group.leave()
            }
        }
        queue.withLock { $0.append(contentsOf: jobs) }
        for _ in jobs { available.signal() }
        group.wait()
        return results.withLock { results in (0..<count).map { results[$0]! } }
    }
}
