#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The NetworkManager VPN plugin against a real NetworkManager (1.42) in a network namespace on a
# private system bus: namespace a runs NetworkManager, which runs nm-mpt-service and through it
# mptd; namespace b runs the peer's mptd. Two veth paths join them.
#
#   import of a native profile, nmcli connection add with vpn.data, up (traffic over both paths,
#   per-path counters at the peer), down (mptd, device and profile file gone), mptd killed
#   (NetworkManager fails the connection, with the reason in its log), bad vpn.data (nmcli
#   connection up prints the plugin's message through its agent and nm-mpt-auth-dialog; without
#   an agent it is in the log; nmcli connection export prints it), import of a broken file
#   (FILE:LINE), export and re-import (same vpn.data), secrets (in secure mode: Key-flags=2 and
#   Key-flags=1 brought up with nmcli --ask and the key on stdin, nothing stored; the failure
#   without the key, with nmcli's agent and with none; KeyFile= needs no secret), the tunnel
#   carrying the default route (ipv4.never-default no: a path with only LocalAddress= gets a host
#   route from the service, a path with Interface= is bound to it; either way the peer hears the
#   path on its own interface and `ip route get` shows where the remote goes), NetworkManager's
#   exit (mptd stopped). mptd runs as the user MPT_NM_MPTD_USER names (nobody here) with
#   CAP_NET_ADMIN alone once it has set up. The handshake: a connection with the other end's PublicKey asks for this
#   end's PrivateKey (PrivateKey-flags=2, nmcli --ask) and comes up with a session. A connection that belongs to a user (connection.permissions) cannot make the
#   service read a file: KeyFile= is refused with one message whether the root-only file exists or
#   not, and strace of the service shows that no system call named either file. A tunnel name that
#   is a system tunnel's (/etc/mpt/NAME.conf, a .netdev file's [NetDev] Name=) or an existing
#   interface's is refused, with the reason.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/netns.sh"
# shellcheck source=../lib/private-bus.sh
. "$here/../lib/private-bus.sh"
# shellcheck source=../lib/nm-lab.sh
. "$here/../lib/nm-lab.sh"

: "${MESON_BUILD_ROOT:?run through meson test}"
BUILD=$MESON_BUILD_ROOT
SERVICE=$BUILD/plugins/networkmanager/service/nm-mpt-service
PLUGIN=$BUILD/plugins/networkmanager/editor-plugin/libnm-vpn-plugin-mpt.so
AUTH_DIALOG=$BUILD/plugins/networkmanager/auth-dialog/nm-mpt-auth-dialog

[ -x /usr/sbin/NetworkManager ] || lab_skip "needs NetworkManager (network-manager)"
command -v nmcli >/dev/null || lab_skip "needs nmcli"
command -v dbus-daemon >/dev/null || lab_skip "needs dbus-daemon"
[ -x "$SERVICE" ] && [ -f "$PLUGIN" ] && [ -x "$AUTH_DIALOG" ] || lab_die "plugin not built: $SERVICE $PLUGIN $AUTH_DIALOG"

lab_init

T=$LAB_DIR/nm
export T
CREATED_RUN_NM=
CREATED_ETC_MPT=
NM_PID=
DBUS_PID=

nm_cleanup() {
        local rc=$?
        # NetworkManager first: its VPN service then stops mptd (watch-peer).
        if [ -n "$NM_PID" ]; then
                kill -TERM "$NM_PID" 2>/dev/null || true
                for _ in $(seq 100); do kill -0 "$NM_PID" 2>/dev/null || break; sleep 0.1; done
                kill -KILL "$NM_PID" 2>/dev/null || true
                wait "$NM_PID" 2>/dev/null || true
        fi
        if [ -n "$DBUS_PID" ]; then
                kill -TERM "$DBUS_PID" 2>/dev/null || true
                wait "$DBUS_PID" 2>/dev/null || true
        fi
        [ -n "$CREATED_RUN_NM" ] && rmdir /run/NetworkManager 2>/dev/null
        [ -n "$CREATED_ETC_MPT" ] && rmdir /etc/mpt 2>/dev/null
        # For a closer look at a failure: MPT_NM_KEEP_LOGS=DIR keeps NetworkManager's log.
        if [ -n "${MPT_NM_KEEP_LOGS:-}" ]; then
                cp "$LAB_DIR/nm.log" "$MPT_NM_KEEP_LOGS/" 2>/dev/null || true
        fi
        lab_cleanup "$rc"
}
trap nm_cleanup EXIT

step() {
        lab_log "== $*"
}

# ---- lab: two IPv4 paths, the peer's mptd in b ----
lab_topology 2 none 4
# The pre-shared key (MPT_LAB_MODE=secure): the steps below work with Key and Key-flags; the
# handshake (PrivateKey) has a step of its own at the end.
MPT_LAB_MODE=secure lab_profiles 2 4 4
lab_start b

