import ApplePay
import ApplePaySandbox
import Foundation
import PaymentStages
import PayPipeDevTools

/// Tokens and job bodies for the sandbox merchant, shared by the in-process harness (``DecryptHarness``) and the
/// process-level suites (``PipelineProcesses``), which open the same sandbox directory the workers use.
extension SandboxEnvironment {
    /// A minted EC_v1 token for the sandbox merchant, optionally with defects (see ``TokenDefect``).
    func mintJobToken(amount: Int64 = 1099, currencyNumeric: String = "826", pan: String = "4111111111111111",
                      cryptogram: String = "AOOkA5VbH8mMAAKhnQNnAoABFA==",
                      _ customize: (inout SandboxMintRequest) -> Void = { _ in }) throws -> [UInt8] {
        var request = SandboxMintRequest(merchantIdentifier: ecMerchant.merchantIdentifier, amount: amount,
                                         currencyNumeric: currencyNumeric, pan: pan, cryptogram: cryptogram)
        request.merchant = ecMerchant
        customize(&request)
        return try pki.mintToken(request)
    }

    /// A job body per docs/job-contract.md (sorted keys), with `extra` top-level fields merged in.
    static func jobBody(_ jobId: String, token: [UInt8], amount: Int64 = 1099, currency: String = "GBP",
                        merchantId: String = SandboxEnvironment.merchantId, extra: [String: Any] = [:]) throws -> [UInt8] {
        let object: [String: Any] = [
            "jobId": jobId, "merchantId": merchantId, "orderReference": "order-\(jobId)",
            "amount": ["value": amount, "currency": currency],
            "applePayToken": try JSONSerialization.jsonObject(with: Data(token)),
        ].merging(extra) { $1 }
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }
}
