// SPDX-License-Identifier: GPL-2.0
/*
 * File cluster to disk cluster mapping.
 *
 * A NoFatChain file is one extent.  A FAT-chained file is walked once and
 * remembered as a sorted array of extents (runs of consecutive clusters),
 * so a long fragmented file is never walked again and a lookup is a binary
 * search under a shared lock.
 */
#include "exfat.h"

/**
 * exfat_check_chain_run - check clusters of an inode's chain before use
 * @inode: file or directory
 * @clu: first cluster of the run, range-checked
 * @len: its length, within the heap
 *
 * A run holding clusters of the bitmap or the up-case table is corrupt:
 * -EFSCORRUPTED.  Clusters the bitmap says are free are claimed (see
 * exfat_claim_run()) so that no other file is given them.
 */
int exfat_check_chain_run(struct inode *inode, u32 clu, u32 len)
{
	const char *why;
	u32 free;

	why = exfat_check_run(inode->i_sb, clu, len, &free);
	if (why) {
		exfat_fs_error(inode->i_sb, "inode %lu: its chain holds a %s (from cluster %u)",
			       inode->i_ino, why, clu);
		return -EFSCORRUPTED;
	}
	if (free)
		exfat_claim_run(inode, free, clu + len - free);
	return 0;
}

/*
 * Extend the extent cache so that it covers file cluster fclu and the
 * rest of the run that contains it.  Called with map_lock held exclusive.
 */
static int exfat_fill_extents(struct inode *inode, u32 fclu, u32 total)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_fat_cursor cur = {};
	u32 clu, next;
	int err = 0;

	lockdep_assert_held_write(&ei->map_lock);
	if (ei->emap.fclus >= total)
		return 0;

	if (!ei->emap.nr) {
		err = exfat_check_chain_run(inode, ei->start_clu, 1) ?:
		      exfat_extent_add(&ei->emap, ei->start_clu, 1);
		if (err)
			return err;
	}
	clu = ei->emap.ext[ei->emap.nr - 1].clu +
	      ei->emap.ext[ei->emap.nr - 1].len - 1;
	while (ei->emap.fclus < total) {
		err = exfat_fat_next(sb, &cur, clu, &next);
		if (err)
			break;
		if (next == EXFAT_FAT_EOC) {
			exfat_fs_error(sb, "inode %lu: cluster chain ends after %u of %u clusters",
				       inode->i_ino, ei->emap.fclus, total);
			err = -EFSCORRUPTED;
			break;
		}
		/* stop at the end of the run that holds fclu */
		if (ei->emap.fclus > fclu && next != clu + 1)
			break;
		err = exfat_check_chain_run(inode, next, 1) ?:
		      exfat_extent_add(&ei->emap, next, 1);
		if (err)
			break;
		clu = next;
	}
	exfat_fat_cursor_release(&cur);
	return err;
}

static const struct exfat_extent *
exfat_cached(struct exfat_inode_info *ei, u32 fclu)
{
	const struct exfat_extent *ext = exfat_extent_find(&ei->emap, fclu);

	/* a hit in the last extent may be a run that goes on uncached */
	if (ext && ext == &ei->emap.ext[ei->emap.nr - 1] &&
	    ei->emap.fclus < ei->alloc_clus && fclu == ext->fclu + ext->len - 1)
		return NULL;
	return ext;
}

/**
 * exfat_map_cluster - find the disk cluster of a file cluster
 * @inode: file or directory
 * @fclu: cluster index in the file, below its allocated cluster count
 * @clu: the disk cluster
 * @len: how many clusters from @clu on are contiguous in file and on disk
 *
 * Takes map_lock, shared unless the extent cache has to grow.  Returns 0,
 * -EFSCORRUPTED when the chain is shorter than the inode says, or -ENOMEM.
 */
