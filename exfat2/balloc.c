// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation bitmap (§7.1): one bit per cluster of the heap, kept in the
 * buffer cache for the life of the mount.
 */
#include <linux/slab.h>
#include <linux/bitops.h>
#include <linux/unaligned.h>
#include <linux/blkdev.h>
#include "exfat.h"

static unsigned int exfat_bitmap_bits_per_bh(const struct exfat_sb_info *sbi)
{
	return 8U << sbi->sect_shift;
}

/* Set bits among the first nbits of a little-endian bitmap. */
static u32 exfat_weight_le(const u8 *map, unsigned int nbits)
{
	unsigned int i, nbytes = nbits / 8;
	u32 w = 0;

	/* a population count does not depend on the bit order of a word */
	for (i = 0; i + sizeof(long) <= nbytes; i += sizeof(long))
		w += hweight_long(get_unaligned((const unsigned long *)(map + i)));
	for (; i < nbytes; i++)
		w += hweight8(map[i]);
	if (nbits % 8)
		w += hweight8(map[nbytes] & ((1U << (nbits % 8)) - 1));
	return w;
}

static u32 exfat_count_free(struct exfat_sb_info *sbi)
{
	unsigned int per_bh = exfat_bitmap_bits_per_bh(sbi);
	u32 used = 0, left = sbi->clu_count;
	unsigned int i;

	for (i = 0; i < sbi->bitmap_nr_bh && left; i++) {
		unsigned int n = min(left, per_bh);

		used += exfat_weight_le(exfat_sector_data(sbi->bitmap_bh[i]), n);
		left -= n;
	}
	return sbi->clu_count - used;
}

int exfat_load_bitmap(struct super_block *sb, u32 clu, u64 len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u64 need = DIV_ROUND_UP((u64)sbi->clu_count, 8);
	u32 nr_clu, i, c;
	sector_t sect;
	int err;

	if (len < need || len > need + sbi->clu_size) {
		exfat_err(sb, "allocation bitmap is %llu bytes, %llu expected",
			  len, need);
		return -EFSCORRUPTED;
	}
	nr_clu = exfat_bytes_to_clus(sbi, len);
	if (!exfat_clu_valid(sbi, clu) || nr_clu > sbi->clu_count ||
	    clu - EXFAT_FIRST_CLUSTER > sbi->clu_count - nr_clu) {
		exfat_err(sb, "allocation bitmap at invalid cluster %u", clu);
		return -EFSCORRUPTED;
	}

	/* §7.1: the bitmap is contiguous (mkfs and every writer make it so) */
	sbi->bitmap_nr_bh = DIV_ROUND_UP(need, 1U << sbi->sect_shift);
	sbi->bitmap_bh = kvcalloc(sbi->bitmap_nr_bh, sizeof(*sbi->bitmap_bh),
				  GFP_KERNEL);
	if (!sbi->bitmap_bh)
		return -ENOMEM;
	sect = exfat_clu_to_sect(sbi, clu);
	exfat_readahead_sectors(sb, sect, sbi->bitmap_nr_bh);
	for (i = 0; i < sbi->bitmap_nr_bh; i++) {
		struct buffer_head *bh = exfat_read_sector(sb, sect + i);

		if (IS_ERR(bh)) {
			err = PTR_ERR(bh);
			goto fail;
		}
		sbi->bitmap_bh[i] = bh;
	}
	sbi->bitmap_clu = clu;
	sbi->bitmap_clus = nr_clu;

	/* The bitmap's own clusters must be marked in use (CVE-2025-40307). */
	for (c = clu; c < clu + nr_clu; c++) {
		if (!exfat_clu_in_use(sb, c)) {
			exfat_err(sb, "allocation bitmap does not mark its own cluster %u in use",
				  c);
			err = -EFSCORRUPTED;
			goto fail;
		}
	}
	sbi->free_clusters = exfat_count_free(sbi);
	return 0;
fail:
	exfat_free_bitmap(sb);
	return err;
}

