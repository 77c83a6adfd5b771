#!/usr/bin/env bash
# The installed system under a real systemd: boots a Debian 12 root made by
# mmdebstrap from Debian's packages with systemd as PID 1
# (systemd-nspawn --boot, no network), installs the packages built by
# deploy/build-packages.sh with apt, and checks what issue 20 asks:
#   edge-agent.service active (running) through READY=1 (Type=notify) on the
#   installed configuration (the simulated board); the users, groups, state
#   directory and socket (owner, mode); a member of edge-motion reads with
#   `edge-agent watch --count 10`, a non-member gets a clear permission
#   error; SIGSTOP -> systemd's watchdog kills and restarts the agent, and
#   the journal says why; `systemctl reload` reloads the calibration;
#   edge-mqtt.service against the local mosquitto publishes its retained
#   `online`; `systemd-analyze security` on the live system; `systemctl
#   stop` ends the agent with exit 0; an upgrade keeps a locally edited
#   conffile; remove; purge.
# Every step is named; a failure says which step failed and why, and shows
# the agent's journal. The transcript goes to OUT/transcript.txt.
#
# Usage: Tests/Integration/debian-systemd-test.sh [--debs DIR] [--out DIR] [--reuse-root]
#   --debs DIR    the built packages (default .build/debian)
#   --out DIR     work directory: the root, the upgrade packages, the transcript
#                 (default .build/debian-systemd)
#   --reuse-root  keep OUT/root.tar from an earlier run instead of running
#                 mmdebstrap again (saves about 2.5 min when iterating)
# Needs root, mmdebstrap and systemd-container (systemd-nspawn), and Debian's
# mirror for mmdebstrap. No i2c-stub here: nspawn shares the host's kernel,
# and udev does not run in a container (the udev rule is checked as a file).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$PWD
debs=$repo/.build/debian
out=$repo/.build/debian-systemd
reuse_root=no
while (($#)); do
    case $1 in
        --debs) debs=$(realpath -- "${2:?}"); shift 2 ;;
        --out) out=$(realpath -m -- "${2:?}"); shift 2 ;;
        --reuse-root) reuse_root=yes; shift ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "debian-systemd-test: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

step_name="set-up"
step_start=$SECONDS
nspawn_pid=
leader=
mkdir -p "$out"
transcript=$out/transcript.txt
exec > >(tee "$transcript") 2>&1

say() { printf 'debian-systemd-test: %s\n' "$*"; }
step() {
    [[ $step_name == set-up ]] || say "step \"$step_name\" passed ($((SECONDS - step_start)) s)"
    step_name=$1; step_start=$SECONDS
    printf '\n== %s\n' "$1"
}
# In the container, as root, with a clean environment.
ct() {
    nsenter --target "$leader" --all -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        SYSTEMD_COLORS=0 SYSTEMD_PAGER= DEBIAN_FRONTEND=noninteractive "$@"
}
fail() {
    printf '\ndebian-systemd-test: FAILED at step "%s": %s\n' "$step_name" "$*" >&2
    if [[ -n $leader ]]; then
        echo "--- systemctl status edge-agent edge-mqtt" >&2
        ct systemctl status --no-pager --lines=0 edge-agent edge-mqtt >&2 || true
        echo "--- journal of edge-agent and edge-mqtt (last 40 lines)" >&2
        ct journalctl --no-pager -o short-precise -n 40 -u edge-agent -u edge-mqtt >&2 || true
    fi
    exit 1
}
# wait_for SECONDS WHAT COMMAND...: polls every 0.5 s until COMMAND succeeds.
wait_for() {
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || fail "$what: not within $limit s"
        sleep 0.5
    done
}
prop() { ct systemctl show -p "$2" --value "$1"; }
expect_prop() { # UNIT PROPERTY VALUE
    local v; v=$(prop "$1" "$2")
    [[ $v == "$3" ]] || fail "$1: $2 is '$v', expected '$3'"
    say "$1: $2=$v"
}
running() { [[ $(prop "$1" ActiveState)/$(prop "$1" SubState) == active/running ]]; }
shutdown_container() {
    [[ -n $nspawn_pid ]] || return 0
    if kill -0 "$nspawn_pid" 2>/dev/null; then
        [[ -n $leader ]] && ct systemctl poweroff >/dev/null 2>&1 || true
        local deadline=$((SECONDS + 30))
        while kill -0 "$nspawn_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.5; done
        kill -0 "$nspawn_pid" 2>/dev/null && kill -KILL "$nspawn_pid" 2>/dev/null
    fi
    wait "$nspawn_pid" 2>/dev/null || true
    nspawn_pid=
}
trap shutdown_container EXIT
set -E
trap 'fail "command failed (exit $?, line $LINENO): $BASH_COMMAND"' ERR

