// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-test: a module that leaks allocations when it is loaded,
 * so that the test harness can prove that its kmemleak check fails a run
 * (on kernels with kmemleak).
 *
 * kmemleak is conservative: a stale copy of a pointer (in a register
 * spilled to a kernel stack that is cached for the next task, say) keeps
 * an object "referenced", and one leaked object was once not reported
 * in CI.  Sixteen, allocated in a separate frame, cannot all hide so.
 */
#include <linux/init.h>
#include <linux/module.h>
#include <linux/slab.h>

#define LEAK_ON_LOAD_OBJECTS	16

/* Written so that the compiler keeps the allocations; never read. */
static unsigned long leak_on_load_addr_low;

static noinline int leak_on_load_one(void)
{
	void *p = kmalloc(1024, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	/* only the low bits: no pointer to the object stays anywhere */
	leak_on_load_addr_low ^= (unsigned long)p & 0xfff;
	return 0;
}

static int __init leak_on_load_init(void)
{
	int i;

	for (i = 0; i < LEAK_ON_LOAD_OBJECTS; i++)
		if (leak_on_load_one())
			return -ENOMEM;
	return 0;
}

static void __exit leak_on_load_exit(void)
{
}

module_init(leak_on_load_init);
module_exit(leak_on_load_exit);

MODULE_DESCRIPTION("exfat2 test harness self-test: leak 16 KiB on load");
MODULE_LICENSE("GPL");
