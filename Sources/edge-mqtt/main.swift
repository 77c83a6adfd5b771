// edge-mqtt: the MQTT / Home Assistant bridge. Everything is in EdgeMQTT
// (Sources/EdgeMQTT/CLI); this file only hands over the arguments.
#if canImport(Glibc)
import Glibc
#endif
import EdgeMQTT

exit(EdgeMQTTCLI.main(Array(CommandLine.arguments.dropFirst()), supervise: true))