[[ $(id -u) -eq 0 ]] || fail "needs root (mmdebstrap, systemd-nspawn)"
for tool in mmdebstrap systemd-nspawn nsenter dpkg-deb; do
    command -v "$tool" >/dev/null || fail "$tool missing (apt-get install mmdebstrap systemd-container)"
done
shopt -s nullglob
packages=("$debs"/edge-agent_*.deb "$debs"/edge-mqtt_*.deb "$debs"/dive-logger_*.deb)
shopt -u nullglob
((${#packages[@]} == 3)) || fail "expected one edge-agent, edge-mqtt and dive-logger package in $debs (deploy/build-packages.sh), found ${#packages[@]}"
version=$(dpkg-deb -f "${packages[0]}" Version)
upgrade_version=$version+upgrade1

# -----------------------------------------------------------------------------
step "root file system (mmdebstrap bookworm)"
# The packages' own dependencies are in the root, so apt installs the .deb
# files with no network (the container has none): anything they need beyond
# Debian's packages would fail here.
deps=$(for p in "${packages[@]}"; do dpkg-deb -f "$p" Depends; echo ,; done |
       tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' |
       grep -v -x -e '' -e edge-agent -e edge-mqtt -e dive-logger | sort -u | paste -sd, -)
say "package dependencies: $deps"
root=$out/root
rm -rf "$root"
if [[ $reuse_root == no || ! -f $out/root.tar ]]; then
    mmdebstrap --quiet --variant=apt \
        --include="systemd-sysv,dbus,mosquitto,mosquitto-clients,$deps" \
        bookworm "$out/root.tar" || fail "mmdebstrap failed"
fi
mkdir -p "$root"
tar -C "$root" -xf "$out/root.tar"
# What the Debian installer writes and mmdebstrap does not: a host name and
# /etc/hosts (localhost for the bridge's broker address).
echo edge-test >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tedge-test\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
mkdir -p "$root/srv/debs" "$root/srv/upgrade" "$root/srv/test"
cp "${packages[@]}" "$root/srv/debs/"
cp config/calibration.json "$root/srv/test/calibration.json"

# The upgrade: the same packages as version $upgrade_version, each conffile
# with one line added (a changed default), so dpkg must choose between the
# administrator's edit and the new default.
for p in "${packages[@]}"; do
    d=$out/repack/$(basename "$p" .deb)
    rm -rf "$d"; mkdir -p "$out/repack"; dpkg-deb -R "$p" "$d"
    sed -i "s/^Version: .*/Version: $upgrade_version/" "$d/DEBIAN/control"
    if [[ -f $d/DEBIAN/conffiles ]]; then
        while read -r f; do
            printf '// %s: this default changed in the upgrade\n' "$upgrade_version" >>"$d$f"
        done <"$d/DEBIAN/conffiles"
    fi
    dpkg-deb --root-owner-group -Zgzip -z1 -b "$d" "$root/srv/upgrade/" >/dev/null
done
ls -l "$root/srv/debs" "$root/srv/upgrade"

# -----------------------------------------------------------------------------
step "boot (systemd-nspawn --boot)"
systemd-nspawn --quiet --directory="$root" --boot --register=no --keep-unit \
    --private-network --console=pipe >"$out/console.log" 2>&1 </dev/null &
nspawn_pid=$!
deadline=$((SECONDS + 30))
until leader=$(pgrep -P "$nspawn_pid" -x systemd) && [[ -n $leader ]]; do
    kill -0 "$nspawn_pid" 2>/dev/null || { cat "$out/console.log"; fail "systemd-nspawn exited"; }
    ((SECONDS < deadline)) || fail "no systemd in the container after 30 s"
    sleep 0.2
done
wait_for 90 "system boot" ct systemctl is-system-running --wait
say "PID 1: $(ct cat /proc/1/comm); $(ct systemctl --version | head -1); system $(ct systemctl is-system-running || true)"
ct systemctl --failed --no-pager --no-legend || true

# -----------------------------------------------------------------------------
step "install with apt"
ct sh -c 'apt-get install -y --no-install-recommends /srv/debs/*.deb' || fail "apt-get install failed"
ct dpkg-query -W edge-agent edge-mqtt dive-logger
for f in /lib/systemd/system/edge-agent.service /lib/systemd/system/edge-mqtt.service \
         /lib/udev/rules.d/99-edge-agent.rules /usr/lib/sysusers.d/edge-agent.conf \
         /usr/lib/sysusers.d/edge-mqtt.conf /usr/lib/tmpfiles.d/edge-agent.conf \
         /usr/lib/modules-load.d/edge-agent.conf; do
    [[ -f $root$f ]] || fail "$f not installed"
done
# One copy of each: the installed files are deploy/'s.
cmp "$root/lib/systemd/system/edge-agent.service" deploy/edge-agent.service || fail "installed unit differs from deploy/edge-agent.service"
cmp "$root/lib/udev/rules.d/99-edge-agent.rules" deploy/99-edge-agent.rules || fail "installed udev rule differs"
ct dpkg-query --control-show edge-agent conffiles | grep -qx /etc/edge-agent/edge-agent.json5 \
    || fail "/etc/edge-agent/edge-agent.json5 is not a conffile"
say "conffiles: $(ct dpkg-query --control-show edge-agent conffiles) $(ct dpkg-query --control-show edge-mqtt conffiles)"

# -----------------------------------------------------------------------------
step "edge-agent.service active (running) through READY=1"
wait_for 30 "edge-agent.service active" running edge-agent
expect_prop edge-agent Type notify
expect_prop edge-agent UnitFileState enabled
status_text=$(prop edge-agent StatusText)
# STATUS= arrives with READY=1 ("serving BOARD on SOCKET"): Type=notify is
# active only once the agent said READY=1.
[[ $status_text == "serving Simulated board"*" on /run/edge-agent/agent.sock"* ]] || fail "StatusText '$status_text'"
say "edge-agent: StatusText=$status_text"
ct systemctl status --no-pager --lines=5 edge-agent

# -----------------------------------------------------------------------------
step "users, groups, state directory, socket"
ct id edge-agent
ct id edge-mqtt
for g in i2c gpio edge-motion; do
    ct id -nG edge-agent | tr ' ' '\n' | grep -qx "$g" || fail "edge-agent is not in group $g"
done
ct id -nG edge-mqtt | tr ' ' '\n' | grep -qx edge-motion || fail "edge-mqtt is not in group edge-motion"
state=$(ct stat -c '%U:%G %a' /var/lib/edge-agent)
[[ $state == "edge-agent:edge-motion 700" ]] || fail "/var/lib/edge-agent is $state"
rundir=$(ct stat -c '%U:%G %a' /run/edge-agent)
[[ $rundir == "edge-agent:edge-motion 750" ]] || fail "/run/edge-agent is $rundir"
sock=$(ct stat -c '%F %U:%G %a' /run/edge-agent/agent.sock)
# Owner and group may connect (connect() needs write on the socket file;
# the agent sets service.socket_mode, 0660),
# others may not even reach it.
[[ $sock == "socket edge-agent:edge-motion 660" ]] || fail "/run/edge-agent/agent.sock is $sock"
say "/var/lib/edge-agent $state; /run/edge-agent $rundir; agent.sock $sock"

# -----------------------------------------------------------------------------
step "a member of edge-motion watches; a non-member is refused"
ct useradd --create-home --groups edge-motion alice
ct useradd --create-home bob
# stdout: one key=value line per update; stderr: which socket and why.
watch_out=$(ct runuser -u alice -- sh -c 'cd && exec edge-agent watch --count 10 --plain') \
    || { printf '%s\n' "$watch_out"; fail "alice (edge-motion) could not watch"; }
printf '%s\n' "$watch_out" | head -3
echo "..."
lines=$(printf '%s\n' "$watch_out" | grep -c '=' || true)
((lines == 10)) || fail "expected 10 update lines from --count 10, got $lines"
rc=0
refused=$(ct runuser -u bob -- sh -c 'cd && edge-agent watch --count 1 --plain' 2>&1) || rc=$?
printf '%s\n' "$refused"
((rc == 1)) || fail "bob (not in edge-motion): exit $rc, expected 1"
grep -qi 'permission denied' <<<"$refused" || fail "bob's error does not say 'permission denied'"
grep -q 'edge-motion' <<<"$refused" || fail "bob's error does not name the group edge-motion"

# -----------------------------------------------------------------------------
step "SIGSTOP: the watchdog kills and restarts the agent"
pid=$(prop edge-agent MainPID)
restarts=$(prop edge-agent NRestarts)
since=$(ct date '+%Y-%m-%d %H:%M:%S')
say "stopping the agent's process $pid (SIGSTOP); WatchdogSec=$(prop edge-agent WatchdogUSec)"
ct systemctl kill --kill-who=main --signal=SIGSTOP edge-agent
restarted() { [[ $(prop edge-agent MainPID) != "$pid" && $(prop edge-agent NRestarts) -gt $restarts ]] && running edge-agent; }
wait_for 90 "a restart after the watchdog timeout" restarted
journal=$(ct journalctl --no-pager -o short-precise -u edge-agent --since "$since")
printf '%s\n' "$journal" | grep -E 'Watchdog timeout|watchdog|Scheduled restart|Started|Killing' || true
grep -q 'Watchdog timeout' <<<"$journal" || fail "the journal does not say 'Watchdog timeout'"
grep -q "Failed with result 'watchdog'" <<<"$journal" || fail "the journal does not say Failed with result 'watchdog'"
say "restarted: MainPID $pid -> $(prop edge-agent MainPID), NRestarts $restarts -> $(prop edge-agent NRestarts)"

# -----------------------------------------------------------------------------
step "systemctl reload: the calibration is reloaded"
pid=$(prop edge-agent MainPID)
# What clients see: the chips the agent runs uncalibrated (watch's
# uncalibrated= key). No calibration file yet: all of them.
uncalibrated() { ct runuser -u alice -- sh -c 'cd && exec edge-agent watch --count 1 --plain 2>/dev/null' |
                 sed -n 's/.* uncalibrated=\([^ ]*\).*/\1/p'; }
before=$(uncalibrated)
say "uncalibrated before the reload: ${before:-none}"
[[ $before == *mpu6050@0x68* ]] || fail "mpu6050@0x68 is calibrated before any calibration file: '$before'"
ct install -o edge-agent -g edge-motion -m 0600 /srv/test/calibration.json /var/lib/edge-agent/calibration.json
since=$(ct date '+%Y-%m-%d %H:%M:%S')
ct systemctl reload edge-agent || fail "systemctl reload failed"
reloaded() { ct journalctl --no-pager -o cat -u edge-agent --since "$since" |
             grep -q 'SIGHUP: calibration reloaded from /var/lib/edge-agent/calibration.json'; }
wait_for 30 "the agent's 'calibration reloaded' line" reloaded
ct journalctl --no-pager -o short-precise -u edge-agent --since "$since"
[[ $(prop edge-agent MainPID) == "$pid" ]] || fail "the agent restarted instead of reloading"
wait_for 10 "active (running) after the reload" running edge-agent
# config/calibration.json calibrates mpu6050@0x68 and qmc5883l@0x0d, not
# the accessory IMU at 0x69.
after=$(uncalibrated)
say "uncalibrated after the reload: ${after:-none}"
[[ $after == mpu6050@0x69 ]] || fail "after the reload the agent reports uncalibrated '$after', expected only mpu6050@0x69"

# -----------------------------------------------------------------------------
step "edge-mqtt.service against the local mosquitto: retained online"
wait_for 30 "mosquitto.service active" running mosquitto
wait_for 30 "edge-mqtt.service active" running edge-mqtt
expect_prop edge-mqtt Type notify
online() { ct mosquitto_sub -h localhost -t 'edge/+/status' -v -C 1 -W 3 | grep -q ' online$'; }
wait_for 60 "a retained 'online' on edge/NODE/status" online
# A new subscriber gets it at once: it is retained.
ct mosquitto_sub -h localhost -t 'edge/+/status' -v -C 1 -W 3 --retained-only | grep ' online$' \
    || fail "edge/NODE/status 'online' is not retained"
ct systemctl status --no-pager --lines=3 edge-mqtt

# -----------------------------------------------------------------------------
step "systemd-analyze security on the live system"
for u in edge-agent edge-mqtt; do
    ct systemd-analyze security --no-pager "$u" >"$out/security-$u.txt" 2>&1 || true
    grep -E '^✗' "$out/security-$u.txt" || true
    overall=$(grep 'Overall exposure level' "$out/security-$u.txt") || { cat "$out/security-$u.txt"; fail "no exposure level for $u"; }
    say "$u: ${overall#→ }"
    case $overall in *SAFE*|*PERFECT*|*OK*) ;; *) fail "$u is rated worse than OK" ;; esac
done

# -----------------------------------------------------------------------------
step "systemctl stop: exit 0"
ct systemctl stop edge-agent
expect_prop edge-agent ActiveState inactive
expect_prop edge-agent Result success
expect_prop edge-agent ExecMainCode 1
expect_prop edge-agent ExecMainStatus 0
ct journalctl --no-pager -o cat -u edge-agent -n 4

# -----------------------------------------------------------------------------
step "upgrade to $upgrade_version keeps the edited conffile"
ct sed -i 's/sea_level_pa: 101325/sea_level_pa: 101000/' /etc/edge-agent/edge-agent.json5
ct grep -q 'sea_level_pa: 101000' /etc/edge-agent/edge-agent.json5 || fail "could not edit the conffile"
ct sh -c 'apt-get install -y --no-install-recommends -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold /srv/upgrade/*.deb' \
    || fail "apt-get install of the upgrade failed"
for p in edge-agent edge-mqtt dive-logger; do
    v=$(ct dpkg-query -W -f '${Version}' "$p")
    [[ $v == "$upgrade_version" ]] || fail "$p is $v after the upgrade"
done
ct grep -q 'sea_level_pa: 101000' /etc/edge-agent/edge-agent.json5 || fail "the local edit was lost"
ct grep -q 'this default changed' /etc/edge-agent/edge-agent.json5 && fail "the upgrade overwrote the edited conffile"
ct grep -q 'this default changed' /etc/edge-agent/edge-agent.json5.dpkg-dist || fail "no edge-agent.json5.dpkg-dist with the new default"
# The unedited conffile of edge-mqtt takes the new default.
ct grep -q 'this default changed' /etc/edge-mqtt/edge-mqtt.json5 || fail "the unedited edge-mqtt.json5 did not take the new default"
say "kept: /etc/edge-agent/edge-agent.json5 (local edit); new default in edge-agent.json5.dpkg-dist; edge-mqtt.json5 (unedited) updated"
wait_for 30 "edge-agent.service active again after the upgrade" running edge-agent

# -----------------------------------------------------------------------------
step "remove"
ct apt-get remove -y edge-mqtt dive-logger edge-agent || fail "apt-get remove failed"
# The two with conffiles stay known to dpkg with their configuration ("rc");
# dive-logger has none, so nothing of it is left.
for p in edge-agent edge-mqtt; do
    s=$(ct dpkg-query -W -f '${db:Status-Abbrev}' "$p")
    [[ $s == "rc " ]] || fail "$p status '$s' after remove, expected 'rc' (config files kept)"
done
if s=$(ct dpkg-query -W -f '${db:Status-Abbrev}' dive-logger 2>/dev/null); then
    [[ $s == "un " ]] || fail "dive-logger status '$s' after remove"
fi
[[ ! -e $root/usr/bin/edge-agent ]] || fail "/usr/bin/edge-agent left after remove"
expect_prop edge-agent LoadState not-found
ct test -f /etc/edge-agent/edge-agent.json5 || fail "remove deleted the conffile (only purge may)"
ct test -d /var/lib/edge-agent || fail "remove deleted the state directory (only purge may)"
say "removed; kept until purge: /etc/edge-agent/edge-agent.json5, /var/lib/edge-agent"

# -----------------------------------------------------------------------------
step "purge"
ct apt-get purge -y edge-mqtt edge-agent || fail "apt-get purge failed"
for p in edge-agent edge-mqtt dive-logger; do
    if s=$(ct dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null); then
        [[ $s == "un " ]] || fail "$p still known to dpkg after purge: '$s'"
    fi
done
for f in /etc/edge-agent /etc/edge-mqtt /var/lib/edge-agent \
         /etc/systemd/system/multi-user.target.wants/edge-agent.service \
         /etc/systemd/system/multi-user.target.wants/edge-mqtt.service; do
    ct test ! -e "$f" || fail "$f left after purge"
done
# Debian leaves system users and groups in place on purge (files they own
# may remain elsewhere; a reused uid would inherit them).
ct getent passwd edge-agent edge-mqtt
ct getent group i2c gpio edge-motion
say "purged: /etc/edge-agent, /etc/edge-mqtt, /var/lib/edge-agent gone; users and groups kept (Debian practice)"

step "shut down"
shutdown_container
say "all steps passed ($SECONDS s in all); transcript: $transcript"
