# shellcheck shell=bash
# tests/vm/lib.sh - building blocks for tests that boot Debian's kernel in qemu
#
# Source it from bash (set -eu friendly). Every function prints what it does
# on stderr and returns non-zero on failure. tests/vm/run is the example user.
#
#   vm_install_deps              apt-get install what is missing of linux-image-amd64,
#                                linux-headers-amd64, qemu-system-x86, busybox-static,
#                                cpio, gcc, make (root needed only if something is missing)
#   vm_find_kernel               sets VM_KVER (e.g. 6.1.0-57-amd64), VM_KDIR (its headers,
#                                /usr/src/linux-headers-*-amd64 found by globbing, newest
#                                with a matching /boot/vmlinuz-*), VM_VMLINUZ, VM_MODDIR
#                                (/lib/modules/$VM_KVER, the kernel's own modules)
#   vm_build_module [OUTDIR]     builds a scratch copy of kmod/ (make KDIR=$VM_KDIR W=1
#                                KCFLAGS=-Werror), puts inotify_dev.ko in OUTDIR (default
#                                $VM_OUT) and sets VM_KO to its path
#   vm_initramfs_new DIR         a fresh tree: static busybox with its applets, /dev /proc
#                                /sys /tmp /etc/passwd (root, nobody 65534), and /init that
#                                mounts proc, sys, devtmpfs, then runs /test.sh; see below
#   vm_add_binary DIR BIN [DEST] copies BIN (default DEST: same path) and, for a dynamic
#                                binary, every library `ldd` lists and the dynamic loader
#   vm_add_file DIR SRC DEST [MODE]  copies one file (MODE default 0644)
#   vm_add_kmod DIR NAME         copies module NAME of $VM_MODDIR (decompressed) to /lib/modules/
#   vm_initramfs_pack DIR OUT    newc cpio, gzip'd: the -initrd for vm_boot
#   vm_boot INITRD LOG TIMEOUT [qemu args...]
#                                boots $VM_VMLINUZ (TCG, -smp 2, 1 GiB, serial on stdio into LOG,
#                                panic/oops => qemu exits), killed after TIMEOUT seconds; returns
#                                124 on timeout, else 0
#   vm_check_log LOG             fails (and says why) if LOG has a kernel WARNING, BUG, Oops,
#                                Call Trace, general protection fault, hung task, KASAN/UBSAN
#                                report or panic, or lacks the end marker line "VM-TESTS-DONE"
#   vm_results LOG               prints the "PASS name" / "FAIL name: why" lines of LOG and
#                                sets VM_PASSED, VM_FAILED
#
# The guest side: /init runs /test.sh (yours, added with vm_add_file DIR script /test.sh 0755)
# with /dev, /proc, /sys, /tmp and /run (tmpfs) mounted and $PATH set, its output on the serial console;
# then it prints the kernel log between "VM-DMESG-BEGIN" and "VM-DMESG-END", prints
# "VM-TESTS-DONE rc=<status of test.sh>" and powers off. The console log level is lowered to
# errors during the test so that kernel lines rarely split a result line; warnings are still
# caught in the dmesg dump. Print one "PASS name" or "FAIL name: why" line per test.

