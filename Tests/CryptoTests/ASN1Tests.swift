import Crypto
import Foundation
import Testing

@Suite struct ASN1Tests {
    @Test func objectIdentifiers() {
        let oid = ASN1ObjectIdentifier("1.2.840.113635.100.6.29")
        #expect(oid.description == "1.2.840.113635.100.6.29")
        #expect(DERWriter.objectIdentifier(.sha256) == [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01])
        #expect(ASN1ObjectIdentifier(contentBytes: ASN1ObjectIdentifier.ecPublicKey.contentBytes) == .ecPublicKey)
    }

    @Test func readsBERIndefiniteLengths() throws {
        // SEQUENCE (indefinite) { INTEGER 5, [0] (indefinite) { OCTET STRING 'ab' } }
        let bytes: [UInt8] = [0x30, 0x80, 0x02, 0x01, 0x05, 0xA0, 0x80, 0x04, 0x02, 0x61, 0x62, 0x00, 0x00, 0x00, 0x00]
        let root = try DERReader.parse(bytes)
        #expect(root.isIndefiniteLength)
        let children = try root.children()
        #expect(children.count == 2)
        #expect(try children[0].smallInteger() == 5)
        #expect(try children[1].children()[0].octetString().elementsEqual([0x61, 0x62]))
        #expect(children[1].encoded.count == 8)
    }

    @Test(arguments: [[UInt8](), [0x30], [0x30, 0x05, 0x02], [0x04, 0x80, 0x00, 0x00], [0x30, 0x80, 0x02, 0x01, 0x05],
                      [0x1F, 0x01, 0x00], [0x30, 0x00, 0x00], [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]])
    func rejectsMalformedEncodings(bytes: [UInt8]) {
        #expect(throws: CryptoError.self) { try DERReader.parse(bytes) }
    }

    @Test func rejectsExcessiveNesting() {
        let bytes = [UInt8](repeating: 0x30, count: 40).flatMap { [$0, 0x80] } + [UInt8](repeating: 0, count: 80)
        #expect(throws: CryptoError.self) { try DERReader.parse(bytes) }
    }

    @Test func writerEncodesLengthsAndSortsSets() throws {
        let long = DERWriter.octetString([UInt8](repeating: 7, count: 300))
        #expect(Array(long.prefix(4)) == [0x04, 0x82, 0x01, 0x2C])
        #expect(try DERReader.parse(long).content.count == 300)
        let set = DERWriter.setOf([DERWriter.integer(2), DERWriter.integer(1)])
        #expect(set == [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02])
        #expect(DERWriter.integer(magnitude: [0x00, 0x00, 0xFF]) == [0x02, 0x02, 0x00, 0xFF])
        #expect(DERWriter.integer(0) == [0x02, 0x01, 0x00])
    }

    @Test func timesRoundTrip() throws {
        let formatter = ISO8601DateFormatter()
        for text in ["2021-09-01T19:03:06Z", "1999-12-31T23:59:59Z", "2050-01-01T00:00:00Z", "2000-02-29T12:00:00Z"] {
            let time = ASN1Time(formatter.date(from: text)!)
            let encoded = time.derEncoded
            #expect(encoded[0] == (text.hasPrefix("2050") ? ASN1Tag.generalizedTime : ASN1Tag.utcTime))
            #expect(try DERReader.parse(encoded).time() == time, "\(text)")
        }
        #expect(throws: CryptoError.self) { try DERReader.parse(DERWriter.element(tag: ASN1Tag.utcTime, content: Array("211301000000Z".utf8))).time() }
        #expect(throws: CryptoError.self) { try DERReader.parse(DERWriter.element(tag: ASN1Tag.utcTime, content: Array("2109011903Z".utf8))).time() }
    }

    /// Found by the fuzz harness: years below 1000 were written with fewer than four digits.
    @Test(arguments: ["00000101000000Z", "00991231235959Z", "09991231235959Z", "99991231235959Z"])
    func generalizedTimesOfAnyYearRoundTrip(_ text: String) throws {
        let time = try DERReader.parse(DERWriter.element(tag: ASN1Tag.generalizedTime, content: Array(text.utf8))).time()
        #expect(time.derEncoded == DERWriter.element(tag: ASN1Tag.generalizedTime, content: Array(text.utf8)))
        #expect(try DERReader.parse(time.derEncoded).time() == time)
    }
}
