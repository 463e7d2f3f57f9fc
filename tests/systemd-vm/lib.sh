# shellcheck shell=bash
# tests/systemd-vm/lib.sh - what the systemd VM suites share: run (watchd
# installed by "meson install"), run-deb and run-desktop (watchd installed
# from its Debian packages by apt). Source it after tests/vm/lib.sh.
#
#   sdvm_add_test_service ROOT GUEST [FILE...]
#       installs GUEST as /usr/local/lib/watchd-test/guest, with the FILEs
#       beside it, and enables watchd-vm-test.service, which runs it once the
#       VM reaches multi-user
#   sdvm_debs OUT [DEBDIR]
#       the Debian packages: DEBDIR (what tests/deb/build made: v1/ and v2/)
#       or, without it, tests/deb/build's output in OUT/debs (its log
#       OUT/deb-build.log). Sets SDVM_DEBS (DEBDIR's absolute path) and
#       SDVM_PACKAGES (every package of debian/control); fails, saying
#       "FAIL setup: ...", unless v1/ and v2/ each hold one .deb of each.
#   sdvm_deb_image OUT CACHED_ROOT GUEST [FILE...]
#       the image of run-deb and run-desktop in OUT/rootfs: a copy of
#       CACHED_ROOT (a build-root "deb" root, or one made from it), the
#       packages sdvm_debs found in /var/local/watchd-debs/v1 and v2 (not the
#       -dbgsym ones), the test service running GUEST (sdvm_add_test_service).
#       Sets SDVM_KERNEL and SDVM_INITRD, the kernel and initrd of
#       CACHED_ROOT's /boot the VM boots; fails, saying "FAIL setup: ...", if
#       the root has no initrd or headers for its kernel.
#   sdvm_boot OUT ROOT KERNEL INITRD TIMEOUT
#       makes OUT/root.img from the tree ROOT (ext4, 3 GiB sparse) and a
#       blank OUT/result.img, boots KERNEL and INITRD on them in qemu (TCG,
#       no network device), the serial console in OUT/serial.log, killed
#       after TIMEOUT seconds; a boot that hung in QEMU's TCG before the
#       guest wrote anything is tried once more. The guest writes its output
#       to /dev/vdb (result.img): it ends up in OUT/result.txt. Returns
#       qemu's status (124: timed out).
#   sdvm_report OUT
#       prints the guest's PASS/FAIL lines and the kernel-log check, and on a
#       failure the journal and the end of the serial log; sets SDVM_PASSED
#       and SDVM_FAILED.

sdvm_add_test_service() {
    local r=$1 guest=$2 f
    shift 2
    install -D -m 0755 "$guest" "$r/usr/local/lib/watchd-test/guest"
    for f in "$@"; do
        install -m 0755 "$f" "$r/usr/local/lib/watchd-test/"
    done
    cat > "$r/etc/systemd/system/watchd-vm-test.service" <<'UNIT'
[Unit]
Description=watchd test run
# Not After=multi-user.target: it is wanted by it (an ordering cycle).
After=dbus.service

[Service]
# Not oneshot: the script waits for the boot to finish, and a oneshot unit
# would hold the boot back waiting for the script.
Type=simple
ExecStart=/usr/local/lib/watchd-test/guest
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
    systemctl --root="$r" enable -q watchd-vm-test.service
}

sdvm_debs() {
    local out=$1 debs=${2:-} top v p n
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    if [ -z "$debs" ]; then
        debs=$out/debs
        if ! "$top/tests/deb/build" "$debs" > "$out/deb-build.log" 2>&1; then
            cat "$out/deb-build.log"; echo "FAIL setup: tests/deb/build"; return 1
        fi
    fi
    SDVM_DEBS=$(cd "$debs" && pwd) || { echo "FAIL setup: no directory $debs"; return 1; }
    # Every package of debian/control, installed, used and purged in the guest.
    SDVM_PACKAGES=$(sed -n 's/^Package: *//p' "$top/debian/control")
    for v in v1 v2; do
        for p in $SDVM_PACKAGES; do
            n=$(ls "$SDVM_DEBS/$v/${p}_"*.deb 2> /dev/null | wc -l)
            [ "$n" -eq 1 ] || {
                echo "FAIL setup: $n $SDVM_DEBS/$v/${p}_*.deb, want one (tests/deb/build $SDVM_DEBS)"; return 1; }
        done
    done
}

