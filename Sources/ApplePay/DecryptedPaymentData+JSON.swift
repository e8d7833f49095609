import JSON

extension DecryptedPaymentData {
    /// The value under Apple's field names, absent optionals omitted: what `decode(_:)` reads back, and the same
    /// members Foundation's synthesized `Codable` writes, so both forms decode. Used to store the data sealed;
    /// written with the JSON module because `JSONEncoder` cost more than the sealing itself.
    public var jsonValue: JSONValue {
        .object(omittingAbsent: [
            ("applicationPrimaryAccountNumber", .string(applicationPrimaryAccountNumber)),
            ("applicationExpirationDate", .string(applicationExpirationDate)),
            ("currencyCode", .string(currencyCode)),
            ("transactionAmount", .integer(transactionAmount)),
            ("cardholderName", cardholderName.map(JSONValue.string)),
            ("deviceManufacturerIdentifier", .string(deviceManufacturerIdentifier)),
            ("paymentDataType", .string(paymentDataType)),
            ("paymentData", .object(omittingAbsent: [
                ("onlinePaymentCryptogram", paymentData.onlinePaymentCryptogram.map(JSONValue.string)),
                ("eciIndicator", paymentData.eciIndicator.map(JSONValue.string)),
                ("emvData", paymentData.emvData.map(JSONValue.string)),
                ("encryptedPINData", paymentData.encryptedPINData.map(JSONValue.string)),
            ])),
            ("authenticationResponses", authenticationResponses.map { responses in
                .array(responses.map { response in
                    .object(omittingAbsent: [
                        ("merchantIdentifier", response.merchantIdentifier.map(JSONValue.string)),
                        ("authenticationData", response.authenticationData.map(JSONValue.string)),
                        ("transactionAmount", response.transactionAmount.map(JSONValue.integer)),
                    ])
                })
            }),
            ("merchantTokenIdentifier", merchantTokenIdentifier.map(JSONValue.string)),
            ("merchantTokenMetadata", merchantTokenMetadata.map { metadata in
                .object(omittingAbsent: [
                    ("cardArt", metadata.cardArt.map { arts in
                        .array(arts.map { art in
                            .object(omittingAbsent: [
                                ("url", art.url.map(JSONValue.string)),
                                ("width", art.width.map { .integer(Int64($0)) }),
                                ("height", art.height.map { .integer(Int64($0)) }),
                            ])
                        })
                    }),
                    ("cardMetadata", metadata.cardMetadata.map { card in
                        .object(omittingAbsent: [
                            ("expirationDate", card.expirationDate.map(JSONValue.string)),
                            ("fpanSuffix", card.fpanSuffix.map(JSONValue.string)),
                        ])
                    }),
                ])
            }),
        ])
    }
}