void exfat_free_bitmap(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int i;

	if (!sbi->bitmap_bh)
		return;
	for (i = 0; i < sbi->bitmap_nr_bh; i++)
		if (sbi->bitmap_bh[i])
			exfat_put_sector(sbi->bitmap_bh[i]);
	kvfree(sbi->bitmap_bh);
	sbi->bitmap_bh = NULL;
	sbi->bitmap_nr_bh = 0;
}

bool exfat_clu_in_use(struct super_block *sb, u32 clu)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int per_bh = exfat_bitmap_bits_per_bh(sbi);
	u32 bit = clu - EXFAT_FIRST_CLUSTER;

	return test_bit_le(bit % per_bh,
			   exfat_sector_data(sbi->bitmap_bh[bit / per_bh]));
}

static const void *exfat_bitmap_chunk(const struct exfat_bitmap *bm,
				      unsigned int i)
{
	const struct exfat_sb_info *sbi = bm->priv;

	return exfat_sector_data(sbi->bitmap_bh[i]);
}

/*
 * The bitmap as the pure searches of format.c and window.c see it; valid
 * while alloc_lock is held.
 */
struct exfat_bitmap exfat_bitmap_of(const struct exfat_sb_info *sbi)
{
	return (struct exfat_bitmap) {
		.chunk = exfat_bitmap_chunk,
		.priv = sbi,
		.chunk_bits = exfat_bitmap_bits_per_bh(sbi),
		.nbits = sbi->clu_count,
	};
}

/* The first cluster of [clu, clu + len) marked free, or 0 if none. */
static u32 exfat_first_free_in(struct super_block *sb, u32 clu, u32 len)
{
	struct exfat_bitmap bm = exfat_bitmap_of(EXFAT_SB(sb));
	u32 bit = clu - EXFAT_FIRST_CLUSTER, first;

	if (!exfat_bitmap_find_free(&bm, bit, bit + len, 1, &first))
		return 0;
	return first + EXFAT_FIRST_CLUSTER;
}

static bool exfat_runs_overlap(u32 a, u32 alen, u32 b, u32 blen)
{
	return a < b + blen && b < a + alen;
}

/**
 * exfat_check_run - whether a run of a file's clusters may be its own
 * @sb: the volume
 * @clu: first cluster, range-checked by the caller
 * @len: number of clusters, within the heap
 * @free: set to the first cluster the bitmap says is free, or 0
 *
 * Clusters of the allocation bitmap or the up-case table never belong to
 * a file or directory: writing them through one would destroy the volume.
 * Return: NULL, or what is wrong.  A cluster marked free is not an error
 * here: it is reported through @free and the caller decides.
 */
const char *exfat_check_run(struct super_block *sb, u32 clu, u32 len,
			    u32 *free)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	*free = 0;
	if (!sbi->bitmap_bh)	/* the root, read to find the bitmap */
		return NULL;
	if (exfat_runs_overlap(clu, len, sbi->bitmap_clu, sbi->bitmap_clus))
		return "cluster of the allocation bitmap";
	if (exfat_runs_overlap(clu, len, sbi->upcase_clu, sbi->upcase_clus))
		return "cluster of the up-case table";
	*free = exfat_first_free_in(sb, clu, len);
	return NULL;
}

/* exfat_check_run() for clusters about to be freed: free ones are wrong. */
const char *exfat_check_freeable(struct super_block *sb, u32 clu, u32 len)
{
	const char *why;
	u32 free;

	why = exfat_check_run(sb, clu, len, &free);
	return why ?: free ? "cluster marked free in the allocation bitmap" : NULL;
}

/*
 * Find the first run of free clusters at or after hint (wrapping around to
 * the start of the heap), at most max long.  Called with alloc_lock held.
 */
bool exfat_find_free_run(struct super_block *sb, u32 hint, u32 max,
			 u32 *start, u32 *len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_bitmap bm = exfat_bitmap_of(sbi);

	lockdep_assert_held(&sbi->alloc_lock);
	return exfat_bitmap_find_run(&bm, hint, max, start, len);
}

