// SPDX-License-Identifier: GPL-2.0
/*
 * NFS export.  exFAT has no inode numbers: a file handle names where the
 * file's entry set is (the first cluster of its directory and the entry
 * index) and, to tell a reused slot from the original, the file's
 * creation time to 10 ms, which no write, truncate or attribute change
 * moves (the first cluster, used before, changes when an empty file gets
 * data or a file is truncated and written again).  Handles survive cache
 * eviction and remounts; after a rename or delete they are stale
 * (-ESTALE), since the set moved.  exFAT directories have no ".." entry:
 * a directory's parent is found by searching the tree for the directory
 * whose data starts at the recorded cluster.
 */
#include <linux/bitfield.h>
#include <linux/exportfs.h>
#include <linux/slab.h>
#include "exfat.h"

#define EXFAT_FILEID_TYPE	0x82
#define EXFAT_FH_LEN		4	/* in u32 units */

/* fh[3]: the directory's flags, and the creation time's 10 ms units */
#define EXFAT_FH_DIR_FLAGS	GENMASK(7, 0)
#define EXFAT_FH_BTIME_CS	GENMASK(15, 8)

static u32 exfat_fh_btime_cs(const struct inode *inode)
{
	return EXFAT_I(inode)->btime.tv_nsec / (10 * NSEC_PER_MSEC);
}

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
	fh[2] = lower_32_bits(ei->btime.tv_sec);
	fh[3] = FIELD_PREP(EXFAT_FH_DIR_FLAGS, ei->dir_flags) |
		FIELD_PREP(EXFAT_FH_BTIME_CS, exfat_fh_btime_cs(inode));
	*max_len = EXFAT_FH_LEN;
	return EXFAT_FILEID_TYPE;
}

/*
 * The inode whose set is at eidx of the directory at dir_clu.  With a
 * handle (fh) the position may be stale or forged: what is not a set
 * there, or not the set of a file created when the handle's was, is
 * -ESTALE and never reported as corruption.
 */
static struct inode *exfat_inode_at(struct super_block *sb, u32 dir_clu,
				    u8 dir_flags, u32 eidx, const u32 *fh)
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
	it.quiet = !!fh;
	err = exfat_get_entry_set(&it, eidx, &es);
	exfat_dir_iter_release(&it);
	if (err)
		return ERR_PTR(err == -ENOENT ? -ESTALE : err);
	inode = exfat_iget_pos(sb, dir_clu, dir_flags, es);
	kfree(es);
	/* the creation time as this driver reads it, cached or not */
	if (!IS_ERR(inode) && fh &&
	    (fh[2] != lower_32_bits(EXFAT_I(inode)->btime.tv_sec) ||
	     FIELD_GET(EXFAT_FH_BTIME_CS, fh[3]) != exfat_fh_btime_cs(inode))) {
		iput(inode);
		return ERR_PTR(-ESTALE);
	}
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
	return d_obtain_alias(exfat_inode_at(sb, fh[0],
					     FIELD_GET(EXFAT_FH_DIR_FLAGS, fh[3]),
					     fh[1], fh));
}

/* A directory to search: where its data starts and its DataLength. */
struct exfat_dir_ref {
	u32	clu;
	u8	flags;
	u64	size;
};

/*
 * Search the directory ref for a subdirectory whose data starts at target.
 * Returns its inode, ERR_PTR(-ESTALE) if there is none, or an error; the
 * other subdirectories are queued at *tail (room for cap entries).
 */
static struct inode *exfat_search_dir(struct super_block *sb,
				      const struct exfat_dir_ref *ref,
				      u32 target, struct exfat_dir_ref **queue,
				      unsigned int *tail, unsigned int *cap)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct inode *found = ERR_PTR(-ESTALE);
	struct exfat_walk_item item;
	struct exfat_walk w;
	struct exfat_dir_ref sub;
	int ret;

	exfat_walk_init_pos(&w, sb, ref->clu, ref->flags, ref->size);
	while ((ret = exfat_walk_next(&w, &item)) > 0) {
		if (!item.whole || !exfat_walk_item_is_dir(&item))
			continue;
		ret = exfat_walk_item_data(&w, &item, &sub.clu, &sub.flags,
					   &sub.size);
		if (ret)
			break;
		sub.flags &= EXFAT_FLAG_NO_FAT_CHAIN;
		if (sub.clu == target) {
			exfat_walk_release(&w);
			return exfat_inode_at(sb, ref->clu, ref->flags, item.eidx,
					      NULL);
		}
		/* a bad one is reported when it is looked up */
		if (!exfat_clu_valid(sbi, sub.clu) || !sub.size ||
		    sub.size > EXFAT_MAX_DIR_SIZE)
			continue;
		if (*tail == *cap) {
			void *q = krealloc_array(*queue, *cap * 2, sizeof(**queue),
						 GFP_KERNEL);

			if (!q) {
				ret = -ENOMEM;
				break;
			}
			*queue = q;
			*cap *= 2;
		}
		(*queue)[(*tail)++] = sub;
	}
	exfat_walk_release(&w);
	return ret < 0 ? ERR_PTR(ret) : found;
}

/*
 * Find the entry of the directory whose data starts at target: a bounded
 * breadth-first walk of the directories from the root, each read no
 * further than its DataLength.
 */
static struct inode *exfat_find_dir_by_clu(struct super_block *sb, u32 target)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct inode *found = ERR_PTR(-ESTALE);
	unsigned int head = 0, tail = 0, cap = 64;
	struct exfat_dir_ref *queue;

	queue = kmalloc_array(cap, sizeof(*queue), GFP_KERNEL);
	if (!queue)
		return ERR_PTR(-ENOMEM);
	queue[tail++] = (struct exfat_dir_ref){
		.clu = sbi->root_clu,
		.size = i_size_read(d_inode(sb->s_root)),
	};
	/* every directory owns a cluster: more means a loop */
	while (head < tail && head <= sbi->clu_count &&
	       PTR_ERR_OR_ZERO(found) == -ESTALE) {
		struct exfat_dir_ref ref = queue[head++];

		found = exfat_search_dir(sb, &ref, target, &queue, &tail, &cap);
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
