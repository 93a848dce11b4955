// SPDX-License-Identifier: GPL-2.0
/*
 * File cluster to disk cluster mapping.
 *
 * A NoFatChain file is one extent.  A FAT-chained file is walked once and
 * remembered as a sorted array of extents (runs of consecutive clusters),
 * so a long fragmented file is never walked again and a lookup is a binary
 * search under a shared lock.
 */
#include <linux/slab.h>
#include "exfat.h"

/* Clusters the inode owns according to its size (DataLength). */
static u32 exfat_inode_clus(struct inode *inode)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);

	return exfat_bytes_to_clus(sbi, i_size_read(inode));
}

static const struct exfat_extent *exfat_find_extent(struct exfat_inode_info *ei,
						    u32 fclu)
{
	unsigned int lo = 0, hi = ei->nr_ext;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct exfat_extent *ext = &ei->ext[mid];

		if (fclu < ext->fclu)
			hi = mid;
		else if (fclu - ext->fclu >= ext->len)
			lo = mid + 1;
		else
			return ext;
	}
	return NULL;
}

static int exfat_add_extent(struct exfat_inode_info *ei, u32 clu)
{
	struct exfat_extent *last = ei->nr_ext ? &ei->ext[ei->nr_ext - 1] : NULL;

	if (last && last->clu + last->len == clu) {
		last->len++;
	} else {
		if (ei->nr_ext == ei->ext_cap) {
			unsigned int cap = max(8U, ei->ext_cap * 2);
			struct exfat_extent *ext;

			ext = kvrealloc(ei->ext, cap * sizeof(*ext), GFP_NOFS);
			if (!ext)
				return -ENOMEM;
			ei->ext = ext;
			ei->ext_cap = cap;
		}
		ei->ext[ei->nr_ext++] = (struct exfat_extent) {
			.fclu = ei->ext_fclus, .clu = clu, .len = 1,
		};
	}
	ei->ext_fclus++;
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

	if (!ei->nr_ext) {
		err = exfat_add_extent(ei, ei->start_clu);
		if (err)
			return err;
	}
	clu = ei->ext[ei->nr_ext - 1].clu + ei->ext[ei->nr_ext - 1].len - 1;
	while (ei->ext_fclus < total) {
		err = exfat_fat_next(sb, &cur, clu, &next);
		if (err)
			break;
		if (next == EXFAT_FAT_EOC) {
			exfat_fs_error(sb, "inode %lu: cluster chain ends after %u of %u clusters",
				       inode->i_ino, ei->ext_fclus, total);
			err = -EFSCORRUPTED;
			break;
		}
		/* stop at the end of the run that holds fclu */
		if (ei->ext_fclus > fclu && next != clu + 1)
			break;
		err = exfat_add_extent(ei, next);
		if (err)
			break;
		clu = next;
	}
	exfat_fat_cursor_release(&cur);
	return err;
}

/**
 * exfat_map_cluster - find the disk cluster of a file cluster
 * @inode: file or directory
 * @fclu: cluster index in the file, below the cluster count of i_size
 * @clu: the disk cluster
 * @len: how many clusters from @clu on are contiguous in file and on disk
 *
 * Takes map_lock; the caller must keep i_size stable.  Returns 0,
 * -EFSCORRUPTED when the chain is shorter than the size says, or -ENOMEM.
 */
int exfat_map_cluster(struct inode *inode, u32 fclu, u32 *clu, u32 *len)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	const struct exfat_extent *ext;
	u32 total = exfat_inode_clus(inode);
	int err;

	if (WARN_ON_ONCE(fclu >= total || !ei->start_clu))
		return -EIO;

	if (ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) {
		*clu = ei->start_clu + fclu;
		*len = total - fclu;
		return 0;
	}

	down_read(&ei->map_lock);
	ext = exfat_find_extent(ei, fclu);
	if (ext && (fclu - ext->fclu < ext->len - 1 || ei->ext_fclus >= total ||
		    ext != &ei->ext[ei->nr_ext - 1]))
		goto found;
	up_read(&ei->map_lock);

	down_write(&ei->map_lock);
	err = exfat_fill_extents(inode, fclu, total);
	downgrade_write(&ei->map_lock);
	ext = exfat_find_extent(ei, fclu);
	if (!ext) {
		up_read(&ei->map_lock);
		return err ?: -EFSCORRUPTED;
	}
found:
	*clu = ext->clu + (fclu - ext->fclu);
	*len = ext->len - (fclu - ext->fclu);
	up_read(&ei->map_lock);
	return 0;
}

void exfat_drop_extents(struct inode *inode)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	kvfree(ei->ext);
	ei->ext = NULL;
	ei->nr_ext = 0;
	ei->ext_cap = 0;
	ei->ext_fclus = 0;
}