# ---- private bus, NetworkManager in a ----
mkdir -p "$T/etc/system-connections" "$T/etc/VPN" "$T/run" "$T/lib" "$T/sysconf.d" "$T/vpn-user" \
        "$T/dbusrun" "$T/dbus-system.d" "$LAB_DIR/run-a" "$T/etc-mpt" "$T/etc-networkd"
cp "$here/../../plugins/networkmanager/nm-mpt-service.conf" "$T/dbus-system.d/"
private_bus_config "$T/dbusrun/system_bus_socket" "$T/dbus-system.d" > "$T/dbus.conf"
dbus-daemon --config-file="$T/dbus.conf" --nofork >"$LAB_DIR/dbus.log" 2>&1 &
DBUS_PID=$!
for _ in $(seq 100); do [ -S "$T/dbusrun/system_bus_socket" ] && break; sleep 0.05; done
[ -S "$T/dbusrun/system_bus_socket" ] || lab_die "dbus-daemon did not start"
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/dbusrun/system_bus_socket
export NM_VPN_PLUGIN_DIR=$T/vpn-user

# The service runs under strace (its file system calls) while $T/trace-service exists.
cat > "$T/service-wrapper" <<EOF
#!/bin/sh
[ -e "$T/trace-service" ] && exec strace -f -qq -e trace=%file -o "$T/service.strace.\$\$" "$SERVICE" "\$@"
exec "$SERVICE" "\$@"
EOF
chmod 0755 "$T/service-wrapper"
nm_lab_files "$T" pa0 $'level=DEBUG\ndomains=ALL,VPN_PLUGIN:TRACE,VPN:TRACE' "$T/service-wrapper" "$PLUGIN" "$AUTH_DIALOG"
# libnm refuses plugin files that others may write.
chmod go-w "$SERVICE" "$PLUGIN"

if [ ! -d /run/NetworkManager ]; then
        mkdir /run/NetworkManager
        CREATED_RUN_NM=1
fi
# Mount points for the namespace's own /etc/mpt and /etc/systemd/network (nm-in-ns.sh).
if [ ! -d /etc/mpt ]; then
        mkdir /etc/mpt
        CREATED_ETC_MPT=1
fi
[ -d /etc/systemd/network ] || lab_skip "needs /etc/systemd/network (systemd)"
# The VPN service and mptd inherit NetworkManager's environment: the build tree's mptd, the
# lab's runtime directory for a (so lab_ctl a reaches the tunnel), and the user mptd becomes
# once it has set up (the system's "mpt" by default, which the test machine may not have).
MPT_NM_MPTD=$MPTD MPT_RUNTIME_DIR=$LAB_DIR/run-a MPT_NM_MPTD_USER=nobody \
        ip netns exec "$(lab_ns a)" "$here/nm-in-ns.sh" >"$LAB_DIR/nm.log" 2>&1 &
NM_PID=$!
for _ in $(seq 200); do
        [ "$(nmcli -t -f RUNNING general 2>/dev/null)" = running ] && break
        kill -0 "$NM_PID" 2>/dev/null || lab_die "NetworkManager exited"
        sleep 0.05
done
[ "$(nmcli -t -f RUNNING general)" = running ] || lab_die "NetworkManager did not start"

# A VPN needs an activated base connection with a default route.
nmcli connection add type ethernet ifname pa0 con-name base ipv4.method manual \
        ipv4.addresses "$(lab_path_addr a 0 4)/24" ipv4.gateway "$(lab_path_addr b 0 4)" ipv6.method disabled >/dev/null
nmcli --wait 60 connection up base >/dev/null || lab_die "base connection did not come up"

