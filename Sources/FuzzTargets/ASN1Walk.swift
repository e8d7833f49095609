import Crypto

/// A bounded walk over a parsed ASN.1 tree that reads every element the way PayPipe's CMS and certificate code
/// does (OIDs, small INTEGERs, times, OCTET/BIT STRINGs holding DER), and checks that times survive a
/// parse → `derEncoded` → parse round trip (the encoder signs sandbox certificates and CMS signing times).
struct ASN1Walk {
    /// Elements still to visit: a 16 KiB input holds at most ~8000 elements, and quadratic re-reads of nested
    /// encodings must not turn one input into a timeout.
    private var budget = 4096
    private static let maximumDepth = 48
    private(set) var oracleFailure: String?

    mutating func visit(_ element: ASN1Element, depth: Int) throws(CryptoError) {
        budget -= 1
        guard budget > 0, depth < Self.maximumDepth else { return }
        _ = element.isObjectIdentifier(.pkcs7SignedData)
        switch element.tag {
        case ASN1Tag.objectIdentifier:
            _ = (try? element.objectIdentifier())?.description
        case ASN1Tag.integer:
            _ = try? element.smallInteger()
        case ASN1Tag.utcTime, ASN1Tag.generalizedTime:
            if let time = try? element.time() {
                let reparsed = try? DERReader.parse(time.derEncoded).time()
                if reparsed != time, oracleFailure == nil {
                    oracleFailure = "time \(time.secondsSince1970) does not survive derEncoded → parse"
                }
            }
        case ASN1Tag.octetString, ASN1Tag.bitString:
            // Extension values and SubjectPublicKeyInfo keys are DER inside a string.
            let content = element.tag == ASN1Tag.bitString ? element.content.dropFirst() : element.content
            if !content.isEmpty, let inner = try? DERReader.parse(content) {
                try visit(inner, depth: depth + 1)
            }
        default:
            break
        }
        guard element.isConstructed else { return }
        for child in try element.children() {
            try visit(child, depth: depth + 1)
        }
    }
}
