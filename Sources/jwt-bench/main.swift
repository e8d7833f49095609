// jwt-bench: builds and signs HS256 JWTs over ~600-byte Trust Payments-like claims, then verifies them.
// Usage: jwt-bench [seconds=3]
// Prints one JSON line; rates are per CPU-second (like `openssl speed`). `signingInputBytes` is the length HMAC-SHA256 runs over (header.payload in base64url), so
// scripts/bench can put `openssl speed -hmac sha256 -bytes <that>` beside the signing rate as its bound.
import Foundation
import JWT

/// A Trust Payments request JWT's claims (trustpayments.md §2), varied per token like a real pipeline would.
func claims(sequence: Int) -> JSONValue {
    [
        "iss": "jwt.example.user",
        "iat": .integer(1_735_689_600 + Int64(sequence % 1000)),
        "payload": [
            "accounttypedescription": "ECOM",
            "sitereference": "test_site00000",
            "currencyiso3a": "GBP",
            "baseamount": .string(String(1000 + sequence % 9000)),
            "requesttypedescriptions": ["THREEDQUERY", "AUTH"],
            "orderreference": .string("ORDER-\(sequence)"),
            "termurl": "https://merchant.example/3ds/term",
            "locale": "en_GB",
            "credentialsonfile": "0",
            "billingfirstname": "Alexandra",
            "billinglastname": "Montgomery-Smythe",
            "billingpremise": "221B",
            "billingstreet": "Baker Street",
            "billingtown": "London",
            "billingpostcode": "NW1 6XE",
            "billingcountryiso2a": "GB",
            "billingemail": "alexandra.montgomery@example.com",
            "billingtelephone": "+442079460000",
            "customerfirstname": "Alexandra",
        ],
    ]
}

/// Runs `operation` for `seconds` of wall time; the rate is per CPU-second of the process, as `openssl speed`
/// reports it, so the two stay comparable on a machine shared with other work.
func rate(seconds: Double, _ operation: (Int) -> Void) -> (count: Int, perSecond: Double) {
    func cpuSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
    let start = DispatchTime.now().uptimeNanoseconds
    let cpuStart = cpuSeconds()
    let deadline = start + UInt64(seconds * 1e9)
    var count = 0
    while DispatchTime.now().uptimeNanoseconds < deadline {
        for _ in 0..<100 {
            operation(count)
            count += 1
        }
    }
    return (count, Double(count) / (cpuSeconds() - cpuStart))
}

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 3 : 3
let secret = Array("example-secret-not-real".utf8)
let signer = JWTSigner(algorithm: .hs256, key: secret)
let sample = signer.sign(claims(sequence: 42))
let verifier = JWTVerifier(key: secret, maxAge: 900, now: { Date(timeIntervalSince1970: 1_735_689_700) })
precondition((try? verifier.verify(sample)) != nil)

var sink = 0
_ = rate(seconds: 0.3) { sink &+= signer.sign(claims(sequence: $0)).utf8.count }  // warm-up
let build = rate(seconds: seconds) { sink &+= signer.sign(claims(sequence: $0)).utf8.count }
let prebuilt = claims(sequence: 7).serialized()
let signOnly = rate(seconds: seconds) { _ in sink &+= signer.sign(payload: prebuilt).utf8.count }
let verify = rate(seconds: seconds) { _ in
    if let verified = try? verifier.verify(sample) { sink &+= verified.payload.count }
}
let signingInput = sample.split(separator: ".").prefix(2).joined(separator: ".")
let report: [String: Any] = [
    "claimsBytes": claims(sequence: 42).serialized().count, "tokenBytes": sample.utf8.count,
    "signingInputBytes": signingInput.utf8.count, "seconds": seconds,
    "buildAndSignPerSecond": build.perSecond.rounded(), "signPerSecond": signOnly.perSecond.rounded(),
    "verifyPerSecond": verify.perSecond.rounded(), "checksum": sink % 10,
]
print(String(decoding: try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]), as: UTF8.self))
