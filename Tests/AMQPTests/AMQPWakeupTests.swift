import Foundation
import Synchronization
import Testing
@testable import AMQP

@Suite("Owner-loop wakeup pipe")
struct AMQPWakeupTests {
    /// A signal racing with `drain()` is never swallowed: were the pending flag cleared before the pipe is emptied,
    /// every later signal would be suppressed and the owner would wake only on its poll timeout (2.5 s stalls in
    /// consume+ack).
    @Test func signalsRacingWithDrainAreNeverLost() {
        let wakeup = AMQPWakeup()
        let produced = Atomic<Int>(0)
        let consumed = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let owner = AMQPOwnerThread(name: "wakeup-test") {
            while !stop.load(ordering: .sequentiallyConsistent) {
                var descriptor = pollfd(fd: wakeup.readDescriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, 5_000) // far longer than the producer is willing to wait
                wakeup.drain()
                consumed.store(produced.load(ordering: .sequentiallyConsistent), ordering: .sequentiallyConsistent)
            }
        }
        var stalls = 0
        for _ in 0..<300 {
            for _ in 0..<20 {
                produced.add(1, ordering: .sequentiallyConsistent)
                wakeup.signal()
            }
            let target = produced.load(ordering: .sequentiallyConsistent)
            let deadline = Date().addingTimeInterval(1)
            while consumed.load(ordering: .sequentiallyConsistent) < target, Date() < deadline {
                sched_yield()
            }
            if consumed.load(ordering: .sequentiallyConsistent) < target {
                stalls += 1
                break
            }
        }
        stop.store(true, ordering: .sequentiallyConsistent)
        wakeup.signal()
        owner.join(timeoutSeconds: 10)
        #expect(stalls == 0)
    }
}
