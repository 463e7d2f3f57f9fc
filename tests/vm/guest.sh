#!/bin/sh
# tests/vm/guest.sh - runs inside the VM (as /test.sh): load the module, run
# the conformance suite, the example program, the stress tests and the storm
# figure, unload the module, check the module's counters. One "PASS name" /
# "FAIL name: why" line per test on the console; tests/vm/run parses them.
# S, result and counters_zero come from tests/vm/guest-common.sh, example_watch
# from tests/vm/guest-example.sh.

insmod /inotify_dev.ko
result insmod $? "insmod inotify_dev.ko failed"
dmesg | grep -q 'inotify_dev: inotify device minor=63'
result minor_log $? "no 'inotify device minor=63' line in dmesg"
[ -c /dev/inotify ] || { echo "FAIL devnode: /dev/inotify missing"; exit 1; }

# shellcheck disable=SC2086 # a list of test names
/conformance ${conformance_args:-}
rc=$?

# The example program shipped with the module (tests/vm/guest-example.sh).
example_watch || rc=1

if [ -x /stress ]; then
    /stress "${STRESS_SECONDS:-30}"
    rc=$((rc | $?))
fi
counters_zero
result counters_zero $? "module counters not back to 0 after the tests"

# rmmod (and insmod again) whenever no instance is open, under open/close.
if [ -x /stress ]; then
    /stress --unload "${UNLOAD_SECONDS:-10}" /inotify_dev.ko
    rc=$((rc | $?))
    counters_zero
    result counters_zero_after_unload $? "module counters not back to 0 after the unload test"
fi

if [ -x /storm ]; then
    /storm "${STORM_FILES:-10000}" "${STORM_REPS:-5}"
    rc=$((rc | $?))
fi

# An open instance pins the module.
(exec 3< /dev/inotify; exec sleep 600) &
holder=$!
n=0
while [ "$(cat $S/stats/instances)" != 1 ] && [ $n -lt 500 ]; do usleep 10000; n=$((n + 1)); done
if rmmod inotify_dev 2>/dev/null; then st=1; else st=0; fi
kill $holder
wait $holder 2>/dev/null
result rmmod_busy $st "rmmod succeeded while /dev/inotify was open"
counters_zero
result counters_zero_after_busy $? "counters not back to 0"

rmmod inotify_dev
result rmmod $? "rmmod inotify_dev failed"
[ ! -e /dev/inotify ]
result devnode_gone $? "/dev/inotify still there after rmmod"

# dev_mode: the node opened to every user at load time (the default, 0600,
# was checked by the conformance suite), and a mode beyond read/write refused.
if insmod /inotify_dev.ko dev_mode=0666; then
    /conformance node dev_mode_open || rc=1
    rmmod inotify_dev
    result dev_mode_open_rmmod $? "rmmod inotify_dev (dev_mode=0666) failed"
else
    echo "FAIL dev_mode_open: insmod inotify_dev.ko dev_mode=0666 failed"
    rc=1
fi
if insmod /inotify_dev.ko dev_mode=0777 2>/dev/null; then
    rmmod inotify_dev
    st=1
else
    st=0
fi
result dev_mode_invalid $st "insmod inotify_dev.ko dev_mode=0777 must be refused"

# Minor 63 taken by another driver: a dynamic minor, a log line, same node name.
if [ -f /squat63.ko ] && insmod /squat63.ko; then
    insmod /inotify_dev.ko
    dmesg | grep -q 'inotify_dev: misc minor 63 is taken, using a dynamic minor'
    result minor_taken_log $? "no 'misc minor 63 is taken' line in dmesg"
    minor=$(grep ' inotify$' /proc/misc | cut -d' ' -f1)
    [ -n "$minor" ] && [ "$minor" != 63 ] && [ -c /dev/inotify ]
    result minor_taken_dynamic $? "expected a dynamic minor (got '$minor') and /dev/inotify"
    /conformance article_snippets || rc=1
    rmmod inotify_dev
    result minor_taken_rmmod $? "rmmod inotify_dev failed"
    rmmod squat63
else
    echo "FAIL minor_taken: could not load squat63.ko"
    rc=1
fi
exit $rc
