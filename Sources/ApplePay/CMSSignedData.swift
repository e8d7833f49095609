import Crypto

/// The parts of a detached CMS SignedData (RFC 5652) that Apple Pay verification needs, parsed with the DER reader.
///
/// Parsed by hand rather than with OpenSSL's CMS API so that every check of applepay-token.md §2 is explicit
/// (exactly one signer, SHA-256, signer algorithm bound to the leaf key type, re-tagged signed attributes) and so
/// that a token costs no certificate parsing when its certificates are already known.
struct CMSSignedData: Sendable {
    /// The encoding of the `certificates` field: cache key material for the chain result.
    let certificatesEncoding: ArraySlice<UInt8>
    /// Each certificate's DER, in order of appearance.
    let certificates: [ArraySlice<UInt8>]
    let signer: SignerInfo

    struct SignerInfo: Sendable {
        /// `sid` IssuerAndSerialNumber: the issuer Name DER and the serial INTEGER contents.
        let issuerNameDER: ArraySlice<UInt8>
        let serialNumber: ArraySlice<UInt8>
        let digestAlgorithm: ASN1ObjectIdentifier
        let signatureAlgorithm: ASN1ObjectIdentifier
        /// The DER of the signed attributes with the [0] IMPLICIT tag replaced by SET (0x31): what the signature covers.
        let signedAttributesForSignature: [UInt8]
        let signature: ArraySlice<UInt8>
        let messageDigest: ArraySlice<UInt8>?
        let signingTime: ASN1Time?
        let contentType: ASN1ObjectIdentifier?
    }

    static func parse(_ bytes: [UInt8]) throws(ApplePayError) -> CMSSignedData {
        do {
            return try parseOrThrow(bytes)
        } catch let error as ApplePayError {
            throw error
        } catch {
            throw .signatureInvalid("signature is not a valid CMS SignedData (\(error))")
        }
    }

    private static func parseOrThrow(_ bytes: [UInt8]) throws -> CMSSignedData {
        let contentInfo = try DERReader.parse(bytes).expecting(tag: ASN1Tag.sequence, "ContentInfo").children()
        guard contentInfo.count == 2, try contentInfo[0].objectIdentifier() == .pkcs7SignedData else {
            throw ApplePayError.signatureInvalid("CMS content type is not signedData")
        }
        let explicit = try contentInfo[1].expecting(tag: ASN1Tag.contextConstructed(0), "content").children()
        guard explicit.count == 1 else { throw ApplePayError.signatureInvalid("malformed CMS content") }
        let fields = try explicit[0].expecting(tag: ASN1Tag.sequence, "SignedData").children()
        guard fields.count >= 4 else { throw ApplePayError.signatureInvalid("SignedData too short") }
        // fields: version, digestAlgorithms, encapContentInfo, [0] certificates?, [1] crls?, signerInfos
        let encapsulated = try fields[2].expecting(tag: ASN1Tag.sequence, "encapContentInfo").children()
        guard encapsulated.count == 1, try encapsulated[0].objectIdentifier() == .pkcs7Data else {
            throw ApplePayError.signatureInvalid("CMS signature must be detached over id-data")
        }
        guard let certificatesField = fields.first(where: { $0.tag == ASN1Tag.contextConstructed(0) }) else {
            throw ApplePayError.certificateInvalid("CMS carries no certificates")
        }
        let certificates = try certificatesField.children().filter { $0.tag == ASN1Tag.sequence }.map(\.encoded)
        let signerInfos = try fields[fields.count - 1].expecting(tag: ASN1Tag.set, "signerInfos").children()
        guard signerInfos.count == 1 else { throw ApplePayError.signatureInvalid("CMS must have exactly one signer") }
        return CMSSignedData(
            certificatesEncoding: certificatesField.encoded, certificates: certificates,
            signer: try parseSignerInfo(signerInfos[0]))
    }

    private static func parseSignerInfo(_ element: ASN1Element) throws -> SignerInfo {
        let fields = try element.expecting(tag: ASN1Tag.sequence, "SignerInfo").children()
        guard fields.count >= 6, try fields[0].smallInteger() == 1 else {
            throw ApplePayError.signatureInvalid("SignerInfo must be version 1 with issuerAndSerialNumber")
        }
        let sid = try fields[1].expecting(tag: ASN1Tag.sequence, "sid").children()
        guard sid.count == 2 else { throw ApplePayError.signatureInvalid("malformed SignerInfo sid") }
        let digestAlgorithm = try algorithm(fields[2])
        let attributes = try fields[3].expecting(tag: ASN1Tag.contextConstructed(0), "signedAttrs")
        guard !attributes.isIndefiniteLength else { throw ApplePayError.signatureInvalid("signed attributes must be DER") }
        var retagged = Array(attributes.encoded)
        retagged[0] = ASN1Tag.set
        var messageDigest: ArraySlice<UInt8>?
        var signingTime: ASN1Time?
        var contentType: ASN1ObjectIdentifier?
        var seen: [ASN1ObjectIdentifier] = []  // a handful of attributes: a scan beats hashing each OID
        for attribute in try attributes.children() {
            let parts = try attribute.expecting(tag: ASN1Tag.sequence, "Attribute").children()
            guard parts.count == 2 else { throw ApplePayError.signatureInvalid("malformed signed attribute") }
            let type = try parts[0].objectIdentifier()
            guard !seen.contains(type) else { throw ApplePayError.signatureInvalid("duplicate signed attribute \(type)") }
            seen.append(type)
            let values = try parts[1].expecting(tag: ASN1Tag.set, "attribute values").children()
            switch type {
            case .messageDigest:
                guard values.count == 1 else { throw ApplePayError.signatureInvalid("messageDigest must have one value") }
                messageDigest = try values[0].octetString()
            case .signingTime:
                guard values.count == 1 else { throw ApplePayError.signatureInvalid("signingTime must have one value") }
                signingTime = try values[0].time()
            case .contentType:
                guard values.count == 1 else { throw ApplePayError.signatureInvalid("contentType must have one value") }
                contentType = try values[0].objectIdentifier()
            default:
                continue
            }
        }
        return SignerInfo(
            issuerNameDER: try sid[0].expecting(tag: ASN1Tag.sequence, "issuer").encoded,
            serialNumber: try sid[1].expecting(tag: ASN1Tag.integer, "serialNumber").content,
            digestAlgorithm: digestAlgorithm, signatureAlgorithm: try algorithm(fields[4]),
            signedAttributesForSignature: retagged, signature: try fields[5].octetString(),
            messageDigest: messageDigest, signingTime: signingTime, contentType: contentType)
    }

    private static func algorithm(_ element: ASN1Element) throws -> ASN1ObjectIdentifier {
        let parts = try element.expecting(tag: ASN1Tag.sequence, "AlgorithmIdentifier").children()
        guard let first = parts.first else { throw ApplePayError.signatureInvalid("empty AlgorithmIdentifier") }
        return try first.objectIdentifier()
    }
}