# helpers
vpn_data() { nmcli -g vpn.data connection show "$1"; }
tunnel_pid() { lab_json a "t['pid']"; }
wait_until() { # TIMEOUT_S COMMAND...: polls until COMMAND succeeds
        local end=$((SECONDS + $1))
        shift
        while [ "$SECONDS" -le "$end" ]; do
                "$@" && return 0
                sleep 0.1
        done
        return 1
}
dev_gone() { ! lab_exec a ip link show lab >/dev/null 2>&1; }
proc_gone() { [ ! -d "/proc/$1" ] || [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" = Z ]; }
not_active() { ! nmcli -t -f NAME connection show --active | grep -qx "$1"; }
up_and_ping() { # CONNECTION
        nmcli --wait 90 connection up "$1" >"$LAB_DIR/up.out" 2>&1 ||
                lab_die "nmcli connection up $1 failed: $(cat "$LAB_DIR/up.out")"
        lab_exec a ip -4 addr show dev lab | grep -q "inet $(lab_tunnel_addr a 4)/24" ||
                lab_die "tunnel address missing: $(lab_exec a ip addr show dev lab)"
        wait_until 20 lab_exec a ping -c 1 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null ||
                lab_die "no ping through the tunnel"
}
down_and_check() { # CONNECTION
        local pid
        pid=$(tunnel_pid)
        nmcli --wait 60 connection down "$1" >/dev/null || lab_die "nmcli connection down $1 failed"
        wait_until 20 proc_gone "$pid" || lab_die "mptd (pid $pid) still runs after down"
        wait_until 20 dev_gone || lab_die "device lab still exists after down"
        # The service removes it once it has reaped mptd, which may be a moment after mptd is gone.
        wait_until 20 test ! -e "$LAB_DIR/run-a/lab.nm.conf" || lab_die "the private profile file is left behind"
}
activate_without_agent() { # CONNECTION: activation straight over D-Bus, no secret agent at all;
        # NetworkManager fails it for want of an agent.
        gdbus call --system --dest org.freedesktop.NetworkManager --object-path /org/freedesktop/NetworkManager \
                --method org.freedesktop.NetworkManager.ActivateConnection \
                "$(nmcli -t -f NAME,DBUS-PATH connection show | sed -n "s/^$1://p")" / / >/dev/null ||
                lab_die "ActivateConnection $1 failed"
        wait_until 30 grep -q "\"$1\".*failed to request VPN secrets.*No agents were available" "$LAB_DIR/nm.log" ||
                lab_die "$1: no failure for want of an agent: $(grep "\"$1\"" "$LAB_DIR/nm.log" | grep -v trace | tail -n 5)"
}
both_paths_carry() { # LABEL SECONDS: iperf3 through the tunnel; the peer hears it on both paths
        local b0 b1 e0 e1
        b0=$(lab_json b "p['p0']['rx_packets']")
        b1=$(lab_json b "p['p1']['rx_packets']")
        lab_iperf_tcp "$(lab_tunnel_addr b 4)" "$2" >"$LAB_DIR/iperf.mbit"
        e0=$(lab_json b "p['p0']['rx_packets']")
        e1=$(lab_json b "p['p1']['rx_packets']")
        lab_log "$1: $(cat "$LAB_DIR/iperf.mbit") Mbit/s; peer rx packets p0 +$((e0 - b0)), p1 +$((e1 - b1))"
        [ $((e0 - b0)) -gt 100 ] && [ $((e1 - b1)) -gt 100 ] || lab_die "$1: traffic did not use both paths"
}

# ---- import a native profile ----
step "import"
out=$(nmcli connection import type mpt file "$LAB_DIR/a.conf" 2>&1) || lab_die "import failed: $out"
imported_uuid=$(printf '%s\n' "$out" | grep -o '[0-9a-f]\{8\}-[0-9a-f-]\{27\}' | head -n 1)
[ -n "$imported_uuid" ] || lab_die "no uuid in: $out"
data=$(vpn_data "$imported_uuid")
for want in "Name = lab" "Path0.Interface = pa0" "Path1.Remote = $(lab_path_addr b 1 4)" \
            "Address = $(lab_tunnel_addr a 4)/24" "Peer = $(lab_tunnel_addr b 4)"; do
        case ", $data, " in *", $want, "*) ;; *) lab_die "imported vpn.data lacks '$want': $data" ;; esac
done
nmcli connection modify "$imported_uuid" ipv4.never-default yes ipv6.method ignore
if [ -n "$LAB_KEY" ]; then
        # The pre-shared key is a secret: in vpn.secrets, never in vpn.data.
        case "$data" in *Key*) lab_die "the key leaked into vpn.data: $data" ;; esac
        has_key() { [ "$(nmcli -s -g vpn.secrets connection show "$1")" = "Key = $LAB_KEY" ]; }
        wait_until 10 has_key "$imported_uuid" ||
                lab_die "imported vpn.secrets: $(nmcli -s -g vpn.secrets connection show "$imported_uuid")"
fi

step "up (imported) and ping"
up_and_ping "$imported_uuid"
# mptd under NetworkManager drops root as the unit does: nobody here, only CAP_NET_ADMIN.
pid=$(tunnel_pid)
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")" = 65534 ] ||
        lab_die "mptd under NetworkManager runs as uid $(awk '/^Uid:/ { print $2 }' "/proc/$pid/status"), expected nobody"
[ "$(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status")" = 0000000000001000 ] ||
        lab_die "mptd under NetworkManager has capabilities $(awk '/^CapEff:/ { print $2 }' "/proc/$pid/status"), expected CAP_NET_ADMIN alone"
lab_exec a ip -d link show lab | grep -q "tun type tun" || lab_die "lab is not a TUN device"
[ "$(stat -c %a "$LAB_DIR/run-a/lab.nm.conf")" = 600 ] || lab_die "the private profile file is not 0600"
step "export and re-import"
nmcli connection export "$imported_uuid" "$LAB_DIR/export.conf" >/dev/null || lab_die "export failed"
"$MPTD" --check "$LAB_DIR/export.conf" >/dev/null || lab_die "mptd refuses the export: $(cat "$LAB_DIR/export.conf")"
if [ -n "$LAB_KEY" ]; then
        grep -qx "Key=$LAB_KEY" "$LAB_DIR/export.conf" || lab_die "the export lacks the key"
        [ "$(stat -c %a "$LAB_DIR/export.conf")" = 600 ] || lab_die "an export with the key is not 0600"
