import Crypto
import Foundation
import Testing

/// `Base64.decode` replaces `Data(base64Encoded:)` on the token path: it must accept and reject the same inputs.
@Suite struct Base64Tests {
    @Test func roundTripsEveryLengthLikeFoundation() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<100 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
            #expect(Base64.decode(text) == bytes)
        }
    }

    @Test func rejectsWhatFoundationRejects() {
        let inputs = [
            "A", "AB", "ABC", "ABCDE", "A===", "=ABC", "AB==CDEF", "AB C", "AB\nCD==", "ABC-", "ABC_",
            "QUJD\u{00E9}", "!!not base64!!",
        ]
        for input in inputs {
            #expect(Base64.decode(input) == nil, "\(input)")
            #expect(Data(base64Encoded: input) == nil, "Foundation accepts \(input)")
        }
    }

    /// Foundation decodes these to something; they are not base64 of anything, and Apple never sends them.
    @Test func isStricterThanFoundationOnMisplacedPadding() {
        for input in ["AB=C", "ABCD===="] {
            #expect(Base64.decode(input) == nil, "\(input)")
        }
    }

    @Test func acceptsPaddedForms() {
        // Like Foundation, unused trailing bits are ignored ("QR==" decodes as "QQ==").
        #expect(Base64.decode("QR==") == [0x41])
        #expect(Base64.decode("") == [])
        #expect(Base64.decode("QQ==") == [0x41])
        #expect(Base64.decode("QUI=") == [0x41, 0x42])
        #expect(Base64.decode("QUJD") == [0x41, 0x42, 0x43])
        #expect(Base64.decode("+/+/") == Array(Data(base64Encoded: "+/+/")!))
    }
}
