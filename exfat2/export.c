// SPDX-License-Identifier: GPL-2.0
/*
 * NFS export.  A file handle names where the file's entry set is (the
 * first cluster of its directory and the entry index) and, to tell a
 * reused slot from the original, the file's first cluster.  Handles
 * survive cache eviction and remounts; after a rename or delete they are
 * stale (-ESTALE), since the set moved.  exFAT directories have no ".."
 * entry: a directory's parent is found by searching the tree for the
 * directory whose data starts at the recorded cluster.
 */
#include <linux/exportfs.h>
#include <linux/slab.h>
#include "exfat.h"

#define EXFAT_FILEID_TYPE	0x81
#define EXFAT_FH_LEN		4	/* in u32 units */

static int exfat_encode_fh(struct inode *inode, __u32 *fh, int *max_len,
			   struct inode *parent)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	if (*max_len < EXFAT_FH_LEN) {
		*max_len = EXFAT_FH_LEN;
		return FILEID_INVALID;
	}
	fh[0] = ei->dir_clu;
	fh[1] = ei->eidx;
	fh[2] = ei->start_clu;
	fh[3] = ei->dir_flags;
	*max_len = EXFAT_FH_LEN;
	return EXFAT_FILEID_TYPE;
}

/* The inode whose set is at eidx of the directory at dir_clu. */
static struct inode *exfat_inode_at(struct super_block *sb, u32 dir_clu,
				    u8 dir_flags, u32 eidx, u32 start,
				    bool check_start)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_entry_set *es;
	struct exfat_dir_iter it;
	struct inode *inode;
	int err;

	if (!exfat_clu_valid(sbi, dir_clu) ||
	    eidx >= EXFAT_MAX_DIR_SIZE >> EXFAT_DENTRY_SHIFT)
		return ERR_PTR(-ESTALE);
	exfat_dir_iter_init_pos(&it, sb, dir_clu, dir_flags);
	err = exfat_get_entry_set(&it, eidx, &es);
	exfat_dir_iter_release(&it);
	if (err)
		return ERR_PTR(err == -ENOENT ? -ESTALE : err);
	if (check_start &&
	    le32_to_cpu(exfat_es_stream(es)->first_cluster) != start) {
		kfree(es);
		return ERR_PTR(-ESTALE);
	}
	inode = exfat_iget_pos(sb, dir_clu, dir_flags, es);
	kfree(es);
	return inode;
}

static struct dentry *exfat_fh_to_dentry(struct super_block *sb,
					 struct fid *fid, int fh_len,
					 int fh_type)
{
	const u32 *fh = fid->raw;

	if (fh_type != EXFAT_FILEID_TYPE || fh_len < EXFAT_FH_LEN)
		return NULL;
	if (fh[1] == EXFAT_ROOT_EIDX)
		return dget(sb->s_root);
	return d_obtain_alias(exfat_inode_at(sb, fh[0], fh[3] & 0xff, fh[1],
					     fh[2], true));
}

/*
 * Find the entry of the directory whose data starts at target: a bounded
 * breadth-first walk of the directories from the root.
 */
static struct inode *exfat_find_dir_by_clu(struct super_block *sb, u32 target)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	const union exfat_dentry *de;
	struct exfat_dir_iter it;
	struct inode *found = ERR_PTR(-ESTALE);
	unsigned int head = 0, tail = 0, cap = 64;
	struct { u32 clu; u8 flags; } *queue;
	u32 eidx, visited = 0;

	queue = kmalloc_array(cap, sizeof(*queue), GFP_KERNEL);
	if (!queue)
		return ERR_PTR(-ENOMEM);
	queue[tail].clu = sbi->root_clu;
	queue[tail++].flags = 0;

	while (head < tail && IS_ERR(found) && PTR_ERR(found) == -ESTALE) {
		u32 dclu = queue[head].clu;
		u8 dflags = queue[head++].flags;

		/* every directory owns a cluster: more means a loop */
		if (++visited > sbi->clu_count)
			break;
		exfat_dir_iter_init_pos(&it, sb, dclu, dflags);
		for (eidx = 0; eidx < EXFAT_MAX_DIR_SIZE >> EXFAT_DENTRY_SHIFT;
		     eidx++) {
			u32 clu;
			u8 fl;

			de = exfat_dir_iter_get(&it, eidx);
			if (IS_ERR(de) || de->generic.type == EXFAT_TYPE_EOD)
				break;
			if (de->generic.type != EXFAT_TYPE_FILE ||
			    !(le16_to_cpu(de->file.attr) & EXFAT_ATTR_DIRECTORY))
				continue;
			de = exfat_dir_iter_get(&it, eidx + 1);
			if (IS_ERR(de) || de->generic.type != EXFAT_TYPE_STREAM)
				break;
			clu = le32_to_cpu(de->stream.first_cluster);
			fl = de->stream.flags & EXFAT_FLAG_NO_FAT_CHAIN;
			if (clu == target) {
				exfat_dir_iter_release(&it);
				found = exfat_inode_at(sb, dclu, dflags, eidx, 0,
						       false);
				break;
			}
			if (!exfat_clu_valid(sbi, clu))
				continue;
			if (tail == cap) {
				void *q = krealloc_array(queue, cap * 2,
							 sizeof(*queue),
							 GFP_KERNEL);

				if (!q) {
					found = ERR_PTR(-ENOMEM);
					break;
				}
				queue = q;
				cap *= 2;
			}
			queue[tail].clu = clu;
			queue[tail++].flags = fl;
		}
		exfat_dir_iter_release(&it);
	}
	kfree(queue);
	return found;
}

static struct dentry *exfat_get_parent(struct dentry *child)
{
	struct super_block *sb = child->d_sb;
	u32 dir_clu = EXFAT_I(d_inode(child))->dir_clu;

	if (dir_clu == EXFAT_SB(sb)->root_clu)
		return dget(sb->s_root);
	return d_obtain_alias(exfat_find_dir_by_clu(sb, dir_clu));
}

const struct export_operations exfat_export_ops = {
	.encode_fh	= exfat_encode_fh,
	.fh_to_dentry	= exfat_fh_to_dentry,
	.get_parent	= exfat_get_parent,
};
