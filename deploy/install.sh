#!/usr/bin/env bash
# Installs edge-agent as a systemd service. Idempotent: run it again after a
# rebuild to update the binary, boards, scenarios, udev rule and unit; it
# never overwrites an existing /etc/edge-agent/edge-agent.json5.
# See deploy/README.md; `deploy/install.sh --help` for the options.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

usage() {
    cat <<EOF
Usage: sudo deploy/install.sh [OPTIONS]

Installs edge-agent as a systemd service:
  binary      $repo/.build/release/edge-agent  ->  /usr/local/bin/edge-agent
  config      deploy/edge-agent.json5          ->  /etc/edge-agent/edge-agent.json5 (only if absent)
  boards      boards/*.json5                   ->  /usr/local/share/edge-agent/boards/
  scenarios   scenarios/*.json5                ->  /usr/local/share/edge-agent/scenarios/
  udev rule   deploy/99-edge-agent.rules       ->  /etc/udev/rules.d/
  unit        deploy/edge-agent.service        ->  /etc/systemd/system/ (ExecStart= in /usr/local/bin)
  users       deploy/edge-agent.sysusers       ->  /etc/sysusers.d/edge-agent.conf
  state dir   deploy/edge-agent.tmpfiles       ->  /etc/tmpfiles.d/edge-agent.conf
  i2c-dev     deploy/edge-agent.modules-load   ->  /etc/modules-load.d/edge-agent.conf
  docs        deploy/README.md, config/README.md ->  /usr/share/doc/edge-agent/
The Debian package (debian/, README.md "Install the package") installs the
same unit, udev, sysusers, tmpfiles and modules-load files.
The binary finds the boards and scenarios in ../share/edge-agent next to it,
so `edge-agent probe --board simulated`-style names work from any directory.
systemd-sysusers creates the groups i2c, gpio (if missing) and edge-motion
(clients), and the system user edge-agent (member of i2c, gpio, edge-motion);
systemd-tmpfiles the state directory /var/lib/edge-agent; then systemd and
udev are reloaded. Running it again updates what changed and nothing else.

Options:
  --binary FILE   the edge-agent executable to install
                  (default: .build/release/edge-agent; build it first with
                  'swift build -c release --static-swift-stdlib --product edge-agent')
  --config FILE   default configuration to install if none exists
                  (default: deploy/edge-agent.json5)
  --prefix DIR    install into DIR instead of / (a staging root for packages
                  or tests); users, groups and the systemd/udev reloads are
                  skipped, the layout under DIR is the same
  --mqtt FILE     also install the MQTT bridge: FILE (the edge-mqtt executable,
                  e.g. .build/release/edge-mqtt) -> /usr/local/bin/edge-mqtt,
                  deploy/edge-mqtt.service, deploy/edge-mqtt.json5 ->
                  /etc/edge-mqtt/edge-mqtt.json5 (only if absent), docs/mqtt.md,
                  and the system user edge-mqtt (member of edge-motion,
                  deploy/edge-mqtt.sysusers)
  --enable        also enable the service(s) at boot and (re)start them now
  --dry-run       print what would be done, change nothing
  -h, --help      this text

Add client users to the edge-motion group to let them connect:
  sudo usermod -a -G edge-motion USER
EOF
}

original_args=("$@")
binary="$repo/.build/release/edge-agent"
config="$repo/deploy/edge-agent.json5"
prefix=/
enable=no
dry_run=no
mqtt_binary=

while (($#)); do
    case $1 in
        --binary) binary=${2:?--binary needs a file}; shift 2 ;;
        --binary=*) binary=${1#*=}; shift ;;
        --config) config=${2:?--config needs a file}; shift 2 ;;
        --config=*) config=${1#*=}; shift ;;
        --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
        --prefix=*) prefix=${1#*=}; shift ;;
        --mqtt) mqtt_binary=${2:?--mqtt needs the edge-mqtt executable}; shift 2 ;;
        --mqtt=*) mqtt_binary=${1#*=}; shift ;;
        --enable) enable=yes; shift ;;
        --dry-run|-n) dry_run=yes; shift ;;
        -h|--help) usage; exit 0 ;;
        *) printf 'install.sh: unknown option: %s (see --help)\n' "$1" >&2; exit 2 ;;
    esac
done

say() { printf 'install.sh: %s\n' "$*"; }
# Reports a change that was made; under --dry-run the "would run" line
# already said it, so nothing is claimed.
did() { [[ $dry_run == yes ]] || say "$@"; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

# Runs a command that changes the system, or only shows it under --dry-run.
run() {
    if [[ $dry_run == yes ]]; then
        printf 'install.sh: would run:'; printf ' %q' "$@"; printf '\n'
    else
        "$@"
    fi
}

prefix=${prefix%/}
root=${prefix:-}                 # "" for /, so paths read $root/etc/...
system=yes                       # touch users, groups, systemd, udev?
[[ -n $root ]] && system=no

if [[ $dry_run == no && $system == yes && $(id -u) -ne 0 ]]; then
    die "must run as root to install into / (try: sudo $0 ${original_args[*]:-}; or --dry-run, or --prefix DIR)"
fi

# --- sources ------------------------------------------------------------------
[[ -f $binary && -x $binary ]] || die "no executable at $binary; build it first: swift build -c release --static-swift-stdlib --product edge-agent (or pass --binary FILE)"
for f in "$here/edge-agent.service" "$here/99-edge-agent.rules" "$here/edge-agent.sysusers" \
         "$here/edge-agent.tmpfiles" "$here/edge-agent.modules-load"; do
    [[ -f $f ]] || die "missing $f (run from a complete checkout)"
done
[[ -d $repo/boards ]] || die "missing $repo/boards"
if [[ -n $mqtt_binary ]]; then
    [[ -f $mqtt_binary && -x $mqtt_binary ]] || die "no executable at $mqtt_binary; build it first: swift build -c release --static-swift-stdlib --product edge-mqtt"
    for f in "$here/edge-mqtt.service" "$here/edge-mqtt.json5" "$here/edge-mqtt.sysusers"; do
        [[ -f $f ]] || die "missing $f (run from a complete checkout)"
    done
fi

# Installs one file with a mode, reporting whether it changed.
install_file() { # SRC DEST MODE
    local src=$1 dest=$2 mode=$3
    if [[ -f $dest ]] && cmp -s "$src" "$dest"; then
        # Same content: still enforce the mode, quietly.
        [[ $(stat -c %a "$dest") == "${mode#0}" ]] || run chmod "$mode" "$dest"
        say "unchanged  $dest"
        return 0
    fi
    local verb=new
    [[ -e $dest ]] && verb=updated
    run install -D -m "$mode" "$src" "$dest"
    did "$verb  $dest"
    changed=yes
}

# Installs a unit from deploy/ with its executable in /usr/local/bin: the
# file names /usr/bin/ (the Debian package's path), a source install puts
# the binaries in /usr/local/bin. Nothing else in the unit changes.
install_unit() { # SRC DEST
    local unit
    unit=$(mktemp)
    sed 's|^ExecStart=/usr/bin/|ExecStart=/usr/local/bin/|' "$1" >"$unit"
    install_file "$unit" "$2" 0644
    rm -f "$unit"
}

# Installs every *.json5, *.json (a board's own calibration) and README.md of
# a directory, removing nothing.
install_dir() { # SRCDIR DESTDIR
    local src=$1 dest=$2 f
    run install -d -m 0755 "$dest"
    shopt -s nullglob
    for f in "$src"/*.json5 "$src"/*.json "$src"/README.md; do
        install_file "$f" "$dest/$(basename "$f")" 0644
    done
    shopt -u nullglob
}

changed=no

# --- groups and users ---------------------------------------------------------
# The same sysusers.d files the Debian package ships (one copy of each, in
# deploy/): systemd-sysusers creates what is missing (groups i2c, gpio,
# edge-motion; user edge-agent in all three; with --mqtt user edge-mqtt in
# edge-motion) and leaves what exists, adding only missing memberships.
install_file "$here/edge-agent.sysusers" "$root/etc/sysusers.d/edge-agent.conf" 0644
if [[ -n $mqtt_binary ]]; then
    install_file "$here/edge-mqtt.sysusers" "$root/etc/sysusers.d/edge-mqtt.conf" 0644
fi
if [[ $system == yes ]]; then
    command -v systemd-sysusers >/dev/null \
        || die "systemd-sysusers not found: install.sh needs systemd (the unit does too)"
    sysusers=("$root/etc/sysusers.d/edge-agent.conf")
    [[ -n $mqtt_binary ]] && sysusers+=("$root/etc/sysusers.d/edge-mqtt.conf")
    run systemd-sysusers "${sysusers[@]}"
    did "users and groups: $(IFS=,; echo "${sysusers[*]##*/}") applied (missing ones created)"
