import Testing

@Test func placeholder_PipelineTests() { #expect(Bool(true)) }
