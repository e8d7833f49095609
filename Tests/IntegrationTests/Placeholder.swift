import Testing

@Test func placeholder_IntegrationTests() { #expect(Bool(true)) }
