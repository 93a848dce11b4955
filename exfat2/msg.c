// SPDX-License-Identifier: GPL-2.0
/*
 * Messages and the errors= policy: the floor just above the on-disk
 * format, called from every file above it.  Every line names the device;
 * reports of corruption share one rate limit per volume.
 */
#include <linux/fs.h>
#include <linux/printk.h>
#include <linux/ratelimit.h>
#include "exfat.h"

void __exfat_msg(struct super_block *sb, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;
	int level = printk_get_level(fmt);

	va_start(args, fmt);
	vaf.fmt = printk_skip_level(fmt);
	vaf.va = &args;
	switch (level) {
	case LOGLEVEL_ERR + '0':
		pr_err("exfat2 (%s): %pV\n", sb->s_id, &vaf);
		break;
	case LOGLEVEL_WARNING + '0':
		pr_warn("exfat2 (%s): %pV\n", sb->s_id, &vaf);
		break;
	default:
		pr_info("exfat2 (%s): %pV\n", sb->s_id, &vaf);
		break;
	}
	va_end(args);
}

/* A warning under the same rate limit as corruption reports. */
void exfat_warn_ratelimited(struct super_block *sb, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	if (!__ratelimit(&EXFAT_SB(sb)->msg_ratelimit))
		return;
	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	exfat_warn(sb, "%pV", &vaf);
	va_end(args);
}

static void exfat_set_ro(struct super_block *sb)
{
	if (sb_rdonly(sb))
		return;
	sb->s_flags |= SB_RDONLY;
	exfat_err(sb, "filesystem is now read-only");
}

void exfat_fs_error(struct super_block *sb, const char *fmt, ...)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct va_format vaf;
	va_list args;

	if (__ratelimit(&sbi->msg_ratelimit)) {
		va_start(args, fmt);
		vaf.fmt = fmt;
		vaf.va = &args;
		exfat_err(sb, "corruption: %pV", &vaf);
		va_end(args);
	}

	exfat_handle_error(sb);
}

/* The errors= policy, after an error was reported. */
void exfat_handle_error(struct super_block *sb)
{
	switch (EXFAT_SB(sb)->opts.errors) {
	case EXFAT_ERRORS_PANIC:
		panic("exfat2 (%s): panic forced by errors=panic\n", sb->s_id);
	case EXFAT_ERRORS_RO:
		exfat_set_ro(sb);
		break;
	case EXFAT_ERRORS_CONT:
		break;
	}
}