/* Set or clear the bitmap bits of clusters [clu, clu + len). */
void exfat_bitmap_set_range(struct super_block *sb, u32 clu, u32 len,
			    bool used)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int per_bh = exfat_bitmap_bits_per_bh(sbi);
	u32 bit = clu - EXFAT_FIRST_CLUSTER, end = bit + len;
	struct buffer_head *last = NULL;

	lockdep_assert_held(&sbi->alloc_lock);
	for (; bit < end; bit++) {
		struct buffer_head *bh = sbi->bitmap_bh[bit / per_bh];

		if (used)
			__set_bit_le(bit % per_bh, exfat_sector_data(bh));
		else
			__clear_bit_le(bit % per_bh, exfat_sector_data(bh));
		if (bh != last) {
			exfat_mark_meta_dirty(sb, bh);
			last = bh;
		}
	}
}

/*
 * A file's chain uses clusters the bitmap says are free (a crash of a
 * writer that did not order its writes, or corruption): mark them in use
 * so that they are not handed to another file.  fsck.exfat would do the
 * same.  Nothing is changed on a read-only mount, which allocates nothing.
 */
void exfat_claim_run(struct inode *inode, u32 clu, u32 len)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	bool ro = sb_rdonly(sb);
	u32 c, n = 0;

	mutex_lock(&sbi->alloc_lock);
	for (c = clu; c < clu + len; c++) {
		if (exfat_clu_in_use(sb, c))
			continue;
		if (!ro) {
			exfat_set_vol_dirty(sb);
			exfat_bitmap_set_range(sb, c, 1, true);
		}
		n++;
	}
	if (!ro)
		sbi->free_clusters -= min(n, sbi->free_clusters);
	mutex_unlock(&sbi->alloc_lock);
	exfat_warn_ratelimited(sb, "inode %lu: %u cluster(s) of its chain, the first %u, marked free in the allocation bitmap%s",
			       inode->i_ino, n, clu,
			       ro ? "" : "; now marked in use");
}

/* Clear the bitmap bits of a run for good; with alloc_lock held. */
void exfat_release_run(struct super_block *sb, u32 clu, u32 len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	lockdep_assert_held(&sbi->alloc_lock);
	exfat_bitmap_set_range(sb, clu, len, false);
	sbi->free_clusters += len;
}

/*
 * Give the directory pool's clusters back to the allocator: sync and
 * unmount, so that the bitmap on disk has no bit without an owner, and an
 * allocation short of space.  Nothing ever referred to them.
 */
void __exfat_dir_pool_drain(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	lockdep_assert_held(&sbi->alloc_lock);
	while (sbi->dir_pool_nr)
		exfat_release_run(sb, sbi->dir_pool[--sbi->dir_pool_nr], 1);
}

void exfat_dir_pool_drain(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	mutex_lock(&sbi->alloc_lock);
	__exfat_dir_pool_drain(sb);
	mutex_unlock(&sbi->alloc_lock);
}

struct exfat_pending_free {
	struct list_head list;
	u32		clu;
	u32		len;
};

/*
 * Free the run [clu, clu + len).  Its bits stay set in the bitmap until
 * exfat_commit_frees() has made durable whatever stopped referring to it
 * (a deleted entry set, a smaller size): until then a crash can leak the
 * clusters but never leave a file pointing at free ones, and they cannot
 * be handed to another file whose data would then overwrite them.
 */
void exfat_free_run(struct super_block *sb, u32 clu, u32 len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_pending_free *pf;

	lockdep_assert_held(&sbi->alloc_lock);
	pf = kmalloc(sizeof(*pf), GFP_NOFS | __GFP_NOFAIL);
	pf->clu = clu;
	pf->len = len;
	list_add_tail(&pf->list, &sbi->pending_frees);
	sbi->pending_clusters += len;
}

/**
 * exfat_commit_frees - return freed clusters to the allocator
 * @sb: the volume
 *
 * Writes all dirty metadata and flushes the device, so that no durable
 * entry set refers to the clusters freed before this call, then clears
 * their bitmap bits.  Called by sync, fsync and an allocation that would
 * fail for want of them.
 */
