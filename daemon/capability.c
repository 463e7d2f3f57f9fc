/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * capability - giving up, at start, every privilege the daemon does not use
 *
 * Raw capget()/capset() and prctl(), as systemd does: three sets of 64 bits
 * and a loop over the bounding set need no library. What is kept, and why,
 * is in capability.h.
 */

#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capability.h"
#include "log.h"
#include "macro.h"

#define CAP_BIT(c) (UINT64_C(1) << (c))

static const struct {
        int cap;
        const char *name;
} kept_by_root[] = {
        { CAP_DAC_READ_SEARCH, "cap_dac_read_search" },
        { CAP_SETGID, "cap_setgid" },
        { CAP_SETUID, "cap_setuid" },
};

typedef struct CapSets {
        uint64_t effective, permitted, inheritable;
} CapSets;

static int caps_get(CapSets *ret) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return negative_errno();
        *ret = (CapSets) {
                .effective = d[0].effective | (uint64_t) d[1].effective << 32,
                .permitted = d[0].permitted | (uint64_t) d[1].permitted << 32,
                .inheritable = d[0].inheritable | (uint64_t) d[1].inheritable << 32,
        };
        return 0;
}

static int caps_set(const CapSets *c) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {
                { (uint32_t) c->effective, (uint32_t) c->permitted, (uint32_t) c->inheritable },
                { (uint32_t) (c->effective >> 32), (uint32_t) (c->permitted >> 32), (uint32_t) (c->inheritable >> 32) },
        };

        if (syscall(SYS_capset, &h, d) < 0)
                return negative_errno();
        return 0;
}

/* The highest capability this kernel knows (it may know more than our headers). */
static int cap_last(void) {
        FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
        int last = -1;

        if (f) {
                if (fscanf(f, "%d", &last) != 1)
                        last = -1;
                fclose(f);
        }
        return last >= 0 && last < 64 ? last : CAP_LAST_CAP;
}

/* Drops from the bounding set every capability not in keep. Return: how many were left in it, or -errno. */
static int bounding_drop(uint64_t keep) {
        int last = cap_last(), n = 0;

        for (int cap = 0; cap <= last; cap++) {
                int r;

                if (keep & CAP_BIT(cap))
                        continue;
                r = prctl(PR_CAPBSET_READ, (unsigned long) cap, 0, 0, 0);
                if (r < 0) {
                        if (errno == EINVAL)
                                break; /* past what the kernel knows */
                        return negative_errno();
                }
                if (r == 0)
                        continue;
                if (prctl(PR_CAPBSET_DROP, (unsigned long) cap, 0, 0, 0) < 0)
                        return negative_errno();
                n++;
        }
        return n;
}

/* Whether the bounding set holds a capability not in keep. */
static bool bounding_has_more(uint64_t keep) {
        int last = cap_last();

        for (int cap = 0; cap <= last; cap++)
                if (!(keep & CAP_BIT(cap)) && prctl(PR_CAPBSET_READ, (unsigned long) cap, 0, 0, 0) == 1)
                        return true;
        return false;
}

/* Keeps keep (of what is permitted now) in the effective and permitted sets,
 * nothing inheritable or ambient, and the bounding set cut to keep when
 * CAP_SETPCAP allows (*ret_bounding). Return: 0, or -errno (logged). */
