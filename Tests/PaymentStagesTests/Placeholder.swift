import Testing

@Test func placeholder_PaymentStagesTests() { #expect(Bool(true)) }
