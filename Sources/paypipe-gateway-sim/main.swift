import Foundation
import PayPipeDevTools
import Pipeline

// paypipe-gateway-sim: a Trust Payments-compatible gateway for local runs, tests and benchmarks (see docs/submit.md).
do {
    let stop = ShutdownSignal()
    let configuration = try GatewaySimulatorConfiguration.fromEnvironment()
    let simulator = GatewaySimulator(configuration: configuration)
    try simulator.start()
    print("paypipe-gateway-sim listening on \(simulator.baseURL) for \(configuration.merchants.count) merchant(s)")
    if let face = simulator.appleTokenAPI { print("paypipe-gateway-sim: Apple merchant-token API face (mutual TLS) on \(face.baseURL)") }
    stop.wait()
    simulator.stop()
} catch {
    FileHandle.standardError.write(Data("paypipe-gateway-sim: \(error)\n".utf8))
    exit(1)
}
