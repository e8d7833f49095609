// `JSONValue` is part of this module's API (`JWTSigner.sign(_:)` takes one, `VerifiedJWT.claims` is one), so
// `import JWT` brings the JSON module along, as swift-nio's `NIO` re-exports `NIOCore`.
@_exported import JSON
