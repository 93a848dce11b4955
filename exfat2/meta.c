// SPDX-License-Identifier: GPL-2.0
/*
 * Metadata sectors: boot region, FAT, allocation bitmap, up-case table and
 * directories.  They are read and written through the block device's
 * buffer cache, one filesystem sector per buffer.  This is the only file
 * that knows about buffer heads; file data never goes through them.
 */
#include <linux/buffer_head.h>
#include <linux/blkdev.h>
#include "exfat.h"

/*
 * When a sector's write fails, the block layer marks its buffer not up to
 * date, though memory holds what the sector should say and the disk an
 * older copy.  Reading it again would bring the old entries back under
 * the inodes and allocations made since (the loss itself is reported by
 * exfat_meta_check()).  Keep memory's copy: the sector goes out again the
 * next time it changes.
 */
static void exfat_keep_unwritten(struct buffer_head *bh)
{
	if (buffer_uptodate(bh) || !buffer_write_io_error(bh))
		return;
	lock_buffer(bh);
	if (!buffer_uptodate(bh) && buffer_write_io_error(bh))
		set_buffer_uptodate(bh);
	unlock_buffer(bh);
}

struct buffer_head *exfat_read_sector(struct super_block *sb, sector_t sect)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct buffer_head *bh;

	if (WARN_ON_ONCE(sect >= sbi->vol_sectors && sbi->vol_sectors))
		return ERR_PTR(-EFSCORRUPTED);
	bh = sb_getblk(sb, sect);
	if (!bh)
		return ERR_PTR(-ENOMEM);
	exfat_keep_unwritten(bh);
	if (bh_read(bh, 0) < 0) {
		brelse(bh);
		exfat_err(sb, "I/O error reading sector %llu",
			  (unsigned long long)sect);
		return ERR_PTR(-EIO);
	}
	return bh;
}

/*
 * exfat_read_sector(), but when the sector is not in memory yet, the ra - 1
 * sectors after it are read ahead with it: a directory or the FAT read
 * front to back then costs a request per window, not one per sector.
 */
struct buffer_head *exfat_read_sector_ra(struct super_block *sb,
					 sector_t sect, unsigned int ra)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct buffer_head *bh;

	if (ra > 1 && sect < sbi->vol_sectors) {
		bh = sb_find_get_block(sb, sect);
		if (!bh || !buffer_uptodate(bh))
			exfat_readahead_sectors(sb, sect,
						min_t(u64, ra, sbi->vol_sectors - sect));
		brelse(bh);
	}
	return exfat_read_sector(sb, sect);
}

void exfat_readahead_sectors(struct super_block *sb, sector_t sect,
			     unsigned int nr)
{
	struct buffer_head *bh;
	struct blk_plug plug;
	unsigned int i;

	blk_start_plug(&plug);
	for (i = 0; i < nr; i++) {
		bh = sb_getblk_gfp(sb, sect + i, GFP_NOWAIT | __GFP_MOVABLE);
		if (!bh)
			break;
		exfat_keep_unwritten(bh);
		bh_readahead(bh, REQ_RAHEAD);
		brelse(bh);
	}
	blk_finish_plug(&plug);
}

void *exfat_sector_data(struct buffer_head *bh)
{
	return bh->b_data;
}

void exfat_put_sector(struct buffer_head *bh)
{
	brelse(bh);
}

void exfat_mark_meta_dirty(struct super_block *sb, struct buffer_head *bh)
{
	set_buffer_uptodate(bh);
	mark_buffer_dirty(bh);
}

/*
 * Change a sector in memory as one piece: between exfat_sector_lock() and
 * exfat_sector_unlock_dirty() no write of it can start, so the disk gets
 * it as it was before or after, never half changed.  Nothing that reads
 * or writes another sector may be called in between.
 */
void exfat_sector_lock(struct buffer_head *bh)
{
	lock_buffer(bh);
}

void exfat_sector_unlock_dirty(struct super_block *sb, struct buffer_head *bh)
{
	set_buffer_uptodate(bh);
	unlock_buffer(bh);
	mark_buffer_dirty(bh);
}

/* Write one metadata sector now; with fua it is on stable media on return. */
int exfat_sync_meta(struct super_block *sb, struct buffer_head *bh, bool fua)
{
	int err;

	err = __sync_dirty_buffer(bh, fua ? REQ_SYNC | REQ_FUA | REQ_PREFLUSH :
					    REQ_SYNC);
	if (err) {
		exfat_err(sb, "I/O error writing sector %llu",
			  (unsigned long long)bh->b_blocknr);
		exfat_meta_check(sb);
	}
	return err;
}

/*
 * Make bh durable: write it with a preflush and FUA if it is dirty, else
 * wait for a write of it that may be in flight and flush the cache.
 */
int exfat_sync_meta_durable(struct super_block *sb, struct buffer_head *bh)
{
	if (buffer_dirty(bh))
		return exfat_sync_meta(sb, bh, true);
	wait_on_buffer(bh);
	if (!buffer_uptodate(bh) || buffer_write_io_error(bh))
		return exfat_meta_check(sb) ?: -EIO;
	return blkdev_issue_flush(sb->s_bdev);
}

/*
 * Write every dirty metadata sector and flush the device's cache: all the
 * metadata changed before the call is then durable.
 */
int exfat_meta_barrier(struct super_block *sb)
{
	return exfat_meta_write_all(sb) ?: blkdev_issue_flush(sb->s_bdev);
}

/* Write every dirty metadata sector and wait; no cache flush. */
int exfat_meta_write_all(struct super_block *sb)
{
	int err = sync_blockdev(sb->s_bdev);

	return exfat_meta_check(sb) ?: err;
}

/*
 * -EIO if any metadata write failed since mount, for good: the sector on
 * disk is older than the one in memory, and whatever is written after
 * it in the write order would refer to what is not there.  The first time,
 * the errors= policy applies.  (sync_blockdev() reports such an error only
 * once: the errseq cursor here does not move.)
 */
int exfat_meta_check(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	if (!errseq_check(&sb->s_bdev->bd_mapping->wb_err, sbi->meta_wb_err))
		return 0;
	if (!test_and_set_bit(EXFAT_STATE_META_EIO, &sbi->state)) {
		exfat_err(sb, "lost a metadata write: fsync and sync fail until unmount; run fsck.exfat");
		exfat_handle_error(sb);
	}
	return -EIO;
}

/* Fill nr sectors from sect with zeros in the buffer cache. */
int exfat_zero_sectors(struct super_block *sb, sector_t sect, unsigned int nr)
{
	struct buffer_head *bh;
	unsigned int i;

	for (i = 0; i < nr; i++) {
		bh = sb_getblk(sb, sect + i);
		if (!bh)
			return -ENOMEM;
		lock_buffer(bh);
		memset(bh->b_data, 0, bh->b_size);
		set_buffer_uptodate(bh);
		unlock_buffer(bh);
		mark_buffer_dirty(bh);
		brelse(bh);
	}
	return 0;
}
