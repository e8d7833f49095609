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
        var contentInfo = try Children(DERReader.parse(bytes), ASN1Tag.sequence, "ContentInfo")
        guard let contentType = try contentInfo.next(), let content = try contentInfo.next(), try contentInfo.atEnd(),
            contentType.isObjectIdentifier(.pkcs7SignedData)
        else {
            throw ApplePayError.signatureInvalid("CMS content type is not signedData")
        }
        var explicit = try Children(content, ASN1Tag.contextConstructed(0), "content")
        guard let signedData = try explicit.next(), try explicit.atEnd() else {
            throw ApplePayError.signatureInvalid("malformed CMS content")
        }
        // fields: version, digestAlgorithms, encapContentInfo, [0] certificates?, [1] crls?, signerInfos
        var fields = try Children(signedData, ASN1Tag.sequence, "SignedData")
        var fieldCount = 0
        var encapsulatedField: ASN1Element?
        var certificatesField: ASN1Element?
        var lastField: ASN1Element?
        while let field = try fields.next() {
            if fieldCount == 2 { encapsulatedField = field }
            if certificatesField == nil, field.tag == ASN1Tag.contextConstructed(0) { certificatesField = field }
            lastField = field
            fieldCount += 1
        }
        guard fieldCount >= 4, let encapsulatedField, let lastField else {
            throw ApplePayError.signatureInvalid("SignedData too short")
        }
        var encapsulated = try Children(encapsulatedField, ASN1Tag.sequence, "encapContentInfo")
        guard let encapsulatedType = try encapsulated.next(), try encapsulated.atEnd(),
            encapsulatedType.isObjectIdentifier(.pkcs7Data)
        else {
            throw ApplePayError.signatureInvalid("CMS signature must be detached over id-data")
        }
        guard let certificatesField else {
            throw ApplePayError.certificateInvalid("CMS carries no certificates")
        }
        var certificates: [ArraySlice<UInt8>] = []
        certificates.reserveCapacity(4)
        var certificateSet = try Children(certificatesField, certificatesField.tag, "certificates")
        while let certificate = try certificateSet.next() {
            if certificate.tag == ASN1Tag.sequence { certificates.append(certificate.encoded) }
        }
        var signerInfos = try Children(lastField, ASN1Tag.set, "signerInfos")
        guard let signerInfo = try signerInfos.next(), try signerInfos.atEnd() else {
            throw ApplePayError.signatureInvalid("CMS must have exactly one signer")
        }
        return CMSSignedData(
            certificatesEncoding: certificatesField.encoded, certificates: certificates,
            signer: try parseSignerInfo(signerInfo))
    }

    private static func parseSignerInfo(_ element: ASN1Element) throws -> SignerInfo {
        var fields = try Children(element, ASN1Tag.sequence, "SignerInfo")
        guard let version = try fields.next(), let sidField = try fields.next(), let digestField = try fields.next(),
            let attributesField = try fields.next(), let algorithmField = try fields.next(),
            let signatureField = try fields.next(), try version.smallInteger() == 1
        else {
            throw ApplePayError.signatureInvalid("SignerInfo must be version 1 with issuerAndSerialNumber")
        }
        try fields.skipRest()  // unsignedAttrs, still checked for well-formedness
        var sid = try Children(sidField, ASN1Tag.sequence, "sid")
        guard let issuerField = try sid.next(), let serialField = try sid.next(), try sid.atEnd() else {
            throw ApplePayError.signatureInvalid("malformed SignerInfo sid")
        }
        let digestAlgorithm = try algorithm(digestField)
        let attributes = try attributesField.expecting(tag: ASN1Tag.contextConstructed(0), "signedAttrs")
        guard !attributes.isIndefiniteLength else { throw ApplePayError.signatureInvalid("signed attributes must be DER") }
        var retagged = Array(attributes.encoded)
        retagged[0] = ASN1Tag.set
        var messageDigest: ArraySlice<UInt8>?
        var signingTime: ASN1Time?
        var contentType: ASN1ObjectIdentifier?
        // Attribute types seen so far, as OID content octets: a handful of attributes, so a scan beats hashing.
        var seen: [ArraySlice<UInt8>] = []
        seen.reserveCapacity(6)
        var attributeSet = try Children(attributes, attributes.tag, "signedAttrs")
        while let attribute = try attributeSet.next() {
            var parts = try Children(attribute, ASN1Tag.sequence, "Attribute")
            guard let typeField = try parts.next(), let valuesField = try parts.next(), try parts.atEnd() else {
                throw ApplePayError.signatureInvalid("malformed signed attribute")
            }
            let type = try typeField.objectIdentifierContent()
            guard !seen.contains(where: { $0.elementsEqual(type) }) else {
                throw ApplePayError.signatureInvalid("duplicate signed attribute \(try typeField.objectIdentifier())")
            }
            seen.append(type)
            var values = try Children(valuesField, ASN1Tag.set, "attribute values")
            if typeField.isObjectIdentifier(.messageDigest) {
                guard let value = try values.next(), try values.atEnd() else {
                    throw ApplePayError.signatureInvalid("messageDigest must have one value")
                }
                messageDigest = try value.octetString()
            } else if typeField.isObjectIdentifier(.signingTime) {
                guard let value = try values.next(), try values.atEnd() else {
                    throw ApplePayError.signatureInvalid("signingTime must have one value")
                }
                signingTime = try value.time()
            } else if typeField.isObjectIdentifier(.contentType) {
                guard let value = try values.next(), try values.atEnd() else {
                    throw ApplePayError.signatureInvalid("contentType must have one value")
                }
                contentType = try value.objectIdentifier()
            } else {
                try values.skipRest()
            }
        }
        return SignerInfo(
            issuerNameDER: try issuerField.expecting(tag: ASN1Tag.sequence, "issuer").encoded,
            serialNumber: try serialField.expecting(tag: ASN1Tag.integer, "serialNumber").content,
            digestAlgorithm: digestAlgorithm, signatureAlgorithm: try algorithm(algorithmField),
            signedAttributesForSignature: retagged, signature: try signatureField.octetString(),
            messageDigest: messageDigest, signingTime: signingTime, contentType: contentType)
    }

    private static func algorithm(_ element: ASN1Element) throws -> ASN1ObjectIdentifier {
        var parts = try Children(element, ASN1Tag.sequence, "AlgorithmIdentifier")
        guard let first = try parts.next() else { throw ApplePayError.signatureInvalid("empty AlgorithmIdentifier") }
        try parts.skipRest()  // parameters, still checked for well-formedness
        return try first.objectIdentifier()
    }

    /// The children of a constructed element, read one at a time: the same checks as `ASN1Element.children()`
    /// without collecting them in an array (about twenty arrays per token otherwise).
    private struct Children {
        private var reader: DERReader

        init(_ element: ASN1Element, _ tag: UInt8, _ what: String) throws {
            try element.expecting(tag: tag, what)
            guard element.isConstructed else { throw CryptoError.decodingFailed("primitive ASN.1 element has no children") }
            reader = DERReader(element.content)
        }

        /// The next child, nil after the last.
        mutating func next() throws -> ASN1Element? {
            reader.isAtEnd ? nil : try reader.read()
        }

        /// Whether every child has been read. `throws` only so that it reads naturally in `guard … try` chains.
        func atEnd() throws -> Bool { reader.isAtEnd }

        /// Reads (and so validates) the remaining children.
        mutating func skipRest() throws {
            while try next() != nil {}
        }
    }
}
