import Crypto
import Foundation

/// Builds the detached CMS SignedData of a sandbox token with the DER writer and EVP signing, mirroring what Apple
/// produces (contentType, signingTime and messageDigest signed attributes; SHA-256; signer by issuer and serial).
enum SandboxSignature {
    static func make(
        signedBytes: [UInt8], signer: SandboxCertifiedKey, certificates: [Certificate], signingTime: Date?,
        declaredAlgorithm: ASN1ObjectIdentifier?, corrupt: Bool
    ) throws -> [UInt8] {
        func attribute(_ type: ASN1ObjectIdentifier, _ value: [UInt8]) -> [UInt8] {
            DERWriter.sequence([DERWriter.objectIdentifier(type), DERWriter.setOf([value])])
        }
        var attributes = [
            attribute(.contentType, DERWriter.objectIdentifier(.pkcs7Data)),
            attribute(.messageDigest, DERWriter.octetString(SHA256.hash(signedBytes))),
        ]
        if let signingTime { attributes.append(attribute(.signingTime, ASN1Time(signingTime).derEncoded)) }
        var signedAttributes = DERWriter.setOf(attributes)
        let algorithm = SignatureAlgorithm.for(signer.privateKey.type)
        var signature = try signer.privateKey.sign(message: signedAttributes, algorithm: algorithm)
        if corrupt { signature[signature.count / 2] ^= 0x01 }
        signedAttributes[0] = ASN1Tag.contextConstructed(0)  // [0] IMPLICIT in SignerInfo
        let signatureOID = declaredAlgorithm ?? algorithm.objectIdentifier
        let signerInfo = DERWriter.sequence([
            DERWriter.integer(1),
            DERWriter.sequence([
                signer.certificate.issuerNameDER,
                DERWriter.element(tag: ASN1Tag.integer, content: signer.certificate.serialNumberBytes),
            ]),
            DERWriter.algorithmIdentifier(.sha256, nullParameters: true),
            signedAttributes,
            DERWriter.algorithmIdentifier(signatureOID, nullParameters: signatureOID != .ecdsaWithSHA256),
            DERWriter.octetString(signature),
        ])
        let signedData = DERWriter.sequence([
            DERWriter.integer(1),
            DERWriter.setOf([DERWriter.algorithmIdentifier(.sha256, nullParameters: true)]),
            DERWriter.sequence([DERWriter.objectIdentifier(.pkcs7Data)]),
            DERWriter.contextConstructed(0, certificates.map(\.derBytes)),
            DERWriter.setOf([signerInfo]),
        ])
        return DERWriter.sequence([DERWriter.objectIdentifier(.pkcs7SignedData), DERWriter.contextConstructed(0, [signedData])])
    }
}