VM_TOP=${VM_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
VM_OUT=${VM_OUT:-$VM_TOP/tests/vm/out}

vm_log() {
    echo "vm: $*" >&2
}

vm_install_deps() {
    local p missing=()
    for p in linux-image-amd64 linux-headers-amd64 qemu-system-x86 busybox-static cpio gcc make libc6-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        vm_log "missing packages: ${missing[*]}; run as root (sudo) to install them"
        return 1
    fi
    vm_log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

vm_find_kernel() {
    local d ver
    VM_KVER=
    # Newest first; the headers must have a kernel image beside them.
    for d in $(printf '%s\n' /usr/src/linux-headers-*-amd64 | sort -rV); do
        [ -d "$d" ] || continue
        ver=${d#/usr/src/linux-headers-}
        if [ -r "/boot/vmlinuz-$ver" ]; then
            VM_KVER=$ver
            VM_KDIR=$d
            break
        fi
    done
    if [ -z "$VM_KVER" ]; then
        vm_log "no /usr/src/linux-headers-*-amd64 with a readable /boot/vmlinuz-* (install linux-image-amd64 linux-headers-amd64)"
        return 1
    fi
    VM_VMLINUZ=/boot/vmlinuz-$VM_KVER
    VM_MODDIR=/lib/modules/$VM_KVER
    export VM_KVER VM_KDIR VM_VMLINUZ VM_MODDIR
    vm_log "kernel $VM_KVER (headers $VM_KDIR)"
}

vm_build_module() {
    local out=${1:-$VM_OUT} tmp rc=0
    mkdir -p "$out"
    rm -f "$out/inotify_dev.ko"
    # Built in a scratch copy: concurrent runs and the source tree stay apart,
    # and no kernel sources are left under tests/ (where cppcheck looks).
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/inotify_dev-build.XXXXXX") || return 1
    cp "$VM_TOP"/kmod/{Kbuild,Makefile} "$VM_TOP"/kmod/*.[ch] "$tmp/" &&
        cp -r "$VM_TOP/kmod/uapi" "$tmp/" || rc=1
    vm_log "building kmod/ against $VM_KDIR"
    if [ $rc -eq 0 ]; then
        make -s -C "$tmp" KDIR="$VM_KDIR" W=1 KCFLAGS=-Werror 2>&1 | grep -v "^Skipping BTF" >&2
        cp "$tmp/inotify_dev.ko" "$out/inotify_dev.ko" 2>/dev/null || rc=1
    fi
    rm -rf "$tmp"
    [ $rc -eq 0 ] || return 1
    VM_KO=$out/inotify_dev.ko
    export VM_KO
}

vm_initramfs_new() {
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"/{bin,sbin,dev,proc,sys,tmp,run,etc,lib/modules,usr/bin,usr/sbin,mnt,root}
    cp /bin/busybox "$dir/bin/busybox"
    ln -s busybox "$dir/bin/sh"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' > "$dir/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$dir/etc/group"
    cat > "$dir/init" <<'EOF'
#!/bin/sh
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
# Errors and worse on the console; everything stays in the kernel log.
echo 4 > /proc/sys/kernel/printk
echo 20 > /proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
echo "VM-TESTS-BEGIN"
cd /
sh /test.sh
rc=$?
echo "VM-DMESG-BEGIN"
dmesg
echo "VM-DMESG-END"
echo "VM-TESTS-DONE rc=$rc"
sync
poweroff -f
EOF
    chmod 0755 "$dir/init"
}

vm_add_file() {
    local dir=$1 src=$2 dest=$3 mode=${4:-0644}
    mkdir -p "$dir/$(dirname "$dest")"
    install -m "$mode" "$src" "$dir/$dest"
}

vm_add_binary() {
    local dir=$1 bin=$2 dest=${3:-$2} lib src=
    vm_add_file "$dir" "$bin" "$dest" 0755
    # Static binaries: ldd says "not a dynamic executable" and fails.
    ldd "$bin" >/dev/null 2>&1 || return 0
    for lib in $(ldd "$bin" | grep -oE '/[^ ]+' | sort -u); do
        case $lib in
            # A library of the build tree (libwatchd, found through the
            # binary's $ORIGIN rpath, which means nothing once the binary
            # is elsewhere): to the loader's own directory.
            /lib/*|/lib64/*|/usr/lib/*) ;;
            *) src=$lib lib=/usr/lib/x86_64-linux-gnu/$(basename "$lib") ;;
        esac
        [ -e "$dir/$lib" ] || vm_add_file "$dir" "$(readlink -f "${src:-$lib}")" "$lib" 0755
        src=
    done
}

vm_add_kmod() {
    local dir=$1 name=$2 path
    path=$(find "$VM_MODDIR/kernel" -name "$name.ko*" | head -n 1)
    if [ -z "$path" ]; then
        vm_log "module $name not found in $VM_MODDIR"
        return 1
    fi
    case $path in
        *.xz) xz -dc "$path" > "$dir/lib/modules/$name.ko" ;;
        *.zst) zstd -qdc "$path" > "$dir/lib/modules/$name.ko" ;;
        *) cp "$path" "$dir/lib/modules/$name.ko" ;;
    esac
}

vm_initramfs_pack() {
    local dir=$1 out=$2
    (cd "$dir" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 > "$out"
}

# Whether a VM that timed out hung in QEMU's TCG rather than in the code
# under test: a vCPU's timer interrupt never came ("timer wakeup didn't
# happen", the RCU kthread starved on an idle CPU), seen once in a while
# early in boot on an idle host. Such a boot is tried once more.
vm_tcg_hang() {
    grep -aq "timer wakeup didn't happen" "$1"
}

vm_boot() {
    local initrd=$1 log=$2 tmo=$3 rc attempt
    shift 3
    for attempt in 1 2; do
        vm_log "booting $VM_KVER under qemu (TCG), up to ${tmo}s, log $log"
        timeout --kill-after=10 "$tmo" qemu-system-x86_64 -accel tcg -m 1024 -smp 2 \
            -nographic -no-reboot -monitor none -serial stdio \
            -kernel "$VM_VMLINUZ" -initrd "$initrd" \
            -append "console=ttyS0 panic=-1 oops=panic softlockup_panic=0 nokaslr" \
            "$@" < /dev/null > "$log" 2>&1
        rc=$?
        if [ $attempt -eq 1 ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && vm_tcg_hang "$log"; then
            mv "$log" "$log.tcg-hang"
            vm_log "QEMU's TCG lost a vCPU timer (log kept as $log.tcg-hang): booting again"
            continue
        fi
        break
    done
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        vm_log "the VM did not finish within ${tmo}s"
        return 124
    fi
    return 0
}

vm_check_log() {
    local log=$1 bad ok=0
    bad=$(grep -anE 'WARNING:|BUG:|Oops|Call Trace|general protection|blocked for more than|hung_task|KASAN|UBSAN|Kernel panic|kernel BUG|refcount_t:|list_(add|del) corruption|INFO: task' "$log" | head -n 20)
    if [ -n "$bad" ]; then
        echo "kernel log problems in $log:"
        printf '    %s\n' "${bad//$'\n'/$'\n    '}"
        ok=1
    fi
    if ! grep -aq '^VM-TESTS-DONE' "$log"; then
        echo "no VM-TESTS-DONE line in $log: the VM hung, crashed or timed out; its last lines:"
        tail -n 15 "$log" | sed 's/^/    /'
        ok=1
    fi
    return $ok
}

vm_results() {
    local log=$1
    # shellcheck disable=SC2034 # results for the caller
    VM_PASSED=$(grep -acE '^PASS [A-Za-z0-9_.-]+' "$log")
    # shellcheck disable=SC2034
    VM_FAILED=$(grep -acE '^FAIL [A-Za-z0-9_.-]+' "$log")
    grep -aE '^(PASS|FAIL) [A-Za-z0-9_.-]+' "$log" | tr -d '\r'
}