int exfat_map_cluster(struct inode *inode, u32 fclu, u32 *clu, u32 *len)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	const struct exfat_extent *ext;
	int err;

	down_read(&ei->map_lock);
	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN || fclu >= ei->alloc_clus) {
		err = exfat_map_cluster_locked(inode, fclu, clu, len);
		up_read(&ei->map_lock);
		return err;
	}
	ext = exfat_cached(ei, fclu);
	if (ext) {
		*clu = ext->clu + (fclu - ext->fclu);
		*len = ext->len - (fclu - ext->fclu);
		up_read(&ei->map_lock);
		return 0;
	}
	up_read(&ei->map_lock);

	down_write(&ei->map_lock);
	err = exfat_map_cluster_locked(inode, fclu, clu, len);
	up_write(&ei->map_lock);
	return err;
}

/* As exfat_map_cluster(), with map_lock held (exclusive if it must fill). */
int exfat_map_cluster_locked(struct inode *inode, u32 fclu, u32 *clu,
			     u32 *len)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	const struct exfat_extent *ext;
	int err;

	if (WARN_ON_ONCE(fclu >= ei->alloc_clus || !ei->start_clu))
		return -EIO;

	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) {
		*clu = ei->start_clu + fclu;
		*len = ei->alloc_clus - fclu;
		return 0;
	}

	ext = exfat_cached(ei, fclu);
	if (!ext) {
		lockdep_assert_held_write(&ei->map_lock);
		err = exfat_fill_extents(inode, fclu, ei->alloc_clus);
		ext = exfat_extent_find(&ei->emap, fclu);
		if (!ext)
			return err ?: -EFSCORRUPTED;
	}
	*clu = ext->clu + (fclu - ext->fclu);
	*len = ext->len - (fclu - ext->fclu);
	return 0;
}

/*
 * Walk the chain up to file cluster fclu now, before a buffered read, so
 * that a corrupt chain fails the read with -EFSCORRUPTED: from inside
 * readahead every error becomes -EIO.
 */
int exfat_map_prefill(struct inode *inode, u32 fclu)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	bool cached;
	int err = 0;

	down_read(&ei->map_lock);
	cached = ei->flags & EXFAT_FLAG_NO_FAT_CHAIN ||
		 fclu >= ei->alloc_clus || exfat_extent_find(&ei->emap, fclu);
	up_read(&ei->map_lock);
	if (cached)
		return 0;
	down_write(&ei->map_lock);
	if (!(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) && fclu < ei->alloc_clus)
		err = exfat_fill_extents(inode, fclu, ei->alloc_clus);
	up_write(&ei->map_lock);
	return err;
}

/* Disk cluster of a file cluster the extent cache is known to cover. */
u32 exfat_map_cached(struct inode *inode, u32 fclu)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	const struct exfat_extent *ext;

	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN)
		return ei->start_clu + fclu;
	ext = exfat_extent_find(&ei->emap, fclu);
	if (WARN_ON_ONCE(!ext))
		return 0;
	return ext->clu + (fclu - ext->fclu);
}

/* Make the extent cache of a FAT-chained inode cover its whole chain. */
int exfat_fill_all_extents(struct inode *inode)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	lockdep_assert_held_write(&ei->map_lock);
	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN || !ei->alloc_clus ||
	    ei->emap.fclus >= ei->alloc_clus)
		return 0;
	return exfat_fill_extents(inode, ei->alloc_clus - 1, ei->alloc_clus);
}

/* The inode was contiguous and is now chained: describe it as one run. */
int exfat_extents_from_contiguous(struct inode *inode)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	lockdep_assert_held_write(&ei->map_lock);
	exfat_extent_truncate(&ei->emap, 0);
	return exfat_extent_add(&ei->emap, ei->start_clu, ei->alloc_clus);
}

/* Record newly linked clusters at the end of a fully cached chain. */
int exfat_extents_append(struct inode *inode, u32 clu, u32 len)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	lockdep_assert_held_write(&ei->map_lock);
	if (WARN_ON_ONCE(ei->emap.fclus != ei->alloc_clus))
		return -EIO;
	return exfat_extent_add(&ei->emap, clu, len);
}

/* Forget the clusters from file cluster keep on. */
void exfat_extents_truncate(struct inode *inode, u32 keep)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	lockdep_assert_held_write(&ei->map_lock);
	exfat_extent_truncate(&ei->emap, keep);
}

void exfat_drop_extents(struct inode *inode)
{
	exfat_extent_free(&EXFAT_I(inode)->emap);
}
