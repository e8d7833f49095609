// The one libFuzzer entry point PayPipe calls (compiler-rt/lib/fuzzer/FuzzerInterface.h, LLVM >= 11).
// Declared here rather than included: the toolchain ships libFuzzer's archives, not its headers' install path.
// Only the sanitized build made by scripts/fuzz links libFuzzer (libclang_rt.fuzzer_no_main), and only there is
// this function referenced (paypipe-fuzz under -DPAYPIPE_FUZZ).
#ifndef PAYPIPE_CLIBFUZZER_SHIM_H
#define PAYPIPE_CLIBFUZZER_SHIM_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
