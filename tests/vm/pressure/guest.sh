#!/bin/sh
# tests/vm/pressure/guest.sh - runs inside the VM (as /test.sh), booted with
# little memory: the module's stress test (tests/vm/src/stress.c, as is),
# then the pressure tests (pressure.c), then the module's counters must be
# back to zero and rmmod must work. One "PASS name" / "FAIL name: why" line
# per test; tests/vm/lib.sh checks the kernel log for warnings.
# S, result and counters_zero come from tests/vm/guest-common.sh.

mem=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
echo "PRESSURE memory: MemTotal $mem kB, MemAvailable $(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo) kB"
[ "$mem" -lt 200000 ]
result low_memory $? "MemTotal $mem kB: the VM was not booted with little memory"

insmod /inotify_dev.ko
result insmod $? "insmod inotify_dev.ko failed"
[ -c /dev/inotify ] || { echo "FAIL devnode: /dev/inotify missing"; exit 1; }

rc=0
/stress "${STRESS_SECONDS:-20}"
rc=$((rc | $?))
counters_zero
result counters_zero_after_stress $? "module counters not back to 0 after the stress test"

/pressure
rc=$((rc | $?))
counters_zero
result counters_zero_after_pressure $? "module counters not back to 0 after the pressure tests"

rmmod inotify_dev
result rmmod $? "rmmod inotify_dev failed"
[ ! -e /dev/inotify ]
result devnode_gone $? "/dev/inotify still there after rmmod"
echo "PRESSURE memory after: MemAvailable $(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo) kB"
exit $rc
