import Foundation
import Testing
@testable import PaymentStages

/// The tenant boundary's rule (``PublisherRule``) and the document field it reads (``MerchantPublishers``).
@Suite struct PublisherRuleTests {
    @Test func aMerchantWithoutPublishersAcceptsAnyPublisher() {
        #expect(PublisherRule.refusal(merchantId: "m", publishers: nil, publisher: nil) == nil)
        #expect(PublisherRule.refusal(merchantId: "m", publishers: nil, publisher: "anyone") == nil)
    }

    @Test func aListedPublisherIsAccepted() {
        #expect(PublisherRule.refusal(merchantId: "m", publishers: ["backend-a", "backend-a2"], publisher: "backend-a2") == nil)
    }

    @Test("an unlisted or absent user_id is dead-lettered publisher_not_allowed", arguments: [nil, "backend-b", "", "BACKEND-A", "backend-a "])
    func anUnlistedPublisherIsRefused(publisher: String?) throws {
        let refusal = try #require(PublisherRule.refusal(merchantId: "m", publishers: ["backend-a"], publisher: publisher))
        guard case .unattributable(let code, let reason) = refusal else { Issue.record("\(refusal)"); return }
        #expect(code == "publisher_not_allowed")
        #expect(reason.contains("merchant m"))
    }

    @Test func publishersAreValidatedWhenApplied() {
        #expect(MerchantPublishers.problem(["backend-a"]) == nil)
        #expect(MerchantPublishers.problem(["backend-a", "backend-b"]) == nil)
        #expect(MerchantPublishers.problem([])?.contains("at least one") == true)
        #expect(MerchantPublishers.problem(["a", ""])?.contains("publishers[1]") == true)
        #expect(MerchantPublishers.problem([" a"])?.contains("publishers[0]") == true)
        #expect(MerchantPublishers.problem(["a", "b", "a"])?.contains("publishers[2] \"a\" is listed twice") == true)
    }

    @Test("a publishers value that is not an array of strings is refused naming the field", arguments: ["42", "\"backend-a\"", "[1]", "{}", "[null]"])
    func publishersOfAnotherTypeAreRefused(value: String) {
        let document = #"{"id": "m", "identities": [], "publishers": \#(value)}"#
        do {
            _ = try JSONDecoder().decode(MerchantDocument.self, from: Data(document.utf8))
            Issue.record("accepted publishers \(value)")
        } catch {
            #expect("\(error)".contains("publishers must be an array of broker user names"), "\(error)")
        }
    }

    @Test func publishersAreOptionalAndRoundTrip() throws {
        let absent = try JSONDecoder().decode(MerchantDocument.self, from: Data(#"{"id": "m", "identities": []}"#.utf8))
        #expect(absent.publishers == nil)
        let listed = try JSONDecoder().decode(MerchantDocument.self, from: Data(#"{"id": "m", "identities": [], "publishers": ["a", "b"]}"#.utf8))
        #expect(listed.publishers?.names == ["a", "b"])
        let config = MerchantConfig(identities: [], gateway: nil, webhook: nil, publishers: ["a"])
        let decoded = try JSONDecoder().decode(MerchantConfig.self, from: try JSONEncoder().encode(config))
        #expect(decoded.publishers == ["a"])
        #expect(try JSONDecoder().decode(MerchantConfig.self, from: Data(#"{"identities": []}"#.utf8)).publishers == nil)
    }
}
