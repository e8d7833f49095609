import Foundation
import PaymentDomain
import Testing

@Suite struct StoredCredentialTests {
    @Test func credentialIdsAreCredPrefixedRandomHex() {
        let a = CredentialID.generate(), b = CredentialID.generate()
        #expect(a != b && CredentialID.isValid(a) && CredentialID.isValid(b))
        for bad in ["cred_", "cred_00000000000000000000000G", "CRED_000000000000000000000000", "cred_0000000000000000000000000", "x"] {
            #expect(!CredentialID.isValid(bad))
        }
    }

    @Test func expiriesParseEveryFormAppleUses() {
        #expect(CardExpiry(applicationExpirationDate: "301231")?.description == "2030-12")
        #expect(CardExpiry(cardMetadataExpirationDate: "122030")?.description == "2030-12")
        #expect(CardExpiry(cardMetadataExpirationDate: "31122030")?.description == "2030-12")
        #expect(CardExpiry("2030-12")?.description == "2030-12")
        for bad in ["132030", "1230", "2030-13", "30-12", "abcdef"] {
            #expect(CardExpiry(bad) == nil && CardExpiry(cardMetadataExpirationDate: bad) == nil)
        }
    }

    @Test func aCardIsExpiredOnlyAfterItsLastMonth() throws {
        let expiry = try #require(CardExpiry(year: 2030, month: 12))
        let lastSecond = Date(timeIntervalSince1970: 1_924_991_999)   // 2030-12-31T23:59:59Z
        #expect(!expiry.isExpired(at: lastSecond))
        #expect(expiry.isExpired(at: lastSecond.addingTimeInterval(1)))
    }

    @Test func theTokenTypeFollowsMerchantTokenIdentifier() {
        #expect(TokenType.fromDecrypted(merchantTokenIdentifier: "DNITHE000000000000000001") == .merchant)
        #expect(TokenType.fromDecrypted(merchantTokenIdentifier: nil) == .device)
    }

    @Test func secretsNeverShowInDescriptions() {
        let secrets = CredentialSecrets(references: ["registrationId": "8a82944a4cc25ebf014cc2c782423202"],
                                        networkToken: .init(number: "5204245250001488", expiry: "2030-12"))
        for text in [String(describing: secrets), String(reflecting: secrets), "\(secrets)"] {
            #expect(!text.contains("8a82944a") && !text.contains("52042452"))
        }
    }
}
