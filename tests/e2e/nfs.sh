# shellcheck shell=bash
# tests/e2e/nfs.sh - what tests/e2e/nfs needs in the busybox initramfs: an NFS
# server and client in one guest, over loopback (the host's kernel cannot
# mount NFS: no nfs module, and no module loading). Sourced by tests/e2e/run.
#
#   e2e_nfs_add ROOT OUT  adds the kernel modules (sunrpc ... nfsd, nfsv4), the
#                      server's and client's programs (rpc.nfsd, rpc.mountd,
#                      exportfs, mount.nfs, rpcbind) with their libraries,
#                      inotifywait, tests/e2e/bus-probe.c (built here, as
#                      /usr/lib/e2e/bus-probe), /etc/netconfig and
#                      /etc/services, and the guest script as /nfs.
#
# The programs come from Debian's nfs-kernel-server, nfs-common and rpcbind
# packages, fetched with "apt-get download" and unpacked in OUT/nfs-root (once:
# kept there), not installed: installing them would start an NFS server and
# rpcbind on the host. Their libraries are ordinary packages, installed by
# .ci/install-deps.

E2E_NFS_MODULES="sunrpc grace lockd nfs_acl auth_rpcgss nfsd netfs fscache nfs dns_resolver nfsv4"
E2E_NFS_PROGRAMS="usr/sbin/rpc.nfsd usr/sbin/rpc.mountd usr/sbin/exportfs sbin/mount.nfs sbin/rpcbind"

e2e_nfs_unpack() {
    local out=$1 p d ok=1
    for p in $E2E_NFS_PROGRAMS; do
        [ -x "$out/nfs-root/$p" ] || ok=0
    done
    [ $ok -eq 1 ] && return 0
    rm -rf "$out/nfs-debs" "$out/nfs-root"
    mkdir -p "$out/nfs-debs" "$out/nfs-root"
    (cd "$out/nfs-debs" && apt-get download -q -o APT::Sandbox::User="$(id -un)" nfs-kernel-server nfs-common rpcbind >&2) || return 1
    for d in "$out"/nfs-debs/*.deb; do
        dpkg-deb -x "$d" "$out/nfs-root" || return 1
    done
}

e2e_nfs_add() {
    local root=$1 out=$2 m p
    e2e_nfs_unpack "$out" || { vm_log "cannot fetch the NFS programs (apt-get download)"; return 1; }
    for m in $E2E_NFS_MODULES; do
        vm_add_kmod "$root" "$m"
    done
    for p in $E2E_NFS_PROGRAMS; do
        vm_add_binary "$root" "$out/nfs-root/$p" "/$p"
    done
    vm_add_binary "$root" /usr/bin/inotifywait
    # The timed clients of the hang checks (tests/e2e/bus-probe.c).
    gcc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$top/shared" "$top/tests/e2e/bus-probe.c" -o "$out/bus-probe" \
        -lsystemd || return 1
    vm_add_binary "$root" "$out/bus-probe" /usr/lib/e2e/bus-probe
    ln -sf mount.nfs "$root/sbin/mount.nfs4"
    vm_add_file "$root" /etc/netconfig /etc/netconfig
    vm_add_file "$root" /etc/services /etc/services
    printf '%s\n' "$E2E_NFS_MODULES" > "$root/etc/nfs-modules"
    vm_add_file "$root" "$top/tests/e2e/nfs" /nfs 0755
}
