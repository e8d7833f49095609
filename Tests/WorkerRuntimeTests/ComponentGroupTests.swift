import Dispatch
import Foundation
import Synchronization
import Testing
@testable import WorkerRuntime

/// ``ComponentGroup``: start in order, stop in reverse order, each after the ones that use it finished, one deadline.
@Suite struct ComponentGroupTests {
    struct StartFailed: Error {}

    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func append(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Records what happens to it in the shared log; stops when asked unless `stuck`, and may fail to start.
    final class Recording: WorkerComponent {
        let name: String
        let log: Log
        let stuck: Bool
        let failsToStart: Bool
        private let stopped = DispatchSemaphore(value: 0)

        init(_ name: String, log: Log, stuck: Bool = false, failsToStart: Bool = false) {
            (self.name, self.log, self.stuck, self.failsToStart) = (name, log, stuck, failsToStart)
        }

        func start() throws {
            log.append("start \(name)")
            if failsToStart { throw StartFailed() }
        }

        func requestStop() {
            log.append("stop \(name)")
            if !stuck { stopped.signal() }
        }

        func waitUntilStopped(deadline: DispatchTime) -> Bool {
            let inTime = stopped.wait(timeout: deadline) == .success
            log.append("\(inTime ? "stopped" : "late") \(name)")
            return inTime
        }
    }

    @Test func startsInOrderAndStopsInReverseEachAfterTheOnesThatUseIt() throws {
        let log = Log()
        let group = ComponentGroup(["server", "publisher", "consumer", "lanes"].map { Recording($0, log: log) })
        try group.start()
        group.requestStop()
        #expect(group.stop(timeout: 5) == [])
        #expect(log.all == [
            "start server", "start publisher", "start consumer", "start lanes",
            "stop lanes",  // requestStop begins the shutdown at the last component
            "stop lanes", "stopped lanes", "stop consumer", "stopped consumer", "stop publisher", "stopped publisher",
            "stop server", "stopped server",
        ])
    }

    @Test func oneDeadlineForAllAndTheRestIsStillStoppedAfterALateOne() {
        let log = Log()
        let group = ComponentGroup([Recording("publisher", log: log), Recording("lanes", log: log, stuck: true)])
        let started = DispatchTime.now()
        #expect(group.stop(timeout: 0.2) == ["lanes"])
        #expect(log.all == ["stop lanes", "late lanes", "stop publisher", "stopped publisher"])
        // The publisher had already been asked to stop, so the spent deadline does not make it late; and the group
        // did not wait a second time limit for it.
        #expect(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds < 10_000_000_000)
    }

    @Test func aFailedStartStopsWhatAlreadyStartedAndNothingElse() {
        let log = Log()
        let group = ComponentGroup([Recording("server", log: log), Recording("publisher", log: log), Recording("consumer", log: log, failsToStart: true),
                                    Recording("lanes", log: log)])
        #expect(throws: StartFailed.self) { try group.start() }
        #expect(log.all == [
            "start server", "start publisher", "start consumer",
            "stop publisher", "stopped publisher", "stop server", "stopped server",
        ])
    }

    @Test func threadsAndClosingComponents() throws {
        let ran = Mutex<Set<Int>>([])
        let stop = Mutex(false)
        let closed = Mutex(0)
        let threads = ThreadsComponent(name: "lane", count: 3, body: { index in
            ran.withLock { _ = $0.insert(index) }
            while !stop.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
        }, onStop: { stop.withLock { $0 = true } })
        let closing = ClosingComponent(name: "consumer", close: { closed.withLock { $0 += 1 } })
        let group = ComponentGroup([closing, threads])
        try group.start()
        #expect(group.stop(timeout: 10) == [])
        #expect(ran.withLock { $0 } == [0, 1, 2])
        #expect(closing.waitUntilStopped(deadline: .now()) && closed.withLock { $0 } == 1, "closed once")
    }
}
