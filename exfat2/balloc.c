// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation bitmap (§7.1): one bit per cluster of the heap, kept in the
 * buffer cache for the life of the mount.
 */
#include <linux/slab.h>
#include <linux/bitops.h>
#include <linux/unaligned.h>
#include <linux/blkdev.h>
#include <linux/sort.h>
#include <linux/sizes.h>
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

/* The volume's bitmap, for exfat_bitmap_find_free(). */
static struct exfat_bitmap exfat_bitmap_of(const struct exfat_sb_info *sbi)
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
static const char *exfat_check_freeable(struct super_block *sb, u32 clu,
					u32 len)
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
static bool exfat_find_free_run(struct super_block *sb, u32 hint, u32 max,
				u32 *start, u32 *len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_bitmap bm = exfat_bitmap_of(sbi);
	u32 bit, first = 0;

	lockdep_assert_held(&sbi->alloc_lock);
	if (hint < EXFAT_FIRST_CLUSTER ||
	    hint - EXFAT_FIRST_CLUSTER >= sbi->clu_count)
		hint = EXFAT_FIRST_CLUSTER;
	bit = hint - EXFAT_FIRST_CLUSTER;
	*len = exfat_bitmap_find_free(&bm, bit, sbi->clu_count, max, &first);
	if (!*len)
		*len = exfat_bitmap_find_free(&bm, 0, bit, max, &first);
	*start = first + EXFAT_FIRST_CLUSTER;
	return *len;
}

/*
 * Allocation windows.  Files written at the same time allocate in turns,
 * and without more each would get the clusters after the other's last
 * ones: their chains interleave, a run per write.  So a file that
 * allocates keeps a window on the free clusters after its last one, in
 * memory only (exFAT cannot record clusters past DataLength), and other
 * files' allocations step over it.  A window is a hint, never an
 * allocation: the bitmap is the only record of what is in use, nothing is
 * counted as used, and when the free space outside the windows is not
 * found, allocations take it inside them.  A window grows with its file
 * (from 4 MiB up to 64 MiB) and goes when the file is closed by a writer,
 * truncated or evicted; the EXFAT_MAX_WINDOWS newest are kept.  Windows
 * are guarded by alloc_lock.
 */
#define EXFAT_MAX_WINDOWS	32

static void exfat_window_del(struct exfat_sb_info *sbi,
			     struct exfat_inode_info *ei)
{
	list_del_init(&ei->win_node);
	WRITE_ONCE(ei->win_len, 0);
	sbi->nr_windows--;
}

/*
 * Clip the free run [*start, *start + *len) to what lies outside the
 * windows of files other than self (NULL: of every file).  Returns false
 * when *start is inside one; then *next is where that window ends.
 */
static bool exfat_window_clip(struct exfat_sb_info *sbi,
			      const struct exfat_inode_info *self, u32 *start,
			      u32 *len, u32 *next)
{
	struct exfat_inode_info *ei;

	list_for_each_entry(ei, &sbi->windows, win_node) {
		if (ei == self)
			continue;
		if (*start - ei->win_start < ei->win_len) {
			*next = ei->win_start + ei->win_len;
			return false;
		}
		if (ei->win_start - *start < *len)
			*len = ei->win_start - *start;
	}
	return true;
}

/*
 * After an allocation: the window of ei starts after its last cluster and
 * ends where another file's begins; none if that cluster is in one.
 */
static void exfat_window_set(struct exfat_sb_info *sbi,
			     struct exfat_inode_info *ei, u32 last)
{
	u32 end = sbi->clu_count + EXFAT_FIRST_CLUSTER, start = last + 1;
	u32 len = clamp_t(u32, ei->alloc_clus, SZ_4M >> sbi->clu_shift,
			  SZ_64M >> sbi->clu_shift);
	u32 next;

