// edge-bench: see Bench.swift and bench/README.md.
#if canImport(Glibc)
import Glibc
#endif

exit(BenchCommand.main(Array(CommandLine.arguments.dropFirst())))