int exfat_commit_frees(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_pending_free *pf, *tmp;
	LIST_HEAD(batch);
	int err;

	mutex_lock(&sbi->commit_lock);
	mutex_lock(&sbi->alloc_lock);
	list_splice_init(&sbi->pending_frees, &batch);
	mutex_unlock(&sbi->alloc_lock);
	if (list_empty(&batch)) {
		mutex_unlock(&sbi->commit_lock);
		return 0;
	}

	err = exfat_meta_barrier(sb);

	mutex_lock(&sbi->alloc_lock);
	list_for_each_entry_safe(pf, tmp, &batch, list) {
		sbi->pending_clusters -= pf->len;
		/* on error the clusters stay allocated: leaked, not lost */
		if (!err) {
			exfat_release_run(sb, pf->clu, pf->len);
			if (sbi->opts.discard)
				sb_issue_discard(sb, exfat_clu_to_sect(sbi, pf->clu),
						 (sector_t)pf->len <<
						 (sbi->clu_shift - sbi->sect_shift),
						 GFP_NOFS, 0);
		}
		list_del(&pf->list);
		kfree(pf);
	}
	mutex_unlock(&sbi->alloc_lock);
	mutex_unlock(&sbi->commit_lock);
	return err;
}

/*
 * Make the FAT and the bitmap durable up to the latest allocation, before
 * an entry set that refers to newly allocated clusters is written.
 *
 * All dirty metadata is written before the flush, not only the FAT and
 * bitmap: an entry set may straddle two sectors, and one of them may
 * already be on its way to the disk (written with a neighbouring entry
 * set, or by background writeback of the block device).  Flushing then
 * would make a torn entry set durable.
 */
int exfat_sync_alloc(struct super_block *sb, u64 seq)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	int err;

	if (READ_ONCE(sbi->alloc_synced) >= seq)
		return 0;
	mutex_lock(&sbi->alloc_sync_lock);
	if (sbi->alloc_synced >= seq)
		goto out;
	seq = READ_ONCE(sbi->alloc_seq);
	err = exfat_meta_barrier(sb);
	if (err) {
		mutex_unlock(&sbi->alloc_sync_lock);
		return err;
	}
	WRITE_ONCE(sbi->alloc_synced, seq);
out:
	mutex_unlock(&sbi->alloc_sync_lock);
	return 0;
}

/*
 * Free what a secondary entry other than Stream allocates (a Vendor
 * Allocation entry, §7.9, or any secondary with AllocationPossible set,
 * §6.4.1), once the set holding it is deleted.  A FAT chain is first
 * counted with the bounded walk, so that a loop is refused before any
 * cluster is freed twice; clusters are then checked as they are freed,
 * in runs.  On corruption the rest is left allocated (leaked, which
 * fsck.exfat repairs) and reported.
 */
void exfat_free_secondary_alloc(struct super_block *sb, u8 type, u32 clu,
				u64 len, bool nofat)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_fat_cursor cur = {};
	u32 n, i, next, run_start = 0, run_len = 0;
	const char *why;

	if (!clu || !len)
		return;
	if (len > ((u64)sbi->clu_count << sbi->clu_shift)) {
		exfat_fs_error(sb, "entry type %#x: DataLength %llu exceeds the volume",
			       type, len);
		return;
	}
	n = DIV_ROUND_UP_ULL(len, sbi->clu_size);
	if (!nofat && (!exfat_clu_valid(sbi, clu) ||
		       exfat_count_chain(sb, clu, n, &i)))
		return;

	mutex_lock(&sbi->alloc_lock);
	exfat_set_vol_dirty(sb);
	for (i = 0; i < n; i++) {
		/* never hand the bitmap or the up-case table to the allocator */
		why = exfat_clu_valid(sbi, clu) ?
		      exfat_check_freeable(sb, clu, 1) : "cluster out of range";
		if (why) {
			exfat_fs_error(sb, "entry type %#x: allocation cluster %u not freed (%s)",
				       type, clu, why);
			break;
		}
		if (run_len && clu == run_start + run_len) {
			run_len++;
		} else {
			if (run_len)
				exfat_free_run(sb, run_start, run_len);
			run_start = clu;
			run_len = 1;
		}
		if (i + 1 == n)
			break;
		if (nofat) {
			clu++;
			continue;
		}
		if (exfat_fat_next(sb, &cur, clu, &next))
			break;
		if (next == EXFAT_FAT_EOC) {
			exfat_fs_error(sb, "entry type %#x: chain ends after %u of %u clusters",
				       type, i + 1, n);
			break;
		}
		clu = next;
	}
	if (run_len)
		exfat_free_run(sb, run_start, run_len);
	mutex_unlock(&sbi->alloc_lock);
	exfat_fat_cursor_release(&cur);
}

