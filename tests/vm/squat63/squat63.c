// SPDX-License-Identifier: GPL-2.0
/*
 * squat63.c - a test-only misc device that takes minor 63, so that the VM
 * suite can check inotify_dev's fallback to a dynamic minor (and its log
 * line). Not installed anywhere.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

static const struct file_operations squat63_fops = {
        .owner = THIS_MODULE,
};

static struct miscdevice squat63_dev = {
        .minor = 63,
        .name = "squat63",
        .fops = &squat63_fops,
};

module_misc_device(squat63_dev);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("test helper: holds misc minor 63");