fi
cp "$LAB_DIR/export.conf" "$LAB_DIR/reimport.conf"
out=$(nmcli connection import type mpt file "$LAB_DIR/reimport.conf" 2>&1) || lab_die "re-import failed: $out"
re_uuid=$(printf '%s\n' "$out" | grep -o '[0-9a-f]\{8\}-[0-9a-f-]\{27\}' | head -n 1)
[ "$(vpn_data "$re_uuid")" = "$(vpn_data "$imported_uuid")" ] ||
        lab_die "round trip differs: '$(vpn_data "$re_uuid")' vs '$(vpn_data "$imported_uuid")'"
nmcli connection delete "$re_uuid" >/dev/null
step "down (imported)"
down_and_check "$imported_uuid"

# ---- nmcli connection add with vpn.data ----
step "add"
nmcli connection add type vpn con-name mpt-add vpn-type mpt ipv4.never-default yes ipv6.method ignore \
        vpn.data "Name=lab, Address=$(lab_tunnel_addr a 4)/24, Peer=$(lab_tunnel_addr b 4), Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4), Path1.Interface=pa1, Path1.Remote=$(lab_path_addr b 1 4)" \
        >/dev/null || lab_die "nmcli connection add failed"
step "up (added), traffic over both paths"
if [ -n "$LAB_KEY" ]; then
        nmcli connection modify mpt-add vpn.secrets "Key=$LAB_KEY" || lab_die "cannot set the key"
        [ "$(nmcli -s -g vpn.secrets connection show mpt-add)" = "Key = $LAB_KEY" ] ||
                lab_die "vpn.secrets: $(nmcli -s -g vpn.secrets connection show mpt-add)"
else
        nmcli connection modify mpt-add +vpn.data "Mode=compat" || lab_die "cannot set Mode=compat"
fi
up_and_ping mpt-add
both_paths_carry "iperf3 through the tunnel" 3
step "down (added)"
down_and_check mpt-add

# ---- mptd dies: NetworkManager fails the connection ----
step "mptd killed"
up_and_ping mpt-add
pid=$(tunnel_pid)
nmcli monitor >"$LAB_DIR/monitor.out" 2>&1 &
monitor_pid=$!
LAB_PIDS+=("$monitor_pid")
kill -KILL "$pid"
wait_until 30 not_active mpt-add || lab_die "the connection is still active after mptd died"
wait_until 20 dev_gone || lab_die "device lab left behind after mptd died"
grep -q "mptd (pid $pid) for tunnel 'lab' was killed by signal 9" "$LAB_DIR/nm.log" ||
        lab_die "the service did not log mptd's death"
grep -q '"mpt-add".*set state: failed (was activated)' "$LAB_DIR/nm.log" ||
        lab_die "NetworkManager did not fail the connection: $(grep '"mpt-add"' "$LAB_DIR/nm.log" | tail -n 5)"
kill "$monitor_pid" 2>/dev/null || true
wait "$monitor_pid" 2>/dev/null || true
lab_log "nmcli monitor: $(tr '\n' '|' < "$LAB_DIR/monitor.out")"
state=$(nmcli -g GENERAL.STATE connection show mpt-add 2>/dev/null || true)
[ -z "$state" ] || lab_die "connection state after failure: $state"

# ---- bad vpn.data: the plugin's message ----
step "bad vpn.data"
nmcli connection add type vpn con-name mpt-bad vpn-type mpt \
        vpn.data "Address=10.78.0.1/24, Path0.Interface=pa1, Path0.Remote=not-an-ip" >/dev/null ||
        lab_die "nmcli connection add (bad) failed"
if nmcli --wait 60 connection up mpt-bad >"$LAB_DIR/bad.out" 2>&1; then
        lab_die "a connection with a bad Remote= came up"
fi
lab_log "nmcli: $(cat "$LAB_DIR/bad.out")"
bad_msg="vpn.data: Path0.Remote: invalid Remote= 'not-an-ip': not an IPv4 or IPv6 address"
# nmcli's secret agent ran the auth dialog, which printed the service's message.
grep -q "^nm-mpt-auth-dialog: mpt-bad: $bad_msg" "$LAB_DIR/bad.out" || lab_die "nmcli does not show the plugin's message"
grep -q "^Error: Connection activation failed" "$LAB_DIR/bad.out" || lab_die "nmcli does not say that it failed"
grep -q "$bad_msg" "$LAB_DIR/nm.log" || lab_die "the plugin's message is not in NetworkManager's log"
# Without an agent (activation straight over D-Bus): the message is in the log only, and
# NetworkManager fails the connection for want of an agent to show it to.
n_msgs=$(grep -c "nm-mpt-service.*$bad_msg" "$LAB_DIR/nm.log")
activate_without_agent mpt-bad
more_msgs() { [ "$(grep -c "nm-mpt-service.*$bad_msg" "$LAB_DIR/nm.log")" -gt "$n_msgs" ]; }
wait_until 20 more_msgs ||
        lab_die "the service did not log the message again: $(grep -n "invalid Remote" "$LAB_DIR/nm.log")"
