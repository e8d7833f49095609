import Testing

@Test func placeholder_CryptoTests() { #expect(Bool(true)) }
