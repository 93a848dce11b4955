// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-test: a module whose only job is to trigger one kernel
 * WARNING when it is loaded, so that the test harness can prove that its
 * splat detectors (in the guest and on the host) fire and fail a run.
 */
#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>

static int __init warn_on_load_init(void)
{
	WARN(1, "exfat2 harness self-test");
	return 0;
}

static void __exit warn_on_load_exit(void)
{
}

module_init(warn_on_load_init);
module_exit(warn_on_load_exit);

MODULE_DESCRIPTION("exfat2 test harness self-test: WARN once on load");
MODULE_LICENSE("GPL");
