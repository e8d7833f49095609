import Testing

@Test func placeholder_JWTTests() { #expect(Bool(true)) }
