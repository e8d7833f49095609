import ApplePay
import Crypto
import Foundation
import FuzzTargets
import PaymentStages
import PayPipeDevTools

/// Writes framed seed inputs (selector byte + payload) into one directory; see main.swift for what it writes.
struct SeedCorpus {
    let outputDirectory: String
    private(set) var written = 0

    mutating func seed(_ surface: FuzzSurface, _ name: String, _ payload: some Sequence<UInt8>) {
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" })
        let path = "\(outputDirectory)/\(surface)-\(safe)"
        if FileManager.default.createFile(atPath: path, contents: Data(surface.framed(payload))) { written += 1 }
    }

    /// A job body per the contract (docs/job-contract.md) around `token` (a JSON object or string).
    static func jobBody(_ token: Any, jobId: String) throws -> [UInt8] {
        let job: [String: Any] = [
            "jobId": jobId, "merchantId": "fuzz-merchant", "orderReference": "order-\(jobId)",
            "amount": ["value": 100, "currency": "USD"], "applePayToken": token,
            "notifyUrl": "https://shop.example/hooks", "metadata": ["seed": "fixture"],
            "billingContact": ["givenName": "Ada", "addressLines": ["1 Main St", "Flat 2"]],
        ]
        return Array(try JSONSerialization.data(withJSONObject: job, options: [.sortedKeys]))
    }

    mutating func tokenSeeds(_ bytes: [UInt8], name: String) throws {
        guard let token = try? ApplePayToken.parse(bytes) else { return }
        seed(.token, name, bytes)
        seed(.json, name, bytes)
        seed(.job, name, try Self.jobBody(try JSONSerialization.jsonObject(with: Data(bytes)), jobId: "seed-\(written)"))
        seed(.cms, name, token.signature)
        seed(.der, "\(name)-signature", token.signature)
        seed(.base64, "\(name)-signature", Array(Data(token.signature).base64EncodedString().utf8))
        seed(.base64, "\(name)-data", Array(Data(token.encryptedData).base64EncodedString().utf8))
        if let key = token.ephemeralPublicKey ?? token.wrappedKey {
            seed(.base64, "\(name)-key", Array(Data(key).base64EncodedString().utf8))
            seed(.der, "\(name)-key", key)
        }
    }

    mutating func certificateSeeds(_ certificates: [Certificate], name: String) {
        for (index, certificate) in certificates.enumerated() {
            seed(.x509, "\(name)-\(index)", certificate.derBytes)
            seed(.der, "\(name)-cert-\(index)", certificate.derBytes)
        }
    }

    /// Objects with an `applicationPrimaryAccountNumber` anywhere in an expected.json: decrypted payloads.
    static func payloadObjects(_ value: Any) -> [[String: Any]] {
        switch value {
        case let object as [String: Any]:
            if object["applicationPrimaryAccountNumber"] != nil { return [object] }
            return object.values.flatMap(Self.payloadObjects)
        case let array as [Any]:
            return array.flatMap(Self.payloadObjects)
        default:
            return []
        }
    }

    /// Seeds from every token, PEM certificate and expected.json under `fixtures`, plus minted payloads and the
    /// SampleJobFactory mix minted with the sandbox PKI in `sandboxDirectory`.
    mutating func writeAll(fixtures: String, sandboxDirectory: String) throws {
        // Fixtures.
    let enumerator = FileManager.default.enumerator(atPath: fixtures)
    while let relative = enumerator?.nextObject() as? String {
        let path = "\(fixtures)/\(relative)"
        guard let data = FileManager.default.contents(atPath: path) else { continue }
        let name = relative.replacingOccurrences(of: "/", with: "-")
        if relative.hasSuffix(".json") {
            try tokenSeeds(Array(data), name: name)
            if let object = try? JSONSerialization.jsonObject(with: data) {
                for (index, payload) in Self.payloadObjects(object).enumerated() {
                    let clean = payload.filter { !($0.value is NSNull) }
                    seed(.payload, "\(name)-\(index)", Array(try JSONSerialization.data(withJSONObject: clean, options: [.sortedKeys])))
                }
            }
        } else if relative.hasSuffix(".pem") || relative.hasSuffix(".crt") {
            certificateSeeds((try? Certificate.certificates(pem: String(decoding: data, as: UTF8.self))) ?? [], name: name)
        }
    }

    // Minted payloads.
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let payloads: [(String, DecryptedPaymentData)] = [
        ("3ds", DecryptedPaymentData(
            applicationPrimaryAccountNumber: "4111111111111111", applicationExpirationDate: "291231", currencyCode: "826",
            transactionAmount: 1099, deviceManufacturerIdentifier: "040010030273", paymentDataType: "3DSecure",
            paymentData: .init(onlinePaymentCryptogram: "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", eciIndicator: "7"))),
        ("emv", DecryptedPaymentData(
            applicationPrimaryAccountNumber: "5353756319181169", applicationExpirationDate: "240930", currencyCode: "840",
            transactionAmount: 100, cardholderName: "Ada", deviceManufacturerIdentifier: "050110030273", paymentDataType: "EMV",
            paymentData: .init(emvData: "q83v", encryptedPINData: "00ff"),
            authenticationResponses: [.init(merchantIdentifier: "merchant.example", authenticationData: "AA==", transactionAmount: 100)],
            merchantTokenIdentifier: "DNITHE000000000000000000",
            merchantTokenMetadata: .init(cardArt: [.init(url: "https://example/a.png", width: 1, height: 1)],
                                         cardMetadata: .init(expirationDate: "2912", fpanSuffix: "1234")))),
    ]
    for (name, payload) in payloads {
        seed(.payload, "minted-\(name)", Array(try encoder.encode(payload)))
    }

    // Sample jobs minted with the sandbox PKI (SampleJobFactory: the `paypipe job publish --sample` mix).
    let environment = try SandboxEnvironment.open(directory: sandboxDirectory)
    for sample in try SampleJobFactory(environment: environment).makeJobs(count: 20, prefix: "fuzz-seed") {
        seed(.job, "sample-\(sample.kind.rawValue)-\(sample.jobId)", sample.body)
        if let object = try? JSONSerialization.jsonObject(with: Data(sample.body)) as? [String: Any],
            let token = object["applePayToken"], JSONSerialization.isValidJSONObject(token)
        {
            let bytes = Array(try JSONSerialization.data(withJSONObject: token, options: [.sortedKeys]))
            try tokenSeeds(bytes, name: "sample-\(sample.kind.rawValue)")
        }
    }
    certificateSeeds(
        [environment.pki.root, environment.pki.intermediate, environment.pki.ecLeaf, environment.pki.rsaLeaf].map(\.certificate)
            + [environment.ecMerchant, environment.rsaMerchant].map(\.identity.certificate),
        name: "sandbox")
    }
}
