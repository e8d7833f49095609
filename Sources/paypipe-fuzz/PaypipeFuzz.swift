import Foundation
import FuzzTargets

#if PAYPIPE_FUZZ
import CLibFuzzer
#endif

/// `paypipe-fuzz`: the libFuzzer target over PayPipe's parsers (docs/fuzzing.md), and a replayer.
///
/// Built two ways from the same source:
/// - by `scripts/fuzz` with `-DPAYPIPE_FUZZ`, ASan and coverage instrumentation, linked against libFuzzer's
///   `fuzzer_no_main` runtime: `main` hands the command line to `LLVMFuzzerRunDriver`. SwiftPM renames every
///   executable's entry point and aliases `main` to it, so libFuzzer's own `main` cannot be used.
/// - by a plain `swift build`: `paypipe-fuzz replay FILE|DIR…` runs inputs through the same harness without
///   sanitizers and prints each outcome (reproducing a crash file in a debugger, checking a corpus).
@main
struct PaypipeFuzz {
    static func main() {
        let arguments = CommandLine.arguments
        if arguments.count >= 2, arguments[1] == "replay" {
            exit(replay(Array(arguments.dropFirst(2))))
        }
        #if PAYPIPE_FUZZ
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOne))
        #else
        FileHandle.standardError.write(Data("""
            usage: paypipe-fuzz replay FILE|DIR...
            (fuzzing needs the instrumented build: scripts/fuzz [SECONDS], see docs/fuzzing.md)

            """.utf8))
        exit(64)
        #endif
    }

    /// libFuzzer's callback: one input through the harness; an oracle failure becomes a crash, which libFuzzer
    /// reports and saves like any other.
    static let fuzzOne: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt = { data, size in
        let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        let outcome = FuzzHarness.run(input)
        if case .oracleFailure(let reason) = outcome.verdict {
            fatalError("oracle failure on surface \(outcome.surface): \(reason)")
        }
        return 0
    }

    /// Prints `<outcome>\t<path>\t<detail>` per file; exit status 1 if any oracle failed.
    static func replay(_ paths: [String]) -> Int32 {
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                FileHandle.standardError.write(Data("no such file: \(path)\n".utf8))
                return 66
            }
            if isDirectory.boolValue {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                files += names.sorted().map { "\(path)/\($0)" }
            } else {
                files.append(path)
            }
        }
        var failed = false
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            let outcome = FuzzHarness.run(Array(data))
            failed = failed || outcome.isOracleFailure
            print("\(outcome.code)\t\(file)\t\(outcome.detail)")
        }
        return failed ? 1 : 0
    }
}
