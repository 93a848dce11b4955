// SPDX-License-Identifier: GPL-2.0
/*
 * Inodes: built from a verified entry set, found again by the position of
 * that set (parent directory's first cluster and entry index).
 */
#include <linux/iversion.h>
#include <linux/time.h>
#include <linux/hash.h>
#include "exfat.h"

struct exfat_iget_key {
	u32	dir_clu;
	u32	eidx;
};

static unsigned long exfat_pos_hash(u32 dir_clu, u32 eidx)
{
	return hash_64(((u64)dir_clu << 32) | eidx, 32);
}

static int exfat_iget_test(struct inode *inode, void *data)
{
	const struct exfat_iget_key *key = data;
	const struct exfat_inode_info *ei = EXFAT_I(inode);

	return ei->dir_clu == key->dir_clu && ei->eidx == key->eidx;
}

static int exfat_iget_set(struct inode *inode, void *data)
{
	const struct exfat_iget_key *key = data;
	struct exfat_inode_info *ei = EXFAT_I(inode);

	ei->dir_clu = key->dir_clu;
	ei->eidx = key->eidx;
	return 0;
}

int exfat_local_offset(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	if (sbi->opts.sys_tz)
		return -sys_tz.tz_minuteswest;
	return sbi->opts.time_offset;
}

umode_t exfat_make_mode(struct exfat_sb_info *sbi, u16 attr)
{
	umode_t mode = 0777;

	if (attr & EXFAT_ATTR_DIRECTORY)
		return S_IFDIR | (mode & ~sbi->opts.fs_dmask);
	if (attr & EXFAT_ATTR_READONLY)
		mode &= ~0222;
	return S_IFREG | (mode & ~sbi->opts.fs_fmask);
}

/* Check the stream entry against the volume before the inode uses it. */
static int exfat_check_stream(struct super_block *sb, struct inode *dir,
			      const struct exfat_entry_set *es, bool is_dir)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	const struct exfat_dentry_stream *st = exfat_es_stream(es);
	u32 start = le32_to_cpu(st->first_cluster);
	u64 size = le64_to_cpu(st->size);
	u64 nclu = exfat_bytes_to_clus(sbi, size);
	const char *why = NULL;

	if (size > ((u64)sbi->clu_count << sbi->clu_shift))
		why = "DataLength larger than the volume";
	else if (size && !exfat_clu_valid(sbi, start))
		why = "FirstCluster out of range";
	else if (size && (st->flags & EXFAT_FLAG_NO_FAT_CHAIN) &&
		 start - EXFAT_FIRST_CLUSTER > sbi->clu_count - nclu)
		why = "contiguous file runs past the end of the cluster heap";
	else if (is_dir && (size & (sbi->clu_size - 1)))
		why = "directory size not a multiple of the cluster size";
	else if (is_dir && size > EXFAT_MAX_DIR_SIZE)
		why = "directory larger than 256 MiB";
	else if (is_dir && size && le64_to_cpu(st->valid_size) != size)
		why = "directory ValidDataLength differs from DataLength";
	if (!why)
		return 0;
	exfat_fs_error(sb, "directory %lu, entry %u: %s", dir->i_ino, es->eidx,
		       why);
	return -EFSCORRUPTED;
}

static void exfat_fill_times(struct inode *inode,
			     const struct exfat_dentry_file *fe)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	int local = exfat_local_offset(inode->i_sb);
	struct exfat_time t;
	struct timespec64 ts;

	t = (struct exfat_time){ fe->create_time, fe->create_10ms, fe->create_tz };
	exfat_time_to_ts(&t, local, &ei->btime);
	t = (struct exfat_time){ fe->modify_time, fe->modify_10ms, fe->modify_tz };
	exfat_time_to_ts(&t, local, &ts);
	inode_set_mtime_to_ts(inode, ts);
	inode_set_ctime_to_ts(inode, ts);
	t = (struct exfat_time){ fe->access_time, 0, fe->access_tz };
	exfat_time_to_ts(&t, local, &ts);
	inode_set_atime_to_ts(inode, ts);
}

