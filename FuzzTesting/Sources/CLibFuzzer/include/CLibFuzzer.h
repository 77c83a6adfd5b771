// libFuzzer's driver entry point (compiler-rt, FuzzerInterface.h), which
// `-sanitize=fuzzer` links in. SwiftPM links each executable with its
// entry point renamed (`--defsym main=<Module>_main`), so libFuzzer's own
// `main` cannot be the program's: each target's main.swift calls this.
#pragma once
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
