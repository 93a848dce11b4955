// SPDX-License-Identifier: GPL-2.0
/*
 * Test helper: hold a kernel function at its entry, on the call whose
 * argument matches, until user space lets it go, so that a test can run
 * a whole sequence of operations inside a race window a few instructions
 * wide.  It is loaded by the tests of the races: group, never by the
 * driver.
 *
 * Parameters (/sys/module/race_hold/parameters/):
 *   symbol    the function to hold (at load time)
 *   symbol2   optionally a second one (at load time); calls of either
 *             count as one sequence of holds
 *   arg       which argument to match, 0-5, or -1 for none (at load time)
 *   match     the value that argument must have (writable)
 *   pid       hold only calls by this process (writable; 0: any)
 *   armed     write N to hold the next N matching calls, one at a time
 *   held      1 while a call is held; write 0 to let it go
 *   max_ms    the longest hold (writable): a kprobe cannot sleep, so the
 *             held task spins with preemption off, and a test that never
 *             lets go must not hang the machine
 *   hits      how many calls were held (read)
 *   last      which function the last held call was: 1 or 2 (read)
 *   expired   how many holds ended at max_ms (read)
 */
#include <linux/atomic.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>

static char *symbol;
module_param(symbol, charp, 0444);
MODULE_PARM_DESC(symbol, "function to hold at its entry");

static char *symbol2;
module_param(symbol2, charp, 0444);
MODULE_PARM_DESC(symbol2, "a second function to hold");

static int arg = -1;
module_param(arg, int, 0444);
MODULE_PARM_DESC(arg, "argument to match (0-5), -1: none");

static ulong match;
module_param(match, ulong, 0644);
MODULE_PARM_DESC(match, "value of the argument that is held");

static int pid;
module_param(pid, int, 0644);
MODULE_PARM_DESC(pid, "hold only calls by this process (0: any)");

static int armed;
module_param(armed, int, 0644);
MODULE_PARM_DESC(armed, "hold the next N matching calls");

static int held;
module_param(held, int, 0644);
MODULE_PARM_DESC(held, "1 while a call is held; write 0 to release it");

static uint max_ms = 10000;
module_param(max_ms, uint, 0644);
MODULE_PARM_DESC(max_ms, "longest hold in milliseconds");

static uint hits;
module_param(hits, uint, 0444);
MODULE_PARM_DESC(hits, "calls held so far");

static int last;
module_param(last, int, 0444);
MODULE_PARM_DESC(last, "which function the last held call was (1, 2)");

static uint expired;
module_param(expired, uint, 0444);
MODULE_PARM_DESC(expired, "holds that ended at max_ms");

static int race_hold_pre(struct kprobe *p, struct pt_regs *regs)
{
	int n = READ_ONCE(armed);
	u64 end;

	if (n <= 0 || (READ_ONCE(pid) && task_tgid_nr(current) != pid))
		return 0;
	if (arg >= 0 && regs_get_kernel_argument(regs, arg) != READ_ONCE(match))
		return 0;
	if (cmpxchg(&armed, n, n - 1) != n)
		return 0;
	WRITE_ONCE(last, p->symbol_name == symbol ? 1 : 2);
	WRITE_ONCE(held, 1);
	WRITE_ONCE(hits, hits + 1);
	end = ktime_get_ns() + (u64)READ_ONCE(max_ms) * NSEC_PER_MSEC;
	while (READ_ONCE(held)) {
		if (ktime_get_ns() > end) {
			WRITE_ONCE(expired, expired + 1);
			WRITE_ONCE(held, 0);
			break;
		}
		cpu_relax();
	}
	return 0;
}

static struct kprobe race_hold_kp[2] = {
	{ .pre_handler = race_hold_pre },
	{ .pre_handler = race_hold_pre },
};

static struct kprobe *race_hold_kps[2] = {
	&race_hold_kp[0], &race_hold_kp[1]
};

static int __init race_hold_init(void)
{
	if (!symbol || arg > 5)
		return -EINVAL;
	race_hold_kp[0].symbol_name = symbol;
	race_hold_kp[1].symbol_name = symbol2;
	return register_kprobes(race_hold_kps, symbol2 ? 2 : 1);
}

static void __exit race_hold_exit(void)
{
	WRITE_ONCE(armed, 0);
	WRITE_ONCE(held, 0);
	unregister_kprobes(race_hold_kps, symbol2 ? 2 : 1);
}

module_init(race_hold_init);
module_exit(race_hold_exit);
MODULE_DESCRIPTION("exfat2 tests: hold a function to widen a race window");
MODULE_LICENSE("GPL");
