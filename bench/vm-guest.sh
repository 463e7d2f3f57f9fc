#!/bin/sh
# bench/vm-guest.sh - runs inside the VM as /test.sh (bench/vm-device packs
# it): W1, the storm, through raw inotify, raw /dev/inotify, watchd on the
# device backend (its client on signals, and on its record stream), and watchd
# on the syscall backend, in that VM, alternating, BENCH_REPS times. One "BENCH sys=... key=value..." line per trial.
N=${BENCH_N:-20000}
REPS=${BENCH_REPS:-3}
BUS=unix:path=/tmp/bus

insmod /inotify_dev.ko || { echo "BENCH-ERROR insmod inotify_dev.ko failed"; exit 1; }
[ -c /dev/inotify ] || { echo "BENCH-ERROR no /dev/inotify"; exit 1; }

cat > /tmp/bus.conf <<'CONF'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=/tmp/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
: > /tmp/watchd.conf

# utime+stime of a process, in clock ticks.
ticks() {
    [ -n "$1" ] && [ -r "/proc/$1/stat" ] || { echo 0; return; }
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

wait_for() {  # command... : up to 30 s
    n=0
    until "$@" > /dev/null 2>&1; do
        n=$((n + 1))
        [ $n -gt 3000 ] && return 1
        usleep 10000
    done
}

start_watchd() {
    rm -f /tmp/bus
    dbus-daemon --nofork --nopidfile --config-file=/tmp/bus.conf 2> /tmp/bus.log &
    BUSPID=$!
    wait_for test -S /tmp/bus || return 1
    /watchd --config /tmp/watchd.conf --address "$BUS" --backend "$1" 2> /tmp/watchd.log &
    WATCHDPID=$!
    wait_for sh -c "dbus-send --bus=$BUS --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.example.Inotify | grep -q 'boolean true'"
}

stop_watchd() {
    [ -n "$WATCHDPID" ] && kill "$WATCHDPID" && wait "$WATCHDPID"
    [ -n "$BUSPID" ] && kill "$BUSPID" && wait "$BUSPID"
    WATCHDPID= BUSPID=
}

trial() {  # system rep
    sys=$1 rep=$2 dir=/tmp/storm-$1-$2
    WATCHDPID= BUSPID=
    mkdir -p "$dir"
    case $sys in
        inotify) set -- /sink-inotify ;;
        device) set -- /sink-inotify --extra /dev/inotify ;;
        watchd-device|watchd-syscall|watchd-device-stream)
            backend=${sys#watchd-}
            if ! start_watchd "${backend%-stream}"; then
                echo "BENCH sys=$sys error=watchd-did-not-start $(tr '\n' ' ' < /tmp/watchd.log | cut -c1-200)"
                stop_watchd
                return
            fi
            case $sys in
                *-stream) set -- /sink-watchd --extra "stream:$BUS" ;;
                *) set -- /sink-watchd --extra "$BUS" ;;
            esac ;;
    esac
    # The last trial's "ready" must not be taken for this one's: the
    # redirection below truncates the file only when the child gets to it.
    rm -f /tmp/sink.out /tmp/sink.err
    "$@" --mode storm --dir "$dir" --expect "$N" --timeout-ms 300000 > /tmp/sink.out 2> /tmp/sink.err &
    sink=$!
    if ! wait_for grep -q '^ready' /tmp/sink.out; then
        echo "BENCH sys=$sys error=consumer-not-ready $(tr '\n' ' ' < /tmp/sink.err | cut -c1-200)"
        kill $sink; wait $sink; stop_watchd; rm -rf "$dir"
        return
    fi
    d0=$(ticks "$WATCHDPID") b0=$(ticks "$BUSPID")
    /writer create "$dir" "$N" > /tmp/writer.out
    wait $sink
    d1=$(ticks "$WATCHDPID") b1=$(ticks "$BUSPID")
    echo "BENCH sys=$sys rep=$rep n=$N $(grep = /tmp/writer.out | tr '\n' ' ')$(grep -v '^ready' /tmp/sink.out | grep = | tr '\n' ' ')daemon_ticks=$((d1 - d0)) bus_ticks=$((b1 - b0)) clk_tck=100"
    stop_watchd
    rm -rf "$dir"
}

echo "BENCH-INFO nproc=$(nproc) kernel=$(uname -r) max_queued_events=$(cat /proc/sys/fs/inotify/max_queued_events 2>/dev/null)"
# Warm-up (rep 0, not counted): TCG translates code on first use, which makes
# whichever system runs first look slow.
for sys in inotify device watchd-device watchd-device-stream watchd-syscall; do
    N0=$N N=$((N / 4))
    trial $sys 0
    N=$N0
done
rep=1
while [ $rep -le "$REPS" ]; do
    for sys in inotify device watchd-device watchd-device-stream watchd-syscall; do
        trial $sys $rep
    done
    rep=$((rep + 1))
done
rmmod inotify_dev
echo "BENCH-DONE"
