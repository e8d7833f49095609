import Crypto
import PaymentStages
import Testing

@Suite struct ApplicationDataBindingTests {
    let bytes = Array("order-42".utf8)

    @Test func strictRefusesEveryDisagreement() {
        let hash = SHA256.hash(bytes)
        #expect(ApplicationDataBinding.mismatch(headerHash: nil, jobBytes: nil, check: .strict) == nil)
        #expect(ApplicationDataBinding.mismatch(headerHash: hash, jobBytes: bytes, check: .strict) == nil)
        #expect(ApplicationDataBinding.mismatch(headerHash: hash, jobBytes: Array("order-43".utf8), check: .strict) != nil)
        #expect(ApplicationDataBinding.mismatch(headerHash: hash, jobBytes: nil, check: .strict) != nil)
        #expect(ApplicationDataBinding.mismatch(headerHash: nil, jobBytes: bytes, check: .strict) != nil)
        // The header carries the hash, not the bytes: the raw bytes in the header do not match.
        #expect(ApplicationDataBinding.mismatch(headerHash: bytes, jobBytes: bytes, check: .strict) != nil)
    }

    @Test func whenPresentSkipsOnlyTheJobThatLacksIt() {
        let hash = SHA256.hash(bytes)
        #expect(ApplicationDataBinding.mismatch(headerHash: hash, jobBytes: nil, check: .whenPresent) == nil)
        #expect(ApplicationDataBinding.mismatch(headerHash: hash, jobBytes: Array("x".utf8), check: .whenPresent) != nil)
        #expect(ApplicationDataBinding.mismatch(headerHash: nil, jobBytes: bytes, check: .whenPresent) != nil)
    }
}
