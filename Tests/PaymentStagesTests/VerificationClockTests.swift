import ApplePay
import ApplePaySandbox
import Foundation
import PaymentStages
import Pipeline
import Testing

/// The clock a token's signing time is judged against: the publish timestamp within its bounds, else first receipt.
@Suite struct VerificationClockTests {
    let firstReceipt = Date(timeIntervalSince1970: 1_767_225_600)
    let clock = VerificationClock(maxQueueAge: 86_400, maxFutureSkew: 60)

    @Test func aTimestampInsideTheBoundsIsTheClock() {
        for offset: TimeInterval in [-86_400, -360, 0, 60] {
            let published = firstReceipt.addingTimeInterval(offset)
            #expect(clock.instant(publishedAt: published, firstReceivedAt: firstReceipt) == (published, .publishTimestamp), "\(offset)")
        }
    }

    @Test func withoutOrOutsideTheBoundsFirstReceiptIsTheClock() {
        #expect(clock.instant(publishedAt: nil, firstReceivedAt: firstReceipt) == (firstReceipt, .firstReceipt))
        for offset: TimeInterval in [-86_401, -30 * 86_400, 61, 3600] {
            #expect(clock.instant(publishedAt: firstReceipt.addingTimeInterval(offset), firstReceivedAt: firstReceipt)
                == (firstReceipt, .firstReceiptTimestampIgnored), "\(offset)")
        }
        #expect(clock.instant(publishedAt: Date(timeIntervalSince1970: 0), firstReceivedAt: firstReceipt).basis == .firstReceiptTimestampIgnored)
    }

    /// A 6-minute backlog with the clock injected: the device signed at T, the backend published at T + 2 s, decrypt
    /// first received the job at T + 6 min. Judged at first receipt the token is stale; judged at the
    /// publish time it passes.
    @Test func aSixMinuteBacklogPassesByThePublishTime() throws {
        let pki = try SandboxPKI.generate()
        let decryptor = ApplePayDecryptor(configuration: ApplePayVerifierConfiguration(trustRoot: pki.trustRoot))
        let signedAt = Date().addingTimeInterval(-3600).rounded
        var request = SandboxMintRequest(merchantIdentifier: "merchant.com.paypipe.test", amount: 100, currencyNumeric: "978")
        request.signingTime = signedAt
        let token = try ApplePayToken.parse(try pki.mintToken(request))
        let receivedAt = signedAt.addingTimeInterval(360)
        let backlog = clock.instant(publishedAt: signedAt.addingTimeInterval(2), firstReceivedAt: receivedAt)
        #expect(backlog.basis == .publishTimestamp)
        #expect(try decryptor.verify(token, now: backlog.instant) == signedAt)
        let untimed = clock.instant(publishedAt: nil, firstReceivedAt: receivedAt)
        #expect(throws: ApplePayError.self) { try decryptor.verify(token, now: untimed.instant) }
    }
}

private extension Date {
    /// Whole seconds, as the CMS signing time and the AMQP timestamp carry it.
    var rounded: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down)) }
}
