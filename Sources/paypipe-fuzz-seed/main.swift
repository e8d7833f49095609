import Foundation

// paypipe-fuzz-seed OUTDIR [FIXTURES] [SANDBOX_DIR]
//
// Writes the fuzz seed corpus (docs/fuzzing.md), every file framed for its surface (selector byte + payload), all
// derived from the repository's fixtures and from freshly minted sandbox jobs rather than stored blobs:
// - each Apple Pay token fixture (Tests/Fixtures/applepay/**.json with a paymentData): as token JSON, as a
//   job body carrying it, as plain JSON; its CMS signature as CMS and as DER; its base64 fields as base64;
// - each PEM certificate of the fixtures and of the sandbox PKI: as X.509 and as DER;
// - every decrypted-payload object found in the fixtures' expected.json files, plus minted 3DSecure/EMV payloads;
// - SampleJobFactory's mix of sample jobs (valid EC/RSA, declined, invalid, replayed, malformed, …) as job bodies
//   and their tokens as token JSON.
// The sandbox PKI lives in SANDBOX_DIR (default var/fuzz/sandbox, git-ignored) and is created on first use.

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: paypipe-fuzz-seed OUTDIR [FIXTURES_DIR] [SANDBOX_DIR]\n".utf8))
    exit(64)
}
let outputDirectory = arguments[1]
let fixtures = arguments.count >= 3 ? arguments[2] : "Tests/Fixtures/applepay"
let sandboxDirectory = arguments.count >= 4 ? arguments[3] : "var/fuzz/sandbox"
try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)

var corpus = SeedCorpus(outputDirectory: outputDirectory)
try corpus.writeAll(fixtures: fixtures, sandboxDirectory: sandboxDirectory)
print("paypipe-fuzz-seed: wrote \(corpus.written) seed inputs to \(outputDirectory)")
