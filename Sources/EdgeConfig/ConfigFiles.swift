// The file reading, strict decoding and error reporting every configuration
// of the package shares live in EdgeConfigFiles (no estimator, no chips), so
// that a client reads its own file without linking the agent's modules.
// Re-exported: a user of the agent's configuration gets ConfigLoader and
// ConfigError with it.
@_exported import EdgeConfigFiles