wait_until 20 not_active mpt-bad || lab_die "mpt-bad is active"
# nmcli connection export checks the connection as well.
if out=$(nmcli connection export mpt-bad 2>&1); then
        lab_die "a broken connection was exported: $out"
fi
lab_log "nmcli export: $out"
case "$out" in *"$bad_msg"*) ;; *) lab_die "unexpected export error: $out" ;; esac

# ---- import of a broken file ----
step "broken import"
printf '[Tunnel]\nName=broken\nMode=compat\n[Path]\nInterface=pa0\nRemote=10.0.0.1\nWeight=heavy\n' > "$LAB_DIR/broken.conf"
if out=$(nmcli connection import type mpt file "$LAB_DIR/broken.conf" 2>&1); then
        lab_die "a broken file was imported: $out"
fi
lab_log "nmcli: $out"
case "$out" in
*"$LAB_DIR/broken.conf:7: invalid Weight= 'heavy': expected 0..10000"*) ;;
*) lab_die "unexpected import error: $out" ;;
esac

# ---- secrets: the key from an agent (nmcli --ask runs the auth dialog), or from KeyFile= ----
if [ -n "$LAB_KEY" ]; then
        step "key not saved (Key-flags=2): nmcli --ask"
        nmcli connection add type vpn con-name mpt-ask vpn-type mpt ipv4.never-default yes ipv6.method ignore \
                vpn.data "Name=lab, Address=$(lab_tunnel_addr a 4)/24, Peer=$(lab_tunnel_addr b 4), Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4), Path1.Interface=pa1, Path1.Remote=$(lab_path_addr b 1 4), Key-flags=2" \
                >/dev/null || lab_die "nmcli connection add (not saved) failed"
        ask_up() { # CONNECTION: up with nmcli --ask, the key on stdin
                printf '%s\n' "$LAB_KEY" | nmcli --ask --wait 90 connection up "$1" >"$LAB_DIR/ask.out" 2>&1 ||
                        lab_die "nmcli --ask connection up $1 failed: $(cat "$LAB_DIR/ask.out")"
                lab_log "nmcli --ask: $(tr '\n' '|' < "$LAB_DIR/ask.out")"
                grep -q "The mpt connection '$1' needs its pre-shared key" "$LAB_DIR/ask.out" ||
                        lab_die "nmcli did not show the auth dialog's description"
                grep -q "Pre-shared key (vpn.secrets.Key): " "$LAB_DIR/ask.out" || lab_die "nmcli did not prompt for the key"
                wait_until 20 lab_exec a ping -c 1 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null ||
                        lab_die "no ping through the tunnel"
        }
        keyfile_of() { grep -l "^id=$1\$" "$T"/etc/system-connections/*; }
        ask_up mpt-ask
        [ -z "$(nmcli -s -g vpn.secrets connection show mpt-ask)" ] ||
                lab_die "a not-saved key was stored: $(nmcli -s -g vpn.secrets connection show mpt-ask)"
        ! grep -q "$LAB_KEY" "$(keyfile_of mpt-ask)" || lab_die "the not-saved key is in the keyfile"
        down_and_check mpt-ask

        step "agent-owned key (Key-flags=1): nmcli --ask"
        nmcli connection modify mpt-ask vpn.data "$(vpn_data mpt-ask | sed 's/Key-flags = 2/Key-flags = 1/')" ||
                lab_die "cannot set Key-flags=1"
        case "$(vpn_data mpt-ask)" in *"Key-flags = 1"*) ;; *) lab_die "vpn.data: $(vpn_data mpt-ask)" ;; esac
        ask_up mpt-ask
        ! grep -q "$LAB_KEY" "$(keyfile_of mpt-ask)" || lab_die "the agent-owned key is in the keyfile"
        down_and_check mpt-ask

        step "no key from the agent"
        if nmcli --wait 90 connection up mpt-ask </dev/null >"$LAB_DIR/nokey.out" 2>&1; then
                lab_die "the connection came up without its key"
        fi
        lab_log "nmcli (no --ask): $(tr '\n' '|' < "$LAB_DIR/nokey.out")"
        grep -q "The mpt connection 'mpt-ask' needs its pre-shared key" "$LAB_DIR/nokey.out" ||
                lab_die "nmcli did not show why"
        grep -q "Error: Connection activation failed: No valid secrets" "$LAB_DIR/nokey.out" ||
                lab_die "unexpected reason"
        wait_until 20 not_active mpt-ask || lab_die "mpt-ask is active"
        # No agent at all (activation straight over D-Bus): NetworkManager fails it the same way.
        activate_without_agent mpt-ask
        wait_until 20 not_active mpt-ask || lab_die "mpt-ask is active"

        step "malformed stored key: nmcli --ask asks again"
        nmcli connection modify mpt-ask vpn.data "$(vpn_data mpt-ask | sed 's/Key-flags = 1/Key-flags = 0/')" \
                vpn.secrets "Key=not-a-key" || lab_die "cannot store a malformed key"
        # nmcli puts the stored value in the prompt's line: erase it (Ctrl-U), as a user would.
        printf '\025%s\n' "$LAB_KEY" | nmcli --ask --wait 90 connection up mpt-ask >"$LAB_DIR/ask.out" 2>&1 ||
                lab_die "nmcli --ask connection up with a malformed key failed: $(cat "$LAB_DIR/ask.out")"
        lab_log "nmcli --ask: $(tr '\n' '|' < "$LAB_DIR/ask.out")"
        grep -q "^vpn.secrets: Key: invalid Key=" "$LAB_DIR/ask.out" ||
                lab_die "nmcli did not say what is wrong with the key"
        wait_until 20 lab_exec a ping -c 1 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || lab_die "no ping through the tunnel"
        down_and_check mpt-ask

        step "KeyFile= (root-only file): no secret needed"
        (umask 077 && printf '%s\n' "$LAB_KEY" > "$LAB_DIR/lab.key")
        nmcli connection add type vpn con-name mpt-keyfile vpn-type mpt ipv4.never-default yes ipv6.method ignore \
                vpn.data "Name=lab, KeyFile=$LAB_DIR/lab.key, Address=$(lab_tunnel_addr a 4)/24, Peer=$(lab_tunnel_addr b 4), Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4), Path1.Interface=pa1, Path1.Remote=$(lab_path_addr b 1 4)" \
                >/dev/null || lab_die "nmcli connection add (KeyFile=) failed"
        up_and_ping mpt-keyfile
        ! grep -q "Pre-shared key" "$LAB_DIR/up.out" || lab_die "asked for a key despite KeyFile=: $(cat "$LAB_DIR/up.out")"
        down_and_check mpt-keyfile

        step "a user's connection cannot make the service read a file"
        # A key only root may read, and a name that does not exist: the same message for both, and
        # strace shows that the service (root) named neither in any system call.
        mkdir -m 0700 "$LAB_DIR/root-only"
        (umask 077 && printf '%s\n' "$LAB_KEY" > "$LAB_DIR/root-only/corp.key")
        : > "$T/trace-service"
        user_msgs=()
        for f in "$LAB_DIR/root-only/corp.key" "$LAB_DIR/root-only/missing.key"; do
                nmcli connection delete mpt-user >/dev/null 2>&1 || true
                nmcli connection add type vpn con-name mpt-user vpn-type mpt connection.permissions user:nobody \
                        ipv4.never-default yes ipv6.method ignore \
                        vpn.data "Name=lab, KeyFile=$f, Address=$(lab_tunnel_addr a 4)/24, Peer=$(lab_tunnel_addr b 4), Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4), Path1.Interface=pa1, Path1.Remote=$(lab_path_addr b 1 4)" \
                        >/dev/null || lab_die "nmcli connection add (user's, KeyFile=) failed"
                [ "$(nmcli -g connection.permissions connection show mpt-user)" = 'user\:nobody' ] ||
                        lab_die "permissions: $(nmcli -g connection.permissions connection show mpt-user)"
                n_before=$(grep -c "nm-mpt-service.*KeyFile= is refused" "$LAB_DIR/nm.log" || true)
                if nmcli --wait 60 connection up mpt-user >"$LAB_DIR/user.out" 2>&1; then
                        lab_die "a user's connection with KeyFile=$f came up"
                fi
                lab_log "nmcli: $(tr '\n' '|' < "$LAB_DIR/user.out")"
                refused() { [ "$(grep -c "nm-mpt-service.*KeyFile= is refused" "$LAB_DIR/nm.log")" -gt "$n_before" ]; }
                wait_until 20 refused ||
                        lab_die "the service did not refuse KeyFile=$f: $(grep nm-mpt-service "$LAB_DIR/nm.log" | tail -n 5)"
                wait_until 20 not_active mpt-user || lab_die "mpt-user is active"
                user_msgs+=("$(grep -o "vpn.data: KeyFile: KeyFile= is refused.*" "$LAB_DIR/nm.log" | tail -n 1)")
        done
        rm -f "$T/trace-service"
        lab_log "service: ${user_msgs[0]}"
        case "${user_msgs[0]}" in
        "vpn.data: KeyFile: KeyFile= is refused: this connection belongs to user 'nobody' (connection.permissions)"*) ;;
        *) lab_die "unexpected message: ${user_msgs[0]}" ;;
        esac
        [ "${user_msgs[0]}" = "${user_msgs[1]}" ] ||
                lab_die "the messages tell whether the file exists: '${user_msgs[0]}' vs '${user_msgs[1]}'"
        traces=$(find "$T" -maxdepth 1 -name 'service.strace.*' | wc -l)
        [ "$traces" -ge 1 ] || lab_die "the service did not run under strace"
        # The trace is real: it holds the service's own file system calls. strace may not have
        # written them yet while the service runs on (its output is buffered; under the
        # sanitizers a fresh clone's run once found none at this point): wait for them.
        traced() { cat "$T"/service.strace.* | grep -q 'openat('; }
        wait_until 15 traced || lab_die "no openat() in the service's trace"
        ! grep -h "root-only" "$T"/service.strace.* ||
                lab_die "the service touched the user's key file: $(grep -h root-only "$T"/service.strace.*)"
        lab_log "strace: $traces service process(es), $(cat "$T"/service.strace.* | wc -l) file system calls, none of root-only/"
        # The user's connection with the key in vpn.secrets comes up.
        nmcli connection modify mpt-user vpn.data "$(vpn_data mpt-user | sed 's|KeyFile = [^,]*, ||')" \
                vpn.secrets "Key=$LAB_KEY" || lab_die "cannot give mpt-user its key"
        case "$(vpn_data mpt-user)" in *KeyFile*) lab_die "KeyFile= still set: $(vpn_data mpt-user)" ;; esac
        up_and_ping mpt-user
        down_and_check mpt-user
        nmcli connection delete mpt-user >/dev/null
fi

# ---- the handshake: this end's private key is the secret, the other end's public key data ----
step "handshake, private key not saved (PrivateKey-flags=2): nmcli --ask"
lab_pair_init
lab_stop b
sed -e '/^Key=/d' -e '/^Mode=/d' -e "s|^Name=lab\$|Name=lab\nPrivateKey=$LAB_PRIVATE_b\nPublicKey=$LAB_PUBLIC_a|" \
        "$LAB_DIR/b.conf" > "$LAB_DIR/b-hs.conf"
chmod 600 "$LAB_DIR/b-hs.conf"
lab_start b "$LAB_DIR/b-hs.conf"
nmcli connection add type vpn con-name mpt-hs vpn-type mpt ipv4.never-default yes ipv6.method ignore \
        vpn.data "Name=lab, PublicKey=$LAB_PUBLIC_b, Address=$(lab_tunnel_addr a 4)/24, Peer=$(lab_tunnel_addr b 4), Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4), Path1.Interface=pa1, Path1.Remote=$(lab_path_addr b 1 4), PrivateKey-flags=2" \
        >/dev/null || lab_die "nmcli connection add (handshake) failed"
printf '%s\n' "$LAB_PRIVATE_a" | nmcli --ask --wait 90 connection up mpt-hs >"$LAB_DIR/ask.out" 2>&1 ||
        lab_die "nmcli --ask connection up mpt-hs failed: $(cat "$LAB_DIR/ask.out")"
lab_log "nmcli --ask: $(tr '\n' '|' < "$LAB_DIR/ask.out")"
grep -q "needs this computer's private key" "$LAB_DIR/ask.out" || lab_die "nmcli did not show the auth dialog's description"
grep -q "Private key (vpn.secrets.PrivateKey): " "$LAB_DIR/ask.out" || lab_die "nmcli did not prompt for the private key"
wait_until 20 lab_exec a ping -c 1 -W 1 "$(lab_tunnel_addr b 4)" >/dev/null || lab_die "no ping through the tunnel (handshake)"
[ "$(lab_json b 't["keys"]')" = handshake ] && [ "$(lab_json b 't["sessions"]')" -ge 1 ] ||
        lab_die "the peer has no handshake session"
[ -z "$(nmcli -s -g vpn.secrets connection show mpt-hs)" ] ||
        lab_die "a not-saved private key was stored: $(nmcli -s -g vpn.secrets connection show mpt-hs)"
down_and_check mpt-hs
nmcli connection delete mpt-hs >/dev/null
lab_stop b
lab_start b

# ---- a tunnel name must be its own: not a system tunnel's, not an existing interface's ----
step "names of the system's tunnels and of interfaces are refused"
printf '[Tunnel]\nMode=compat\n[Path]\nInterface=eth0\nRemote=192.0.2.1\n' > "$T/etc-mpt/sys0.conf"
printf '[NetDev]\nName=nd0\nKind=tun\n[Tun]\nMultiQueue=yes\n' > "$T/etc-networkd/nd0.netdev"
for case in "sys0|'sys0' is the name of the system tunnel /etc/mpt/sys0.conf" \
            "nd0|'nd0' is the name of the device of /etc/systemd/network/nd0.netdev" \
            "pa1|an interface named 'pa1' exists already"; do
        name=${case%%|*}
        want="vpn.data: Name: ${case#*|}"
        nmcli connection add type vpn con-name mpt-name vpn-type mpt ipv4.never-default yes ipv6.method ignore \
                vpn.data "Name=$name, Mode=compat, Address=$(lab_tunnel_addr a 4)/24, Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4)" \
                >/dev/null || lab_die "nmcli connection add (Name=$name) failed"
        if nmcli --wait 60 connection up mpt-name >"$LAB_DIR/name.out" 2>&1; then
                lab_die "a connection named '$name' came up"
        fi
        lab_log "nmcli: $(tr '\n' '|' < "$LAB_DIR/name.out")"
        grep -qF "nm-mpt-auth-dialog: mpt-name: $want" "$LAB_DIR/name.out" ||
                lab_die "nmcli does not show why '$name' is refused: $(cat "$LAB_DIR/name.out")"
        wait_until 20 not_active mpt-name || lab_die "mpt-name is active"
        nmcli connection delete mpt-name >/dev/null
done
! lab_exec a ip link show nd0 >/dev/null 2>&1 || lab_die "a device nd0 was created"
! lab_exec a ip link show sys0 >/dev/null 2>&1 || lab_die "a device sys0 was created"

# ---- the tunnel carries the default route: every path stays on its own interface ----
# Path 1's remote is reached only through a default route on pa1 (no subnet of pa1 covers it;
# metric 90, so it beats the base connection's default). Once the VPN's default route (metric 50)
# is there, the routing table alone would send path 1's packets into the tunnel.
step "default route through the tunnel"
a1=$(lab_path_addr a 1 4)
r1=$(lab_path_addr b 1 4)
lab_exec a ip addr del "$a1/24" dev pa1
lab_exec a ip addr add "$a1/32" dev pa1
lab_exec a ip route add default via "$r1" dev pa1 onlink metric 90
route_dev() { # ip route get ARGS...: the device
        lab_exec a ip -o route get "$@" | sed -n 's/.* dev \([^ ]*\).*/\1/p'
}
both_paths_carry_up() { # LABEL: both_paths_carry, and path 1 is up at a
        both_paths_carry "$1" 2
        [ "$(lab_json a "t['paths'][1]['state']")" = up ] || lab_die "$1: path 1 is $(lab_json a "t['paths'][1]")"
}
# (1) A path without Interface= (LocalAddress= only): the service pins its remote with a host route.
nmcli connection add type vpn con-name mpt-def vpn-type mpt ipv4.never-default no ipv6.method ignore \
        vpn.data "Name=lab, Address=$(lab_tunnel_addr a 4)/24, Peer=$(lab_tunnel_addr b 4), Path0.Interface=pa0, Path0.Remote=$(lab_path_addr b 0 4), Path1.LocalAddress=$a1, Path1.Remote=$r1" \
        >/dev/null || lab_die "nmcli connection add (default route) failed"
