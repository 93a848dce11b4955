// SPDX-License-Identifier: GPL-2.0
/*
 * The File Allocation Table (§4): reading entries, each checked where it is
 * used, and bounded chain walks.
 */
#include <linux/sizes.h>
#include "exfat.h"

/*
 * Read FAT entry clu.  A cursor keeps the sector of the previous lookup so
 * that a chain walk does not look up the same buffer for every link.
 */
static int exfat_fat_lookup(struct super_block *sb, struct exfat_fat_cursor *cur,
			    u32 clu, u32 *val)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u64 off = (u64)clu * EXFAT_FAT_ENTRY_SIZE;
	sector_t sect = sbi->fat_start + (off >> sbi->sect_shift);
	const __le32 *ent;

	if (!cur->bh || cur->sect != sect) {
		struct buffer_head *bh;

		/* chains mostly run forward: read up to 32 KiB of FAT ahead */
		bh = exfat_read_sector_ra(sb, sect,
					  min_t(u64, SZ_32K >> sbi->sect_shift,
						sbi->fat_start + sbi->fat_sectors - sect));
		if (IS_ERR(bh))
			return PTR_ERR(bh);
		exfat_fat_cursor_release(cur);
		cur->bh = bh;
		cur->sect = sect;
	}
	ent = exfat_sector_data(cur->bh) + (off & ((1U << sbi->sect_shift) - 1));
	*val = le32_to_cpu(*ent);
	return 0;
}

void exfat_fat_cursor_release(struct exfat_fat_cursor *cur)
{
	if (cur->bh)
		exfat_put_sector(cur->bh);
	cur->bh = NULL;
}

static int __exfat_fat_next(struct super_block *sb,
			    struct exfat_fat_cursor *cur, u32 clu, u32 *next,
			    bool quiet)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u32 val;
	int err;

	if (!exfat_clu_valid(sbi, clu)) {
		if (quiet)
			return -ESTALE;
		exfat_fs_error(sb, "FAT lookup of invalid cluster %u", clu);
		return -EFSCORRUPTED;
	}
	err = exfat_fat_lookup(sb, cur, clu, &val);
	if (err)
		return err;
	if (val != EXFAT_FAT_EOC && !exfat_clu_valid(sbi, val)) {
		if (quiet)
			return -ESTALE;
		exfat_fs_error(sb, "cluster %u: invalid FAT entry %#x", clu, val);
		return -EFSCORRUPTED;
	}
	*next = val;
	return 0;
}

/*
 * Next cluster of a chain after clu: a valid cluster number or
 * EXFAT_FAT_EOC.  Free, bad, reserved and out-of-range values inside a
 * chain are corruption.
 */
int exfat_fat_next(struct super_block *sb, struct exfat_fat_cursor *cur,
		   u32 clu, u32 *next)
{
	return __exfat_fat_next(sb, cur, clu, next, false);
}

/*
 * exfat_fat_next() for a chain whose start came from outside (a file
 * handle) and may no longer be one: what would be corruption in a chain
 * is -ESTALE, unreported.
 */
int exfat_fat_next_quiet(struct super_block *sb, struct exfat_fat_cursor *cur,
			 u32 clu, u32 *next)
{
	return __exfat_fat_next(sb, cur, clu, next, true);
}

int exfat_get_fat(struct super_block *sb, u32 clu, u32 *next)
{
	struct exfat_fat_cursor cur = {};
	int err;

	err = exfat_fat_next(sb, &cur, clu, next);
	exfat_fat_cursor_release(&cur);
	return err;
}

/*
 * Count the clusters of the chain starting at start.  A chain longer than
 * limit is corrupt (it loops, or it is larger than its owner allows).
 */
int exfat_count_chain(struct super_block *sb, u32 start, u32 limit,
		      u32 *count)
{
	struct exfat_fat_cursor cur = {};
	u32 clu = start, n = 0;
	int err = 0;

	while (clu != EXFAT_FAT_EOC) {
		if (++n > limit) {
			exfat_fs_error(sb, "cluster chain from %u exceeds %u clusters (loop?)",
				       start, limit);
			err = -EFSCORRUPTED;
			break;
		}
		err = exfat_fat_next(sb, &cur, clu, &clu);
		if (err)
			break;
	}
	exfat_fat_cursor_release(&cur);
	*count = n;
	return err;
}

/*
 * Set FAT entry clu to val in the active FAT.  Called with alloc_lock
 * held; the sector is left dirty in the buffer cache.
 */
int exfat_fat_set(struct super_block *sb, struct exfat_fat_cursor *cur,
		  u32 clu, u32 val)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u64 off = (u64)clu * EXFAT_FAT_ENTRY_SIZE;
	__le32 *ent;
	u32 old;
	int err;

	lockdep_assert_held(&sbi->alloc_lock);
	if (WARN_ON_ONCE(!exfat_clu_valid(sbi, clu)))
		return -EIO;
	err = exfat_fat_lookup(sb, cur, clu, &old);
	if (err)
		return err;
	ent = exfat_sector_data(cur->bh) + (off & ((1U << sbi->sect_shift) - 1));
	*ent = cpu_to_le32(val);
	exfat_mark_meta_dirty(sb, cur->bh);
	return 0;
}