	lockdep_assert_held(&sbi->alloc_lock);
	len = min(max(len, 1U), start < end ? end - start : 0);
	if (!len || !exfat_window_clip(sbi, ei, &start, &len, &next)) {
		if (ei->win_len)
			exfat_window_del(sbi, ei);
		return;
	}
	if (!ei->win_len) {
		if (sbi->nr_windows == EXFAT_MAX_WINDOWS)
			exfat_window_del(sbi, list_first_entry(&sbi->windows,
							       struct exfat_inode_info,
							       win_node));
		sbi->nr_windows++;
	}
	list_move_tail(&ei->win_node, &sbi->windows);
	ei->win_start = start;
	WRITE_ONCE(ei->win_len, len);
}

/* The file no longer needs its window (closed, truncated, evicted). */
void exfat_window_drop(struct inode *inode)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);

	if (!READ_ONCE(ei->win_len))
		return;
	mutex_lock(&sbi->alloc_lock);
	if (ei->win_len)
		exfat_window_del(sbi, ei);
	mutex_unlock(&sbi->alloc_lock);
}

/*
 * exfat_find_free_run() stepping over the windows of files other than
 * self; inside them only when nothing is found outside.
 */
static bool exfat_find_run_outside(struct super_block *sb,
				   const struct exfat_inode_info *self,
				   u32 hint, u32 max, u32 *start, u32 *len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u32 h = hint, tries;

	/* each try steps over a window; twice as many: the search wraps */
	for (tries = 0; tries <= 2 * sbi->nr_windows + 1; tries++) {
		if (!exfat_find_free_run(sb, h, max, start, len))
			return false;
		if (exfat_window_clip(sbi, self, start, len, &h))
			return true;
	}
	return exfat_find_free_run(sb, hint, max, start, len);
}

/* Set or clear the bitmap bits of clusters [clu, clu + len). */
static void exfat_bitmap_set_range(struct super_block *sb, u32 clu, u32 len,
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

static int exfat_cmp_extent_clu(const void *a, const void *b)
{
	const struct exfat_extent *x = a, *y = b;

	return x->clu < y->clu ? -1 : x->clu > y->clu;
}

/*
 * Before any cluster of inode beyond keep is freed: every one must be in
 * use, none a system cluster, none twice (a chain that loops back into
 * itself within its length).  Freeing such a chain would release clusters
 * of the bitmap or of other files to the allocator.
 */
static const char *exfat_check_free(struct inode *inode, u32 keep)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_extent *runs;
	const char *why = NULL;
	unsigned int i, nr = 0;

	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)
		return exfat_check_freeable(inode->i_sb, ei->start_clu + keep,
					    ei->alloc_clus - keep);
	runs = kvmalloc_array(ei->nr_ext, sizeof(*runs), GFP_NOFS);
	if (!runs)
		return NULL;	/* the checks are a safety net, not a must */
	for (i = 0; i < ei->nr_ext; i++) {
		const struct exfat_extent *ext = &ei->ext[i];
		u32 from = max(ext->fclu, keep);

		if (ext->fclu + ext->len <= keep)
			continue;
		runs[nr].clu = ext->clu + (from - ext->fclu);
		runs[nr].len = ext->fclu + ext->len - from;
		why = exfat_check_freeable(inode->i_sb, runs[nr].clu,
					   runs[nr].len);
		if (why)
			goto out;
		nr++;
	}
	sort(runs, nr, sizeof(*runs), exfat_cmp_extent_clu, NULL);
	for (i = 1; i < nr; i++) {
		if (runs[i - 1].clu + runs[i - 1].len > runs[i].clu) {
			why = "cluster chain uses a cluster twice";
			break;
		}
	}
out:
	kvfree(runs);
	return why;
}

/* Write the FAT links of a run: clu -> clu + 1 -> ... -> next. */
static int exfat_link_run(struct super_block *sb, struct exfat_fat_cursor *cur,
			  u32 clu, u32 len, u32 next)
{
	int err;

	for (; len > 1; clu++, len--) {
		err = exfat_fat_set(sb, cur, clu, clu + 1);
		if (err)
			return err;
	}
	return exfat_fat_set(sb, cur, clu, next);
}

