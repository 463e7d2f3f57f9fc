# tests/vm/guest-common.sh - shell functions shared by the VM guest scripts
# (tests/vm/guest.sh, tests/vm/pressure/guest.sh): the run scripts put this
# file in front of the guest script they pack as /test.sh.
S=/sys/class/misc/inotify

result() {  # name status [why]
    if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1: ${3:-failed}"; fi
}

# Waits until the module's counters are all 0 (the mark reaper is
# asynchronous); prints them and fails after about 10 s.
counters_zero() {
    n=0
    while [ $n -lt 100 ]; do
        c="$(cat $S/stats/instances) $(cat $S/stats/watches) $(cat $S/stats/queued_events) $(cat $S/stats/groups)"
        [ "$c" = "0 0 0 0" ] && return 0
        n=$((n + 1))
        usleep 100000
    done
    echo "counters (instances watches queued_events groups): $c"
    return 1
}
