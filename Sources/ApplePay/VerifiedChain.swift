import Crypto

/// The time-independent outcome of validating one token certificate set, as cached by `ChainCache`.
///
/// Validity periods are not part of the cached verdict: OpenSSL checks the path with time checks disabled and the
/// intersection of the periods is kept instead, so each token's own signing time is checked against it.
struct VerifiedChain: Sendable {
    let leafKey: PublicKey
    /// Latest notBefore of leaf, intermediate and root.
    let validFrom: ASN1Time
    /// Earliest notAfter of leaf, intermediate and root.
    let validUntil: ASN1Time

    /// Validates the CMS certificates against `trustRoot` (applepay-token.md §2.1–2.2).
    static func evaluate(_ cms: CMSSignedData, trustRoot: TrustRoot) throws(ApplePayError) -> VerifiedChain {
        var certificates: [Certificate] = []
        for der in cms.certificates {
            guard let certificate = try? Certificate(der: der) else {
                throw .certificateInvalid("token carries an unparsable certificate")
            }
            certificates.append(certificate)
        }
        guard
            let leaf = certificates.first(where: {
                $0.issuerNameDER.elementsEqual(cms.signer.issuerNameDER) && $0.serialNumberBytes.elementsEqual(cms.signer.serialNumber)
            })
        else { throw .certificateInvalid("the signer's certificate is not in the token") }
        guard leaf.hasExtension(ApplePayOID.leafMarker) else {
            throw .certificateInvalid("leaf certificate lacks Apple Pay marker OID 1.2.840.113635.100.6.29")
        }
        guard let intermediate = certificates.first(where: { $0 !== leaf && $0.subjectNameDER == leaf.issuerNameDER }) else {
            throw .certificateInvalid("the leaf's issuing intermediate is not in the token")
        }
        guard intermediate.hasExtension(ApplePayOID.intermediateMarker) else {
            throw .certificateInvalid("intermediate certificate lacks Apple marker OID 1.2.840.113635.100.6.2.14")
        }
        let root = trustRoot.certificate
        let chain: [Certificate]
        do {
            chain = try CertificateChainVerifier.verify(leaf: leaf, intermediates: [intermediate], trustAnchors: [root], at: nil)
        } catch {
            throw .certificateInvalid("certificate chain does not lead to the trust root (\(error))")
        }
        guard chain.count == 3, chain[1] === intermediate, chain[2] === root else {
            throw .certificateInvalid("certificate chain is not leaf → intermediate → root")
        }
        return VerifiedChain(
            leafKey: leaf.publicKey, validFrom: chain.map(\.notBefore).max()!, validUntil: chain.map(\.notAfter).min()!)
    }
}