void exfat_free_dir_cluster(struct super_block *sb, u32 clu)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	mutex_lock(&sbi->alloc_lock);
	exfat_free_run(sb, clu, 1);
	mutex_unlock(&sbi->alloc_lock);
}

/*
 * FITRIM: discard every free run of at least minlen bytes in
 * [start, start + len).  alloc_lock is held across each discard so that
 * nothing allocates the run meanwhile; it is dropped between runs.
 */
int exfat_trim(struct super_block *sb, u64 start, u64 len, u64 minlen,
	       u64 *trimmed)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u64 heap = (u64)sbi->heap_start << sbi->sect_shift;
	u64 end;
	u32 clu, last, run_start, run_len, minclu;
	int err = 0;

	/* fstrim -o N passes len = ULLONG_MAX: the end is the volume's */
	if (check_add_overflow(start, len, &end))
		end = U64_MAX;
	end = min_t(u64, end, heap + ((u64)sbi->clu_count << sbi->clu_shift));
	if (end <= heap || start >= end)
		return 0;
	clu = start <= heap ? EXFAT_FIRST_CLUSTER :
	      EXFAT_FIRST_CLUSTER + ((start - heap) >> sbi->clu_shift);
	last = EXFAT_FIRST_CLUSTER + ((end - heap - 1) >> sbi->clu_shift);
	minclu = max_t(u64, 1, minlen >> sbi->clu_shift);

	while (clu <= last && !err) {
		mutex_lock(&sbi->alloc_lock);
		if (!exfat_find_free_run(sb, clu, last - clu + 1, &run_start,
					 &run_len) || run_start < clu ||
		    run_start > last) {
			mutex_unlock(&sbi->alloc_lock);
			break;
		}
		run_len = min(run_len, last - run_start + 1);
		if (run_len >= minclu) {
			err = sb_issue_discard(sb, exfat_clu_to_sect(sbi, run_start),
					       (sector_t)run_len <<
					       (sbi->clu_shift - sbi->sect_shift),
					       GFP_NOFS, 0);
			if (!err)
				*trimmed += (u64)run_len << sbi->clu_shift;
		}
		mutex_unlock(&sbi->alloc_lock);
		clu = run_start + run_len;
		if (fatal_signal_pending(current))
			err = -ERESTARTSYS;
		cond_resched();
	}
	return err;
}

/* Write zeros to clusters [clu, clu + n) and wait for them. */
int exfat_zero_clusters_sync(struct super_block *sb, u32 clu, u32 n)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	sector_t sect = exfat_clu_to_sect(sbi, clu);
	sector_t nr = (sector_t)n << (sbi->clu_shift - sbi->sect_shift);
	int err;

	err = exfat_zero_sectors(sb, sect, nr);
	if (err)
		return err;
	return sync_blockdev_range(sb->s_bdev, (loff_t)sect << sbi->sect_shift,
				   ((loff_t)(sect + nr) << sbi->sect_shift) - 1);
}

void exfat_drop_pending_frees(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_pending_free *pf, *tmp;

	list_for_each_entry_safe(pf, tmp, &sbi->pending_frees, list) {
		list_del(&pf->list);
		kfree(pf);
	}
	sbi->pending_clusters = 0;
}
