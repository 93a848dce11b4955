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
		/* in memory: one lookup, not a second in exfat_read_sector() */
		bh = sb_find_get_block(sb, sect);
		if (bh && buffer_uptodate(bh))
			return bh;
		brelse(bh);
		exfat_readahead_sectors(sb, sect,
					min_t(u64, ra, sbi->vol_sectors - sect));
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

/*
 * VolumeDirty (§3.1.13.2) is set, and on stable media, before the first
 * metadata sector is dirtied, and cleared only once all are on disk.
 *
 * Every metadata sector is dirtied through exfat_meta_dirtied(): counted
 * in meta_dirtying while it checks the flag and dirties the sector, then
 * counted in meta_gen.  exfat_clear_vol_dirty() clears the flag only when
 * no sector was dirtied since the caller read meta_gen before its sync,
 * and none is being dirtied: a writer that comes later finds the flag
 * clear and sets it on disk before its sector can be written.
 */
static int exfat_write_vol_flags(struct super_block *sb, u16 flags)
{
	struct exfat_boot_sector *bs;
	struct buffer_head *bh;
	int err;

	lockdep_assert_held(&EXFAT_SB(sb)->vol_lock);
	bh = exfat_read_sector(sb, 0);
	if (IS_ERR(bh))
		return PTR_ERR(bh);
	bs = exfat_sector_data(bh);
	lock_buffer(bh);
	bs->vol_flags = cpu_to_le16(flags);
	unlock_buffer(bh);
	mark_buffer_dirty(bh);
	err = exfat_sync_meta(sb, bh, true);
	exfat_put_sector(bh);
	return err;
}

void exfat_set_vol_dirty(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	if (test_bit(EXFAT_STATE_DIRTY_SET, &sbi->state))
		return;
	mutex_lock(&sbi->vol_lock);
	if (!test_bit(EXFAT_STATE_DIRTY_SET, &sbi->state) &&
	    !exfat_write_vol_flags(sb, sbi->vol_flags | EXFAT_VF_DIRTY))
		set_bit(EXFAT_STATE_DIRTY_SET, &sbi->state);
	mutex_unlock(&sbi->vol_lock);
}

/* What to pass to exfat_clear_vol_dirty(), read before the sync. */
u32 exfat_meta_gen(struct super_block *sb)
{
	return atomic_read(&EXFAT_SB(sb)->meta_gen);
}

/*
 * After a sync of every metadata sector that began after @gen was read:
 * clear VolumeDirty unless a sector was dirtied since.  A volume that was
 * dirty when mounted stays dirty for fsck (vol_flags keeps its bit).
 */
int exfat_clear_vol_dirty(struct super_block *sb, u32 gen)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	int err = 0;

	mutex_lock(&sbi->vol_lock);
	if (test_and_clear_bit(EXFAT_STATE_DIRTY_SET, &sbi->state)) {
		/* pairs with the barrier in exfat_meta_dirtied() */
		smp_mb__after_atomic();
		if (atomic_read(&sbi->meta_dirtying) ||
		    atomic_read(&sbi->meta_gen) != gen)
			err = 1;
		else
			err = exfat_write_vol_flags(sb, sbi->vol_flags);
		if (err)
			set_bit(EXFAT_STATE_DIRTY_SET, &sbi->state);
	}
	mutex_unlock(&sbi->vol_lock);
	return err < 0 ? err : 0;
}

static void exfat_meta_dirtied(struct super_block *sb, struct buffer_head *bh)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	atomic_inc(&sbi->meta_dirtying);
	/* the count before the flag test: pairs with exfat_clear_vol_dirty() */
	smp_mb__after_atomic();
	exfat_set_vol_dirty(sb);
	mark_buffer_dirty(bh);
	atomic_inc(&sbi->meta_gen);
	/* meta_gen moves before meta_dirtying drops: no window shows neither */
	smp_mb__before_atomic();
	atomic_dec(&sbi->meta_dirtying);
}

void exfat_mark_meta_dirty(struct super_block *sb, struct buffer_head *bh)
{
	set_buffer_uptodate(bh);
	exfat_meta_dirtied(sb, bh);
}

/*
 * Change a sector in memory as one piece: between exfat_sector_lock() and
 * exfat_sector_unlock() no write of it can start, so the disk gets
 * it as it was before or after, never half changed.  Nothing that reads
 * or writes another sector may be called in between.
 */
void exfat_sector_lock(struct buffer_head *bh)
{
	lock_buffer(bh);
}

/*
 * End the change.  Only a sector changed is dirtied, so that rewriting a
 * set that spans two sectors writes only the one its changes are in.
 */
void exfat_sector_unlock(struct super_block *sb, struct buffer_head *bh,
			 bool changed)
{
	if (!changed) {
		unlock_buffer(bh);
		return;
	}
	set_buffer_uptodate(bh);
	unlock_buffer(bh);
	exfat_meta_dirtied(sb, bh);
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

/**
 * exfat_flush - flush the device's volatile cache
 * @sb: the volume
 *
 * Every write completed before the call is durable when it returns 0.
 * The flush is numbered (sbi->flush_seq, sbi->flush_done), so that
 * exfat_flushed_since() can tell whether a write that completed earlier
 * is durable without another one.  Preflushes of single sector writes
 * (exfat_sync_meta) are not counted: a sector that was not dirty is not
 * written, and then nothing was flushed.
 */
int exfat_flush(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	s64 seq = atomic64_inc_return(&sbi->flush_seq);
	s64 done;
	int err;

	err = blkdev_issue_flush(sb->s_bdev);
	if (err)
		return err;
	done = atomic64_read(&sbi->flush_done);
	while (done < seq &&
	       !atomic64_try_cmpxchg(&sbi->flush_done, &done, seq))
		;
	return 0;
}

/*
 * The number to keep with a write that has just completed, for
 * exfat_flushed_since().
 */
u64 exfat_flush_gen(struct super_block *sb)
{
	/*
	 * The completion, seen by the caller, before the read; pairs with
	 * the fully ordered increment in exfat_flush(): a flush this read
	 * does not count was started after it, so covers the write.
	 */
	smp_mb();
	return atomic64_read(&EXFAT_SB(sb)->flush_seq);
}

/* Whether a flush started after @gen was taken has completed. */
bool exfat_flushed_since(struct super_block *sb, u64 gen)
{
	return atomic64_read(&EXFAT_SB(sb)->flush_done) > (s64)gen;
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
	return exfat_flush(sb);
}

/*
 * Write every dirty metadata sector and flush the device's cache: all the
 * metadata changed before the call is then durable.
 */
int exfat_meta_barrier(struct super_block *sb)
{
	return exfat_meta_write_all(sb) ?: exfat_flush(sb);
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
		exfat_meta_dirtied(sb, bh);
		brelse(bh);
	}
	return 0;
}