/* Last cluster of the inode's chain; its extent cache must cover it. */
static u32 exfat_last_clu(struct inode *inode)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)
		return ei->start_clu + ei->alloc_clus - 1;
	return ei->ext[ei->nr_ext - 1].clu + ei->ext[ei->nr_ext - 1].len - 1;
}

/*
 * Turn a contiguous (NoFatChain) file into a FAT chain, because its next
 * cluster is not adjacent.  The FAT entries of such a file are undefined,
 * so the whole chain is written.
 */
static int exfat_chain_contiguous(struct inode *inode,
				  struct exfat_fat_cursor *cur, u32 next)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	int err;

	err = exfat_link_run(inode->i_sb, cur, ei->start_clu, ei->alloc_clus,
			     next);
	if (err)
		return err;
	ei->flags &= ~EXFAT_FLAG_NO_FAT_CHAIN;
	/* the extent cache now describes a FAT chain */
	return exfat_extents_from_contiguous(inode);
}

/* Clear the bitmap bits of a run for good; with alloc_lock held. */
static void exfat_release_run(struct super_block *sb, u32 clu, u32 len)
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
static void __exfat_dir_pool_drain(struct super_block *sb)
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

/*
 * Append the run [start, start + len), already marked in use, to the
 * chain of inode, whose last cluster is *last (0: the chain is empty).
 * A chain that stays contiguous keeps NoFatChain.  On error the run is
 * marked in use but not (wholly) linked: leaked, never lost.
 */
static int exfat_chain_append(struct inode *inode,
			      struct exfat_fat_cursor *cur, u32 *last,
			      u32 start, u32 len)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	int err = 0;

	lockdep_assert_held(&sbi->alloc_lock);
	if (!ei->alloc_clus) {
		ei->start_clu = start;
		ei->flags |= EXFAT_FLAG_NO_FAT_CHAIN;
	} else if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) {
		if (start != *last + 1)
			err = exfat_chain_contiguous(inode, cur, start);
	} else {
		err = exfat_fat_set(sb, cur, *last, start);
	}
	if (!err && !(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN))
		err = exfat_link_run(sb, cur, start, len, EXFAT_FAT_EOC);
	if (!err && !(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN))
		err = exfat_extents_append(inode, start, len);
	if (err)
		return err;
	ei->alloc_clus += len;
	ei->alloc_seq = ++sbi->alloc_seq;
	*last = start + len - 1;
	return 0;
}

/**
 * exfat_alloc_clusters - grow a file's cluster chain
 * @inode: regular file, with map_lock held exclusive
 * @want: number of clusters the chain must have
 *
 * New clusters continue the chain where it ends when they can; a file
 * whose clusters stay contiguous keeps NoFatChain.  Nothing is zeroed
 * (directories grow with exfat_append_dir_cluster()).
 * All or nothing: returns 0, -ENOSPC, or an error from the FAT.
 */
