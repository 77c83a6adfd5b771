// libmosquitto 2.0 (Debian 12 libmosquitto-dev, pkg-config libmosquitto):
// the MQTT 3.1.1 / 5 client of edge-mqtt. All use of it stays behind
// Sources/EdgeMQTT/MQTT/MosquittoSession.swift.
#include <mosquitto.h>
#include <mqtt_protocol.h>
