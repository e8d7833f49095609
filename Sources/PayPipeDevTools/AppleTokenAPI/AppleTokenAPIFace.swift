import Foundation
import HTTP
import JSON
import Pipeline

/// The gateway simulator's face for Apple's merchant-token API (``AppleTokenAPISimulator`` over mutual TLS on its own
/// port, `PAYPIPE_SIM_APPLE_TOKEN_API_PORT` and its companions), and its script on the simulator's plain admin port (`/_sim/apple/…`), so a
/// demo or a test makes Apple's side of an event without code: docs/merchant-tokens.md "Sandbox".
public struct AppleTokenAPIFace: Sendable {
    /// 0 picks a free port (tests).
    public var port: UInt16
    public var files: MutualTLSServer.Files

    public init(port: UInt16, files: MutualTLSServer.Files) {
        (self.port, self.files) = (port, files)
    }

    /// From `PAYPIPE_SIM_APPLE_TOKEN_API_PORT` (unset: no face) with `_CERT`, `_KEY` and `_CLIENT_CA` (all required then).
    static func fromEnvironment(_ environment: EnvironmentReader) throws -> AppleTokenAPIFace? {
        guard environment.raw(DevToolSettings.simAppleTokenAPIPort.variable.name) != nil else { return nil }
        let port = try environment.read(DevToolSettings.simAppleTokenAPIPort)
        func file(_ variable: ConfigurationVariable) throws -> String {
            guard let path = environment.raw(variable.name), !path.isEmpty else {
                throw ConfigurationError(variable: variable.name, problem: "is required with PAYPIPE_SIM_APPLE_TOKEN_API_PORT (a PEM file)")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw ConfigurationError(variable: variable.name, problem: "cannot read '\(path)'")
            }
            return path
        }
        return AppleTokenAPIFace(port: port, files: MutualTLSServer.Files(
            certificate: try file(DevToolSettings.simAppleTokenAPICertificate), key: try file(DevToolSettings.simAppleTokenAPIKey),
            clientCA: try file(DevToolSettings.simAppleTokenAPIClientCA)))
    }
}

extension AppleTokenAPISimulator {
    /// The admin paths, on the simulator's plain HTTP port (never on the mutual-TLS face Apple's callers see):
    ///
    /// - `POST /_sim/apple/events` `{"merchantId": Apple's merchant identifier, "eventId", "event": {…}}`: the event the
    ///   face answers for that merchant from then on (`event` is Apple's `MerchantTokenEventResponse`, e.g.
    ///   `{"eventType": "UNLINK", "merchantTokenIdentifier": …, "reason": "USER"}`); 204.
    /// - `POST /_sim/apple/tokens` `{"merchantId", "merchantTokenIdentifier"}`: a token Apple's unlink API knows; 204.
    /// - `GET /_sim/apple/calls`: `{"calls": [{"method", "path", "requestId"}], "refusedHandshakes"}`.
    static func admin(_ request: HTTPServerRequest, face: AppleTokenAPISimulator?) -> HTTPServerResponse {
        guard let face else { return .text("the Apple token API face is off (PAYPIPE_SIM_APPLE_TOKEN_API_PORT)\n", status: 404) }
        switch (request.method, request.path) {
        case ("GET", "/_sim/apple/calls"):
            let calls: [JSONValue] = face.calls.map { ["method": .string($0.method), "path": .string($0.path), "requestId": .string($0.requestId)] }
            return .json((["calls": .array(calls), "refusedHandshakes": .integer(Int64(face.refusedHandshakes))] as JSONValue).serialized())
        case ("POST", "/_sim/apple/events"):
            guard let body = try? JSONValue.parse(request.body), let merchant = body["merchantId"]?.stringValue,
                  let eventId = body["eventId"]?.stringValue, let event = body["event"], case .object = event else {
                return .text("expected {\"merchantId\", \"eventId\", \"event\": {…}}\n", status: 400)
            }
            face.addEvent(merchantId: merchant, eventId: eventId, body: event.serialized())
            return HTTPServerResponse(status: 204)
        case ("POST", "/_sim/apple/tokens"):
            guard let body = try? JSONValue.parse(request.body), let merchant = body["merchantId"]?.stringValue,
                  let identifier = body["merchantTokenIdentifier"]?.stringValue else {
                return .text("expected {\"merchantId\", \"merchantTokenIdentifier\"}\n", status: 400)
            }
            face.addToken(merchantId: merchant, identifier: identifier)
            return HTTPServerResponse(status: 204)
        default:
            return .text("not found\n", status: 404)
        }
    }
}
