// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-test: a module that leaks one allocation when it is
 * loaded, so that the test harness can prove that its kmemleak check
 * fails a run (on kernels with kmemleak).
 */
#include <linux/init.h>
#include <linux/module.h>
#include <linux/slab.h>

/* Written once so that the compiler keeps the allocation; never read. */
static unsigned long leak_on_load_addr_low;

static int __init leak_on_load_init(void)
{
	void *p = kmalloc(1024, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	/* only the low bits: no pointer to the object stays anywhere */
	leak_on_load_addr_low = (unsigned long)p & 0xfff;
	return 0;
}

static void __exit leak_on_load_exit(void)
{
}

module_init(leak_on_load_init);
module_exit(leak_on_load_exit);

MODULE_DESCRIPTION("exfat2 test harness self-test: leak 1 KiB on load");
MODULE_LICENSE("GPL");
