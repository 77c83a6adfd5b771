// libFuzzer drives the target (FuzzSupport/Driver.swift).
import FuzzSupport

runLibFuzzer { data, size in fuzzDiveImport(data, size) }