int exfat_alloc_clusters(struct inode *inode, u32 want)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_fat_cursor cur = {};
	u32 need, last = 0, start, len, hint;
	int err = 0;

	lockdep_assert_held_write(&ei->map_lock);
	if (want <= ei->alloc_clus)
		return 0;
	need = want - ei->alloc_clus;

	if (ei->alloc_clus && !(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)) {
		err = exfat_fill_all_extents(inode);
		if (err)
			return err;
	}

	mutex_lock(&sbi->alloc_lock);
	if (need > sbi->free_clusters && sbi->pending_clusters) {
		mutex_unlock(&sbi->alloc_lock);
		err = exfat_commit_frees(sb);
		if (err)
			return err;
		mutex_lock(&sbi->alloc_lock);
	}
	if (need > sbi->free_clusters)
		__exfat_dir_pool_drain(sb);
	if (need > sbi->free_clusters) {
		err = -ENOSPC;
		goto out;
	}
	exfat_set_vol_dirty(sb);
	if (ei->alloc_clus)
		last = exfat_last_clu(inode);
	hint = last ? last + 1 : sbi->alloc_hint;

	while (need) {
		if (!exfat_find_run_outside(sb, ei, hint, need, &start, &len)) {
			exfat_fs_error(sb, "bitmap has no free cluster, %u counted free",
				       sbi->free_clusters);
			err = -EFSCORRUPTED;
			break;
		}
		exfat_bitmap_set_range(sb, start, len, true);
		sbi->free_clusters -= len;
		err = exfat_chain_append(inode, &cur, &last, start, len);
		if (err)
			break;
		need -= len;
		hint = last + 1;
	}
	sbi->alloc_hint = hint;
	if (!err)
		exfat_window_set(sbi, ei, last);
out:
	mutex_unlock(&sbi->alloc_lock);
	exfat_fat_cursor_release(&cur);
	return err;
}

/**
 * exfat_append_dir_cluster - grow a directory by one zeroed cluster
 * @dir: directory, with map_lock held exclusive
 *
 * The cluster comes from the pool of exfat_alloc_dir_cluster(): zeroed
 * and marked in use on disk, with a cache flush after, before the FAT
 * entry that links it (or, but for the root, the DataLength that covers
 * it) can reach the disk; a crash never shows stale bytes as entries.
 */
int exfat_append_dir_cluster(struct inode *dir)
{
	struct super_block *sb = dir->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei = EXFAT_I(dir);
	struct exfat_fat_cursor cur = {};
	u32 clu, last = 0;
	int err;

	lockdep_assert_held_write(&ei->map_lock);
	if (ei->alloc_clus && !(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)) {
		err = exfat_fill_all_extents(dir);
		if (err)
			return err;
	}
	err = exfat_alloc_dir_cluster(sb, &clu);
	if (err)
		return err;
	mutex_lock(&sbi->alloc_lock);
	exfat_set_vol_dirty(sb);
	if (ei->alloc_clus)
		last = exfat_last_clu(dir);
	err = exfat_chain_append(dir, &cur, &last, clu, 1);
	mutex_unlock(&sbi->alloc_lock);
	exfat_fat_cursor_release(&cur);
	return err;
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
static void exfat_free_run(struct super_block *sb, u32 clu, u32 len)
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

/**
 * exfat_free_clusters - shrink an inode's cluster chain
 * @inode: file or directory, with map_lock held exclusive
 * @keep: number of clusters to keep
 *
 * The caller has already made the entry set (or size) stop referring to
 * the clusters beyond @keep, so freeing them can never expose them.
 */
int exfat_free_clusters(struct inode *inode, u32 keep)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_fat_cursor cur = {};
	const char *why;
	int err = 0;

	lockdep_assert_held_write(&ei->map_lock);
	if (keep >= ei->alloc_clus)
		return 0;

	if (!(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)) {
		err = exfat_fill_all_extents(inode);
		if (err)
			return err;
	}

	why = exfat_check_free(inode, keep);
	if (why) {
		exfat_fs_error(sb, "inode %lu: clusters not freed, left allocated (%s)",
			       inode->i_ino, why);
		err = -EFSCORRUPTED;
	}

	mutex_lock(&sbi->alloc_lock);
	exfat_set_vol_dirty(sb);
	if (ei->win_len)
		exfat_window_del(sbi, ei);
	if (why) {
		/* leaked: only cut the chain, below */
	} else if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) {
		exfat_free_run(sb, ei->start_clu + keep, ei->alloc_clus - keep);
	} else {
		int i;

		for (i = ei->nr_ext - 1; i >= 0; i--) {
			struct exfat_extent *ext = &ei->ext[i];
			u32 from = max(ext->fclu, keep);

			if (ext->fclu + ext->len <= keep)
				break;
			exfat_free_run(sb, ext->clu + (from - ext->fclu),
				       ext->fclu + ext->len - from);
		}
	}
	if (keep && !(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)) {
		int err2 = exfat_fat_set(sb, &cur,
					 exfat_map_cached(inode, keep - 1),
					 EXFAT_FAT_EOC);

		err = err ?: err2;
	}
	mutex_unlock(&sbi->alloc_lock);
	exfat_fat_cursor_release(&cur);

	exfat_extents_truncate(inode, keep);
	ei->alloc_clus = keep;
	WRITE_ONCE(ei->map_seq, ei->map_seq + 1);
	if (!keep) {
		ei->start_clu = 0;
		ei->flags &= ~EXFAT_FLAG_NO_FAT_CHAIN;
	}
	return err;
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