if [ -n "$LAB_KEY" ]; then
        nmcli connection modify mpt-def vpn.secrets "Key=$LAB_KEY" || lab_die "cannot set the key"
else
        nmcli connection modify mpt-def +vpn.data "Mode=compat" || lab_die "cannot set Mode=compat"
fi
up_and_ping mpt-def
[ "$(route_dev 192.0.2.1)" = lab ] || lab_die "the tunnel does not carry the default route: $(lab_exec a ip route)"
[ "$(route_dev "$r1")" = pa1 ] ||
        lab_die "path 1's remote is routed into the tunnel: $(lab_exec a ip -o route get "$r1"); $(lab_exec a ip route)"
lab_exec a ip route show "$r1/32" | grep -q "via $r1 dev pa1 .*metric 50" ||
        lab_die "no host route to $r1: $(lab_exec a ip route)"
grep -q "path 'path1': host route to $r1 via $r1 dev pa1" "$LAB_DIR/nm.log" || lab_die "the service did not log the host route: $(grep -i "route\|started mptd" "$LAB_DIR/nm.log" | tail -n 5)"
both_paths_carry_up "default route, unbound path 1"
down_and_check mpt-def
[ -z "$(lab_exec a ip route show "$r1/32")" ] || lab_die "the host route outlived the tunnel: $(lab_exec a ip route)"
# (2) Paths with Interface= are bound to it (SO_BINDTODEVICE): no host route needed, although the
# table alone now sends path 1's remote into the tunnel.
nmcli connection modify mpt-add ipv4.never-default no
up_and_ping mpt-add
[ "$(route_dev "$r1")" = lab ] || lab_die "expected the table to route $r1 into the tunnel: $(lab_exec a ip route)"
[ "$(route_dev "$r1" oif pa1)" = pa1 ] || lab_die "no route to $r1 through pa1: $(lab_exec a ip route)"
both_paths_carry_up "default route, bound path 1"
down_and_check mpt-add
nmcli connection modify mpt-add ipv4.never-default yes
lab_exec a ip route del default via "$r1" dev pa1 metric 90
lab_exec a ip addr del "$a1/32" dev pa1
lab_exec a ip addr add "$a1/24" dev pa1

# ---- NetworkManager exits: the service stops mptd ----
step "NetworkManager exits"
up_and_ping mpt-add
pid=$(tunnel_pid)
kill -TERM "$NM_PID"
wait "$NM_PID" 2>/dev/null || true
NM_PID=
wait_until 30 proc_gone "$pid" || lab_die "mptd (pid $pid) outlived NetworkManager"
wait_until 20 dev_gone || lab_die "device lab left behind after NetworkManager exited"

lab_log "PASS"
