import ApplePay
import Testing

/// Expects `body` to fail with an `ApplePayError` of the given stable code.
func expectError(
    _ code: String, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected \(code), but it succeeded \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
    } catch let error as ApplePayError {
        #expect(error.code == code, "\(error) \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