else
    say "staging into $prefix: skipping users, groups and reloads"
fi

# --- files --------------------------------------------------------------------
install_file "$binary" "$root/usr/local/bin/edge-agent" 0755
# Data next to the binary's prefix (/usr/local/bin -> /usr/local/share), where
# the binary looks for it (BoardLocator in Sources/EdgeConfig).
install_dir "$repo/boards" "$root/usr/local/share/edge-agent/boards"
if [[ -d $repo/scenarios ]]; then
    install_dir "$repo/scenarios" "$root/usr/local/share/edge-agent/scenarios"
else
    warn "no scenarios/ directory in $repo: the simulated board will have no scenarios"
fi

# Configuration: never overwrite the administrator's file.
run install -d -m 0755 "$root/etc/edge-agent"
if [[ -e $root/etc/edge-agent/edge-agent.json5 ]]; then
    say "kept       $root/etc/edge-agent/edge-agent.json5 (exists; not overwritten)"
    if [[ -f $config ]] && ! cmp -s "$config" "$root/etc/edge-agent/edge-agent.json5"; then
        say "           the shipped default differs; compare with $config"
    fi
elif [[ -f $config ]]; then
    install_file "$config" "$root/etc/edge-agent/edge-agent.json5" 0644
else
    warn "no default configuration at $config; write $root/etc/edge-agent/edge-agent.json5 before starting the service"