static int exfat_fill_inode(struct inode *inode, struct inode *dir,
			    const struct exfat_entry_set *es)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	const struct exfat_dentry_file *fe = &es->de[0].file;
	const struct exfat_dentry_stream *st = exfat_es_stream(es);
	u16 attr = le16_to_cpu(fe->attr);
	bool is_dir = attr & EXFAT_ATTR_DIRECTORY;
	int err;

	err = exfat_check_stream(sb, dir, es, is_dir);
	if (err)
		return err;

	inode->i_ino = iunique(sb, EXFAT_ROOT_INO + 1);
	inode_set_iversion(inode, 1);
	inode->i_generation = 0;
	ei->attr = attr;
	ei->flags = st->flags & EXFAT_FLAG_NO_FAT_CHAIN;
	ei->start_clu = le32_to_cpu(st->first_cluster);
	ei->dir_flags = EXFAT_I(dir)->flags & EXFAT_FLAG_NO_FAT_CHAIN;
	inode->i_size = le64_to_cpu(st->size);
	ei->valid_size = le64_to_cpu(st->valid_size);
	if (!inode->i_size)
		ei->start_clu = 0;
	inode->i_blocks = round_up(inode->i_size, sbi->clu_size) >> 9;
	inode->i_uid = sbi->opts.fs_uid;
	inode->i_gid = sbi->opts.fs_gid;
	inode->i_mode = exfat_make_mode(sbi, attr);
	exfat_fill_times(inode, fe);

	if (is_dir) {
		inode->i_op = &exfat_dir_inode_operations;
		inode->i_fop = &exfat_dir_operations;
		err = exfat_count_subdirs(inode);
		if (err < 0)
			return err;
		set_nlink(inode, err + 2);
	} else {
		inode->i_op = &exfat_file_inode_operations;
		inode->i_fop = &exfat_file_operations;
		inode->i_mapping->a_ops = &exfat_aops;
		set_nlink(inode, 1);
	}
	return 0;
}

/* Get the inode of the verified entry set es at eidx of directory dir. */
struct inode *exfat_iget(struct super_block *sb, struct inode *dir,
			 const struct exfat_entry_set *es)
{
	struct exfat_iget_key key = {
		.dir_clu = EXFAT_I(dir)->start_clu,
		.eidx = es->eidx,
	};
	struct inode *inode;
	int err;

	inode = iget5_locked(sb, exfat_pos_hash(key.dir_clu, key.eidx),
			     exfat_iget_test, exfat_iget_set, &key);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return inode;

	err = exfat_fill_inode(inode, dir, es);
	if (err) {
		iget_failed(inode);
		return ERR_PTR(err);
	}
	unlock_new_inode(inode);
	return inode;
}

/* The inode of entry eidx of dir if it is in memory. */
struct inode *exfat_ilookup(struct super_block *sb, struct inode *dir,
			    u32 eidx)
{
	struct exfat_iget_key key = {
		.dir_clu = EXFAT_I(dir)->start_clu,
		.eidx = eidx,
	};

	return ilookup5(sb, exfat_pos_hash(key.dir_clu, key.eidx),
			exfat_iget_test, &key);
}

int exfat_getattr(struct mnt_idmap *idmap, const struct path *path,
		  struct kstat *stat, u32 request_mask, unsigned int flags)
{
	struct inode *inode = d_backing_inode(path->dentry);
	struct exfat_inode_info *ei = EXFAT_I(inode);

	generic_fillattr(idmap, request_mask, inode, stat);
	stat->result_mask |= STATX_BTIME;
	stat->btime = ei->btime;
	stat->blksize = EXFAT_SB(inode->i_sb)->clu_size;
	return 0;
}

const struct inode_operations exfat_file_inode_operations = {
	.getattr	= exfat_getattr,
	.fiemap		= exfat_fiemap,
};
