import Foundation
import Testing
@testable import PaymentDomain

/// `captureMode` / `captureWithin`: the merchant's policy, a job's override, the ISO 8601 durations accepted. Pure.
@Suite struct CapturePolicyTests {
    @Test(arguments: [("P7D", 604_800.0), ("PT36H", 129_600), ("P1DT2H3M4S", 93_784), ("PT90M", 5400), ("PT45S", 45), ("P2W", 1_209_600),
                      ("P0DT1H", 3600)])
    func acceptedDurations(text: String, seconds: Double) {
        #expect(CapturePolicy.duration(text) == seconds)
    }

    @Test(arguments: ["", "P", "PT", "7D", "P1Y", "P1M", "PT1.5H", "P1DT", "PT5M3H", "P1D1D", "P1W2D", "PT-1H", "P1H", "pt1h", "P1234567D", "P1D T1H", "PT1H2"])
    func refusedDurations(text: String) {
        #expect(CapturePolicy.duration(text) == nil, "\(text)")
    }

    @Test func aJobOverridesTheMerchantsPolicy() throws {
        let merchant = try CapturePolicy.automatic.overridden(mode: "manual", captureWithin: "P7D")
        #expect(merchant == CapturePolicy(mode: .manual, captureWithin: 604_800))
        // Absent fields keep the merchant's; another mode drops its captureWithin; a new captureWithin replaces it.
        #expect(try merchant.overridden(mode: nil, captureWithin: nil) == merchant)
        #expect(try merchant.overridden(mode: "manual", captureWithin: nil) == merchant)
        #expect(try merchant.overridden(mode: "automatic", captureWithin: nil) == .automatic)
        #expect(try merchant.overridden(mode: nil, captureWithin: "PT12H").captureWithin == 43_200)
        #expect(try CapturePolicy.automatic.overridden(mode: "manual", captureWithin: nil) == CapturePolicy(mode: .manual, captureWithin: nil))
        let authorizedAt = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(merchant.captureDeadline(authorizedAt: authorizedAt) == authorizedAt.addingTimeInterval(604_800))
        #expect(CapturePolicy.automatic.captureDeadline(authorizedAt: authorizedAt) == nil)
        #expect(CapturePolicy(mode: .automatic, captureWithin: 60).captureWithin == nil)
    }

    @Test func invalidPoliciesNameTheField() {
        #expect(throws: CapturePolicy.Invalid.self) { try CapturePolicy.automatic.overridden(mode: "later", captureWithin: nil) }
        #expect(throws: CapturePolicy.Invalid(reason: "captureWithin needs captureMode \"manual\"")) {
            try CapturePolicy.automatic.overridden(mode: nil, captureWithin: "P1D")
        }
        for bad in ["P32D", "PT0S", "P1Y"] {
            #expect(throws: CapturePolicy.Invalid.self, "\(bad)") { try CapturePolicy.automatic.overridden(mode: "manual", captureWithin: bad) }
        }
        #expect(throws: Never.self) { try CapturePolicy.automatic.overridden(mode: "manual", captureWithin: "P31D") }
    }
}
