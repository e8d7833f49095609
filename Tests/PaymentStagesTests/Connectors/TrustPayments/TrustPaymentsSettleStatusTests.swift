import PaymentDomain
import PaymentStages
import Pipeline
import Testing

/// Trust Payments' `settlestatus` values and the stored codes are one table: its answers' values are stored as received
/// (`gateway_attempts.settle_status`) and read back as stored codes, and what operations learn is stored by code and
/// sent by value. Every value, named or not, maps the same both ways, so rows stored before the domain had its own
/// words read the same.
@Suite struct TrustPaymentsSettleStatusTests {
    static let values = ["0", "1", "2", "3", "10", "100", "", "4", "42", "0 ", "00", "1000", "-1", "settled"]

    @Test func trustPaymentsValuesAreTheStoredCodes() {
        for value in Self.values {
            #expect(SettlementState(trustPayments: value) == SettlementState(storedCode: value), "\(value)")
            #expect(SettlementState(trustPayments: value).trustPaymentsValue == value, "\(value)")
            #expect(SettlementState(storedCode: value).storedCode == value, "\(value)")
        }
        for state in SettlementState.named + [.other("42"), .other("")] {
            #expect(state.trustPaymentsValue == state.storedCode, "\(state)")
            #expect(SettlementState(trustPayments: state.trustPaymentsValue) == state, "\(state)")
        }
    }

    @Test func theNamedValues() {
        let table: [(String, SettlementState)] = [("0", .pendingSettlement), ("1", .pendingManualSettlement), ("2", .suspended),
                                                  ("3", .cancelled), ("10", .settling), ("100", .settled)]
        for (value, state) in table { #expect(SettlementState(trustPayments: value) == state, "\(value)") }
        #expect(SettlementState.named == table.map(\.1))
        #expect(SettlementState(trustPayments: "42") == .other("42"))
    }
}
