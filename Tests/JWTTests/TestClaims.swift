import JWT

/// Shared fixtures: the Trust Payments reference claims (trustpayments.md §2) and a ~600-byte variant.
enum TestClaims {
    static let trustPaymentsSecret = Array("example-secret-not-real".utf8)

    static let trustPaymentsClaims: JSONValue = [
        "iss": "jwt.example.user",
        "iat": 1_735_689_600,
        "payload": [
            "accounttypedescription": "ECOM",
            "sitereference": "test_site00000",
            "currencyiso3a": "GBP",
            "baseamount": "1050",
            "requesttypedescriptions": ["THREEDQUERY", "AUTH"],
            "orderreference": "ORDER-0001",
        ],
    ]

    static let trustPaymentsToken =
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJqd3QuZXhhbXBsZS51c2VyIiwiaWF0IjoxNzM1Njg5NjAwLCJwYXlsb2FkIjp7ImFjY291bnR0eXBlZGVzY3JpcHRpb24iOiJFQ09NIiwic2l0ZXJlZmVyZW5jZSI6InRlc3Rfc2l0ZTAwMDAwIiwiY3VycmVuY3lpc28zYSI6IkdCUCIsImJhc2VhbW91bnQiOiIxMDUwIiwicmVxdWVzdHR5cGVkZXNjcmlwdGlvbnMiOlsiVEhSRUVEUVVFUlkiLCJBVVRIIl0sIm9yZGVycmVmZXJlbmNlIjoiT1JERVItMDAwMSJ9fQ.Dwe48X8SKDR17EqgRktBcmb61YqrqGCvu0fxBe9a87w"
}