fi

install_file "$here/99-edge-agent.rules" "$root/etc/udev/rules.d/99-edge-agent.rules" 0644
install_unit "$here/edge-agent.service" "$root/etc/systemd/system/edge-agent.service"
install_file "$here/edge-agent.tmpfiles" "$root/etc/tmpfiles.d/edge-agent.conf" 0644
install_file "$here/edge-agent.modules-load" "$root/etc/modules-load.d/edge-agent.conf" 0644
install_file "$here/README.md" "$root/usr/share/doc/edge-agent/README.md" 0644
if [[ -f $repo/config/README.md ]]; then
    # deploy/edge-agent.json5 points here for the keys.
    install_file "$repo/config/README.md" "$root/usr/share/doc/edge-agent/config/README.md" 0644
fi
if [[ -d $root/usr/share/edge-agent ]] && ! dpkg-query -S /usr/share/edge-agent >/dev/null 2>&1; then
    warn "$root/usr/share/edge-agent is left from an older install (data now lives in /usr/local/share/edge-agent); remove it when nothing else uses it"
fi

if [[ -n $mqtt_binary ]]; then
    install_file "$mqtt_binary" "$root/usr/local/bin/edge-mqtt" 0755
    install_unit "$here/edge-mqtt.service" "$root/etc/systemd/system/edge-mqtt.service"
    install_file "$repo/docs/mqtt.md" "$root/usr/share/doc/edge-mqtt/mqtt.md" 0644
    run install -d -m 0755 "$root/etc/edge-mqtt"
    if [[ -e $root/etc/edge-mqtt/edge-mqtt.json5 ]]; then
        say "kept       $root/etc/edge-mqtt/edge-mqtt.json5 (exists; not overwritten)"
    else
        install_file "$here/edge-mqtt.json5" "$root/etc/edge-mqtt/edge-mqtt.json5" 0644
    fi
fi

# --- reloads ------------------------------------------------------------------
if [[ $system == yes ]]; then
    run systemd-tmpfiles --create "$root/etc/tmpfiles.d/edge-agent.conf"
    did "state directory /var/lib/edge-agent (edge-agent.tmpfiles)"
    if [[ -d /run/systemd/system ]]; then
        run systemctl daemon-reload
        did "reloaded systemd"
    else
        warn "systemd is not running here: skipped daemon-reload"
    fi
    if command -v udevadm >/dev/null && [[ -S /run/udev/control ]]; then
        run udevadm control --reload
        run udevadm trigger --subsystem-match=i2c-dev --subsystem-match=gpio
        did "reloaded udev rules and re-applied them to i2c-dev and gpio devices"
    else
        warn "udev is not running here: skipped the udev reload"
    fi
    if ! lsmod 2>/dev/null | grep -q '^i2c_dev'; then
        run modprobe -q i2c-dev || warn "could not load i2c-dev now (it loads at next boot)"
    fi
    if [[ $enable == yes ]]; then
        if [[ -d /run/systemd/system ]]; then
            run systemctl enable edge-agent.service
            run systemctl restart edge-agent.service
            did "enabled and (re)started edge-agent.service"
            if [[ -n $mqtt_binary ]]; then
                run systemctl enable edge-mqtt.service
                run systemctl restart edge-mqtt.service
                did "enabled and (re)started edge-mqtt.service"
            fi
        else
            warn "systemd is not running here: cannot enable the service"
        fi
    fi
fi

if [[ $dry_run == yes ]]; then
    say "dry run: nothing was changed"
elif [[ $changed == no ]]; then
    say "done: everything was already up to date"
else
    say "done"
fi
if [[ $system == yes && $enable == no ]]; then
    say "next: sudo systemctl enable --now edge-agent   (then: systemctl status edge-agent)"
fi
if [[ -n $mqtt_binary ]]; then
    say "mqtt: grant the bridge its streams in /etc/edge-agent/edge-agent.json5:"
    say "        clients: [ { user: \"edge-mqtt\", entitlements: [\"motion\", \"altitude\"] } ],"
    say "      set the broker in /etc/edge-mqtt/edge-mqtt.json5, then: sudo systemctl enable --now edge-mqtt; edge-mqtt status"
fi