/*
 * Allocate one zeroed cluster for a new directory.  It must be zero and
 * marked in use on disk before the new entry set points to it, which
 * costs a write and a cache flush: so a batch of clusters (up to 256 KiB)
 * is prepared at once and the rest kept in sbi->dir_pool, for the next
 * directories.  A crash leaks what the pool holds (bitmap bits without an
 * owner, which fsck.exfat ignores); sync and unmount give it back.
 */
int exfat_alloc_dir_cluster(struct super_block *sb, u32 *clu)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_fat_cursor cur = {};
	u32 batch = clamp_t(u32, SZ_256K >> sbi->clu_shift, 1,
			    EXFAT_DIR_POOL_MAX + 1);
	u32 i, len;
	int err = 0;

	if (!READ_ONCE(sbi->free_clusters) && READ_ONCE(sbi->pending_clusters)) {
		err = exfat_commit_frees(sb);
		if (err)
			return err;
	}
	mutex_lock(&sbi->alloc_lock);
	if (sbi->dir_pool_nr) {
		*clu = sbi->dir_pool[--sbi->dir_pool_nr];
		mutex_unlock(&sbi->alloc_lock);
		return 0;
	}
	if (!sbi->free_clusters ||
	    !exfat_find_run_outside(sb, NULL, sbi->alloc_hint,
				    min(batch, sbi->free_clusters), clu, &len)) {
		mutex_unlock(&sbi->alloc_lock);
		return -ENOSPC;
	}
	exfat_set_vol_dirty(sb);
	exfat_bitmap_set_range(sb, *clu, len, true);
	sbi->free_clusters -= len;
	sbi->alloc_hint = *clu + len;
	/*
	 * Each ends a chain already: linking one to a directory is then a
	 * single FAT write, which a crash cannot tear (rule 3).  A free
	 * cluster's FAT entry means nothing, so the ones given back keep it.
	 */
	for (i = 0; i < len && !err; i++)
		err = exfat_fat_set(sb, &cur, *clu + i, EXFAT_FAT_EOC);
	mutex_unlock(&sbi->alloc_lock);
	exfat_fat_cursor_release(&cur);

	/* zeroed and marked in use on disk before an entry points to it */
	if (!err)
		err = exfat_zero_clusters_sync(sb, *clu, len);
	if (!err)
		err = exfat_sync_alloc(sb, U64_MAX);
	mutex_lock(&sbi->alloc_lock);
	if (err) {
		exfat_free_run(sb, *clu, len);
	} else {
		/*
		 * Pushed from the top, so that they are handed out in
		 * ascending order: a directory growing cluster by cluster
		 * stays contiguous.  Another task may have filled the pool
		 * meanwhile.
		 */
		for (i = len - 1; i >= 1; i--) {
			if (sbi->dir_pool_nr < EXFAT_DIR_POOL_MAX)
				sbi->dir_pool[sbi->dir_pool_nr++] = *clu + i;
			else
				exfat_release_run(sb, *clu + i, 1);
		}
	}
	mutex_unlock(&sbi->alloc_lock);
	return err;
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
