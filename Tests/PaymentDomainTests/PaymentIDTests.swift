import Foundation
import PaymentDomain
import Testing

/// The payment id's text is written and read from its bytes: it must agree with Foundation's `uuidString` and
/// `UUID(uuidString:)` on every id and every other text.
@Suite struct PaymentIDTests {
    @Test func writesFoundationsTextLowercase() {
        for id in (0..<200).map({ _ in UUID() }) + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))] {
            #expect(id.paymentIDText == id.uuidString.lowercased())
            #expect(id.paymentIDHex == id.uuidString.lowercased().filter { $0 != "-" })
            #expect(UUID(paymentIDText: id.paymentIDText) == id)
            #expect(UUID(paymentIDText: id.uuidString) == id)
        }
        let maximum = UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))
        #expect(maximum.paymentIDText == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test(arguments: [
        "", "00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-0000000000001", "000000000-000-0000-0000-000000000000",
        "00000000-0000-0000-0000_000000000000", "0000000g-0000-0000-0000-000000000000", "{00000000-0000-0000-0000-000000000000}",
        "00000000000000000000000000000000", "00000000-0000-0000-0000-00000000000é", "FFFFFFFF-ffff-FfFf-0000-000000000000",
        // Foundation scans with sscanf, which skips blanks before each pair of digits: left to it, still accepted.
        " 0000000-0000-0000-0000-000000000000",
    ])
    func readsWhatFoundationReads(text: String) {
        #expect(UUID(paymentIDText: text) == UUID(uuidString: text))
    }
}
