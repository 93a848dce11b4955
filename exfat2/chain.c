// SPDX-License-Identifier: GPL-2.0
/*
 * Cluster chains: growing and cutting a file's or directory's chain (FAT
 * links or NoFatChain, kept in step with map.c's extent cache), and the
 * allocation policy: where new clusters come from (the allocation windows
 * of window.c, the pool of zeroed directory clusters).  The bitmap itself
 * is balloc.c's.
 */
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/sizes.h>
#include "exfat.h"

/*
 * After an allocation ending at cluster last: the window of ei (window.c)
 * moves after it, sized for the file.
 */
static void exfat_window_set(struct exfat_sb_info *sbi,
			     struct exfat_inode_info *ei, u32 last)
{
	lockdep_assert_held(&sbi->alloc_lock);
	exfat_window_place(&sbi->windows, &ei->win, last,
			   exfat_window_want(ei->alloc_clus, sbi->clu_shift),
			   sbi->clu_count + EXFAT_FIRST_CLUSTER);
}

/* The file no longer needs its window (closed, truncated, evicted). */
void exfat_window_drop(struct inode *inode)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);

	if (!READ_ONCE(ei->win.len))
		return;
	mutex_lock(&sbi->alloc_lock);
	if (ei->win.len)
		exfat_window_del(&sbi->windows, &ei->win);
	mutex_unlock(&sbi->alloc_lock);
}

/*
 * A free run at or after hint, at most max long, outside the windows of
 * files other than self (NULL: of every file) unless there is none.
 */
static bool exfat_find_run_outside(struct super_block *sb,
				   const struct exfat_inode_info *self,
				   u32 hint, u32 max, u32 *start, u32 *len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_bitmap bm = exfat_bitmap_of(sbi);

	lockdep_assert_held(&sbi->alloc_lock);
	return exfat_windows_find(&sbi->windows, self ? &self->win : NULL, &bm,
				  hint, max, start, len);
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
	runs = kvmalloc_array(ei->emap.nr, sizeof(*runs), GFP_NOFS);
	if (!runs)
		return NULL;	/* the checks are a safety net, not a must */
	for (i = 0; i < ei->emap.nr; i++) {
		const struct exfat_extent *ext = &ei->emap.ext[i];
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
	const struct exfat_extent *last;

	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)
		return ei->start_clu + ei->alloc_clus - 1;
	last = &ei->emap.ext[ei->emap.nr - 1];
	return last->clu + last->len - 1;
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
	if (ei->win.len)
		exfat_window_del(&sbi->windows, &ei->win);
	if (why) {
		/* leaked: only cut the chain, below */
	} else if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) {
		exfat_free_run(sb, ei->start_clu + keep, ei->alloc_clus - keep);
	} else {
		int i;

		for (i = ei->emap.nr - 1; i >= 0; i--) {
			struct exfat_extent *ext = &ei->emap.ext[i];
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
