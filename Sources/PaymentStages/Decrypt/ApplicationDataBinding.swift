import Crypto

/// Apple's step 6: the token header's `applicationData` is the SHA-256 of the bytes the app set in
/// `PKPaymentRequest.applicationData`; the job carries those bytes (`applicationData`, base64), so a token minted for
/// one order cannot be submitted with another order's job. A pure decision.
public enum ApplicationDataBinding {
    /// The merchant document's `applicationDataCheck`.
    public enum Check: String, Codable, Sendable, Equatable, CaseIterable {
        /// Default: both sides must agree, including on absence.
        case strict
        /// Migration aid: a token header with `applicationData` is accepted from a job that does not send it yet.
        case whenPresent = "when-present"
    }

    /// Why the two sides disagree (the `application_data_mismatch` reason), or nil when they agree.
    /// - Parameters:
    ///   - headerHash: the token header's decoded `applicationData` (32 bytes for Apple's SHA-256).
    ///   - jobBytes: the job's decoded `applicationData`.
    public static func mismatch(headerHash: [UInt8]?, jobBytes: [UInt8]?, check: Check) -> String? {
        switch (headerHash, jobBytes) {
        case (nil, nil):
            return nil
        case (.some, nil):
            return check == .whenPresent ? nil : "the token header has applicationData but the job has none"
        case (nil, .some):
            return "the job has applicationData but the token header has none"
        case (let header?, let job?):
            return SHA256.hash(job) == header ? nil : "SHA-256 of the job's applicationData differs from the token header's"
        }
    }
}