sdvm_deb_image() {
    local out=$1 cached_root=$2 guest=$3 kver r=$1/rootfs v p
    shift 3
    SDVM_KERNEL=$(ls "$cached_root"/boot/vmlinuz-* | sort -V | tail -n 1)
    kver=${SDVM_KERNEL#"$cached_root"/boot/vmlinuz-}
    SDVM_INITRD=$cached_root/boot/initrd.img-$kver
    [ -r "$SDVM_INITRD" ] && [ -d "$cached_root/usr/src/linux-headers-$kver" ] || {
        echo "FAIL setup: $cached_root has no initrd or headers for $kver"; return 1; }
    # Called in a || list, where set -e does not stop at a failure.
    rm -rf --one-file-system "$r" && cp -a "$cached_root" "$r" || {
        echo "FAIL setup: copying $cached_root to $r"; return 1; }
    for v in v1 v2; do
        mkdir -p "$r/var/local/watchd-debs/$v"
        for p in $SDVM_PACKAGES; do
            cp "$SDVM_DEBS/$v/${p}_"*.deb "$r/var/local/watchd-debs/$v/" || {
                echo "FAIL setup: copying $p's .deb into the image"; return 1; }
        done
    done
    sdvm_add_test_service "$r" "$guest" "$@" || { echo "FAIL setup: the test service"; return 1; }
}

sdvm_boot() {
    local out=$1 r=$2 kernel=$3 initrd=$4 tmo=$5 attempt rc
    local img=$out/root.img result=$out/result.img log=$out/serial.log
    rm -f "$img" "$result"
    mkfs.ext4 -q -F -L root -d "$r" "$img" 3G || return 1
    truncate -s 4M "$result"
    for attempt in 1 2; do
        vm_log "booting $kernel with systemd under qemu (TCG), log $log"
        rc=0
        timeout --kill-after=10 "$tmo" qemu-system-x86_64 -accel tcg -m 1024 -smp 2 \
            -nographic -no-reboot -monitor none -serial stdio -nic none \
            -kernel "$kernel" -initrd "$initrd" \
            -append "root=/dev/vda rw console=ttyS0 panic=-1 oops=panic" \
            -drive file="$img",format=raw,if=virtio \
            -drive file="$result",format=raw,if=virtio \
            < /dev/null > "$log" 2>&1 || rc=$?
        # A boot that hung in QEMU itself (tests/vm/lib.sh, vm_tcg_hang)
        # before the guest wrote anything is tried once more.
        if [ $attempt -eq 1 ] && [ $rc -eq 124 ] && vm_tcg_hang "$log" &&
           ! tr -d '\0' < "$result" | grep -q .; then
            mv "$log" "$log.tcg-hang"
            vm_log "QEMU's TCG lost a vCPU timer before the checks began (log kept as $log.tcg-hang): booting again"
            continue
        fi
        break
    done
    [ $rc -eq 0 ] || vm_log "qemu exited with $rc (124: timed out)"
    tr -d '\0' < "$result" > "$out/result.txt"
    rm -f "$img"
    return $rc
}

sdvm_report() {
    local out=$1
    grep -aE '^(INFO|PASS|FAIL) ' "$out/result.txt" || true
    vm_results "$out/result.txt" > /dev/null || true    # grep -c fails on a count of 0
    SDVM_PASSED=$VM_PASSED SDVM_FAILED=$VM_FAILED
    # Kernel warnings anywhere in the console log or the guest's dmesg, and
    # the end marker: the guest finished.
    cat "$out/serial.log" "$out/result.txt" > "$out/combined.log"
    if vm_check_log "$out/combined.log"; then
        echo "PASS kernel-log"
        SDVM_PASSED=$((SDVM_PASSED + 1))
    else
        echo "FAIL kernel-log"
        SDVM_FAILED=$((SDVM_FAILED + 1))
    fi
    if [ "$SDVM_FAILED" -ne 0 ]; then
        sed -n '/^--- journal/,$p' "$out/result.txt"
        echo "--- serial log tail ($out/serial.log)"
        tail -n 60 "$out/serial.log" | tr -d '\r'
    fi
}
