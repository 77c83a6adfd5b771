#!/usr/bin/env python3
"""Checks every Home Assistant discovery payload edge-mqtt plans against
Home Assistant's OWN schemas (issue 16, item 12), not a transcription.

    Tests/Integration/ha-discovery-check.py [--binary .build/debug/edge-mqtt]

Creates a venv under .build/ha-venv (once; about a minute), installs the
Home Assistant release pinned in ha-discovery-requirements.txt with that
release's own constraints file (homeassistant/package_constraints.txt in its
wheel), then re-runs itself in the venv. It asks `edge-mqtt discovery
--every-stream` for every payload the bridge can publish and, for each:

* the component in the topic is one Home Assistant's MQTT discovery supports;
* the payload passes the platform's PLATFORM_SCHEMA_MODERN (which refuses a
  key Home Assistant does not know) and its DISCOVERY_SCHEMA, and
  DISCOVERY_SCHEMA keeps every key (it silently drops unknown ones: a key it
  drops is a key Home Assistant ignores);
* `origin` passes MQTT_ORIGIN_INFO_SCHEMA;
* a sensor's unit is one its device class accepts (DEVICE_CLASS_UNITS), and
  an `enum` sensor has neither a unit nor a state class.

Exit status 0 when every payload passes, 1 otherwise, 2 on a set-up failure.
Stdlib only outside the venv.
"""
import json
import os
import subprocess
import sys
import tempfile
import venv
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV = os.path.join(ROOT, ".build", "ha-venv")
REQUIREMENTS = os.path.join(HERE, "ha-discovery-requirements.txt")


def pinned_release():
    for line in open(REQUIREMENTS):
        line = line.split("#")[0].strip()
        if line.startswith("homeassistant=="):
            return line.split("==", 1)[1]
    sys.exit("ha-discovery-check: no homeassistant== line in " + REQUIREMENTS)


def ensure_venv():
    """The venv with the pinned release; a marker file says which."""
    release = pinned_release()
    python = os.path.join(VENV, "bin", "python")
    marker = os.path.join(VENV, "edge-installed")
    wanted = open(REQUIREMENTS).read()
    if os.path.exists(marker) and open(marker).read() == wanted:
        return python
    print(f"ha-discovery-check: installing Home Assistant {release} into {VENV} (about a minute)", flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
    download = os.path.join(ROOT, ".build", "ha-download")
    subprocess.run(pip + ["download", "--no-deps", "-d", download, f"homeassistant=={release}"], check=True)
    wheel = next(os.path.join(download, f) for f in os.listdir(download)
                 if f.startswith(f"homeassistant-{release}-") and f.endswith(".whl"))
    constraints = os.path.join(download, "package_constraints.txt")
    with zipfile.ZipFile(wheel) as z, open(constraints, "wb") as out:
        out.write(z.read("homeassistant/package_constraints.txt"))
    subprocess.run(pip + ["install", "-c", constraints, "-r", REQUIREMENTS], check=True)
    with open(marker, "w") as f:
        f.write(wanted)
    return python


def payloads(binary):
    """Every discovery payload, from the bridge itself, for a configuration
    with a non-default node, prefix, discovery prefix and QoS."""
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "bridge.json5")
        with open(config, "w") as f:
            f.write('{ node: "ha-check", topics: { prefix: "fleet/site1", discovery_prefix: "homeassistant" },'
                    ' qos: { scalars: 1 }, agent: { socket_path: "agent.sock" } }')
        r = subprocess.run([binary, "discovery", "--config", config, "--every-stream"],
                           capture_output=True, text=True, cwd=d)
    if r.returncode != 0:
        sys.exit(f"ha-discovery-check: {binary} discovery failed ({r.returncode}): {r.stderr}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def check(items):
    import voluptuous as vol
    from homeassistant.components.mqtt import discovery
    from homeassistant.components.sensor import DEVICE_CLASS_UNITS, SensorDeviceClass
    from homeassistant.const import __version__ as ha_version

    problems = 0
    components = set()
    for item in items:
        topic, payload = item["topic"], item["payload"]
        parts = topic.split("/")
        component = parts[-4] if len(parts) >= 4 else "?"
        components.add(component)
        errors = []
        if component not in discovery.SUPPORTED_COMPONENTS:
            errors.append(f"component {component!r} is not one MQTT discovery supports")
        else:
            platform = __import__(f"homeassistant.components.mqtt.{component}", fromlist=["x"])
            body = {k: v for k, v in payload.items() if k != "origin"}
            try:
                platform.PLATFORM_SCHEMA_MODERN(dict(body))
            except vol.Invalid as e:
                errors.append(f"PLATFORM_SCHEMA_MODERN: {e}")
            try:
                kept = platform.DISCOVERY_SCHEMA(dict(body))
                dropped = sorted(set(body) - set(kept))
                if dropped:
                    errors.append(f"DISCOVERY_SCHEMA drops {dropped}: Home Assistant {ha_version} ignores them")
            except vol.Invalid as e:
                errors.append(f"DISCOVERY_SCHEMA: {e}")
            if "origin" in payload:
                try:
                    discovery.MQTT_ORIGIN_INFO_SCHEMA(payload["origin"])
                except vol.Invalid as e:
                    errors.append(f"origin: {e}")
            if component == "sensor":
                dc = payload.get("device_class")
                unit = payload.get("unit_of_measurement")
                if dc == SensorDeviceClass.ENUM and (unit is not None or "state_class" in payload):
                    errors.append("an enum sensor with a unit or a state class")
                if dc is not None and dc != SensorDeviceClass.ENUM:
                    allowed = DEVICE_CLASS_UNITS.get(SensorDeviceClass(dc))
                    if allowed is not None and unit not in allowed:
                        errors.append(f"unit {unit!r} is not one device class {dc} accepts ({sorted(map(str, allowed))})")
        verdict = "ok" if not errors else "FAIL"
        print(f"  {verdict:4} {topic}")
        for e in errors:
            print(f"       {e}")
        problems += bool(errors)
    print(f"ha-discovery-check: {len(items)} payload(s) of {sorted(components)} checked against Home Assistant "
          f"{ha_version}'s schemas: {problems} failed")
    return problems


def main():
    binary = os.path.join(ROOT, ".build", "debug", "edge-mqtt")
    args = sys.argv[1:]
    if "--binary" in args:
        binary = os.path.abspath(args[args.index("--binary") + 1])
    if not os.access(binary, os.X_OK):
        sys.exit(f"ha-discovery-check: {binary} is missing: swift build (or --binary PATH)")
    if "--inside" not in args:
        python = ensure_venv()
        os.execv(python, [python, os.path.abspath(__file__), "--inside", "--binary", binary])
    items = payloads(binary)
    if not items:
        print("ha-discovery-check: the bridge planned no discovery payload")
        return 1
    return 1 if check(items) else 0


if __name__ == "__main__":
    sys.exit(main())
