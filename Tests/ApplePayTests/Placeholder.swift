import Testing

@Test func placeholder_ApplePayTests() { #expect(Bool(true)) }
