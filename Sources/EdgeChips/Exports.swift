@_exported import EdgeChipsCore