static int caps_keep(uint64_t keep, bool *ret_bounding) {
        CapSets now;
        int r;

        r = caps_get(&now);
        if (r < 0)
                return log_error_errno(r, "Failed to read the daemon's capabilities: %m");
        keep &= now.permitted;
        *ret_bounding = false;

        /* The bounding set first: dropping from it needs CAP_SETPCAP, which goes next. */
        if (now.effective & CAP_BIT(CAP_SETPCAP)) {
                r = bounding_drop(keep);
                if (r < 0)
                        return log_error_errno(r, "Failed to drop capabilities from the bounding set: %m");
                *ret_bounding = true;
        }
        /* Ambient capabilities would survive an exec: none (EINVAL before Linux 4.3, which had none). */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return log_error_errno(negative_errno(), "Failed to clear the ambient capabilities: %m");

        /* Already so (the helper, started by its unit with just these): no
         * capset, which its unit's system call filter does not allow. */
        if (now.effective == keep && now.permitted == keep && now.inheritable == 0)
                return 0;
        r = caps_set(&(CapSets) { .effective = keep, .permitted = keep, .inheritable = 0 });
        if (r >= 0)
                r = caps_get(&now);
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities: %m");
        if (now.permitted != keep || now.inheritable != 0)
                return log_error_errno(
                        -EPERM, "Capabilities left after dropping: permitted 0x%" PRIx64 ", inheritable 0x%" PRIx64 ".",
                        now.permitted, now.inheritable);
        return 0;
}

int capability_keep_only(uint64_t keep) {
        bool bounding;
        int r;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(negative_errno(), "Failed to set no_new_privs: %m");
        r = caps_keep(keep, &bounding);
        if (r < 0)
                return r;
        if (!bounding && bounding_has_more(keep))
                log_notice("The bounding set keeps capabilities this program does not use (no CAP_SETPCAP "
                           "to drop them); no_new_privs keeps any exec from regaining them.");
        return 0;
}

int capability_drop_unneeded(void) {
        char kept[128] = "";
        uint64_t keep = 0;
        bool is_root = geteuid() == 0, bounding = false;
        CapSets now;
        int r;

        /* Nothing the daemon could exec may gain a privilege (it execs nothing). */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return log_error_errno(negative_errno(), "Failed to set no_new_privs: %m");

        /* access.c relies on the kernel clearing CAP_DAC_READ_SEARCH from the
         * effective set while fsuid is a caller's: that is the "setuid fixup",
         * which this securebit turns off. */
        r = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        if (r < 0)
                return log_error_errno(negative_errno(), "Failed to read the securebits: %m");
        if (r & SECBIT_NO_SETUID_FIXUP)
                return log_error_errno(-EPERM,
                                       "Started with the securebit NO_SETUID_FIXUP: a caller's fsuid would "
                                       "keep the daemon's file capabilities. Refusing to run.");

        r = caps_get(&now);
        if (r < 0)
                return log_error_errno(r, "Failed to read the daemon's capabilities: %m");
        if (is_root)
                for (size_t i = 0; i < ELEMENTSOF(kept_by_root); i++)
                        keep |= CAP_BIT(kept_by_root[i].cap);
        keep &= now.permitted;
        r = caps_keep(keep, &bounding);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(kept_by_root); i++)
                if (keep & CAP_BIT(kept_by_root[i].cap)) {
                        if (kept[0])
                                strcat(kept, " ");
                        strcat(kept, kept_by_root[i].name);
                }
        if (!is_root)
                log_info("Running as uid %u: no capabilities kept (serving uid %u only); no_new_privs set.",
                         (unsigned) geteuid(), (unsigned) geteuid());
        else {
                log_info("Capabilities kept: %s; all others dropped%s; no_new_privs set.", kept[0] ? kept : "none",
                         bounding ? ", from the bounding set too" : "");
                if (!bounding && bounding_has_more(keep))
                        log_notice("The bounding set keeps capabilities the daemon does not use (no CAP_SETPCAP "
                                   "to drop them); no_new_privs keeps any exec from regaining them.");
                for (size_t i = 0; i < ELEMENTSOF(kept_by_root); i++)
                        if (!(keep & CAP_BIT(kept_by_root[i].cap)))
                                log_warning("Started without %s: %s.", kept_by_root[i].name,
                                            kept_by_root[i].cap == CAP_DAC_READ_SEARCH ?
                                                    "a root caller may watch only what root may read without it" :
                                                    "every caller but root will be refused (AccessDenied)");
        }
        return 0;
}
