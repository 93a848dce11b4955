// SPDX-License-Identifier: GPL-2.0
/*
 * Inodes: built from a verified entry set, found again by the position of
 * that set (parent directory's first cluster and entry index).
 */
#include <linux/iversion.h>
#include <linux/time.h>
#include <linux/hash.h>
#include <linux/writeback.h>
#include <linux/pagemap.h>
#include "exfat.h"

struct exfat_iget_key {
	u32	dir_clu;
	u32	eidx;
	u8	dir_flags;
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
static int exfat_check_stream(struct super_block *sb, u32 dir_clu,
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
	exfat_fs_error(sb, "directory at cluster %u, entry %u: %s", dir_clu,
		       es->eidx, why);
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

static int exfat_fill_inode(struct inode *inode, u8 dir_flags,
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

	err = exfat_check_stream(sb, ei->dir_clu, es, is_dir);
	if (err)
		return err;

	inode->i_ino = iunique(sb, EXFAT_ROOT_INO + 1);
	inode_set_iversion(inode, 1);
	inode->i_generation = 0;
	ei->attr = attr;
	ei->flags = st->flags & EXFAT_FLAG_NO_FAT_CHAIN;
	ei->start_clu = le32_to_cpu(st->first_cluster);
	ei->dir_flags = dir_flags;
	inode->i_size = le64_to_cpu(st->size);
	ei->valid_size = le64_to_cpu(st->valid_size);
	ei->disk_valid = ei->valid_size;
	if (!inode->i_size)
		ei->start_clu = 0;
	ei->alloc_clus = exfat_bytes_to_clus(sbi, inode->i_size);
	ei->tail_clean = ei->valid_size >= inode->i_size ||
			 !(ei->valid_size & (sb->s_blocksize - 1));
	inode->i_blocks = round_up(inode->i_size, sbi->clu_size) >> 9;
	inode->i_uid = sbi->opts.fs_uid;
	inode->i_gid = sbi->opts.fs_gid;
	inode->i_mode = exfat_make_mode(sbi, attr);
	exfat_fill_times(inode, fe);
	/* a FAT chain is checked as it is walked (map.c) */
	if (ei->alloc_clus) {
		err = exfat_check_chain_run(inode, ei->start_clu,
					    ei->flags & EXFAT_FLAG_NO_FAT_CHAIN ?
					    ei->alloc_clus : 1);
		if (err)
			return err;
	}

	if (is_dir) {
		/*
		 * A directory's clusters past its end-of-directory entry are
		 * never read, yet it owns them: check the whole chain now, so
		 * that those the bitmap says are free are claimed before the
		 * allocator hands them to a file (directories are small).
		 */
		err = ei->alloc_clus ?
		      exfat_map_prefill(inode, ei->alloc_clus - 1) : 0;
		if (err)
			return err;
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

/*
 * Get the inode of the verified entry set es, found in the directory that
 * starts at cluster dir_clu (contiguous if dir_flags says so).
 */
struct inode *exfat_iget_pos(struct super_block *sb, u32 dir_clu, u8 dir_flags,
			     const struct exfat_entry_set *es)
{
	struct exfat_iget_key key = {
		.dir_clu = dir_clu,
		.eidx = es->eidx,
		.dir_flags = dir_flags,
	};
	struct inode *inode;
	int err;

	inode = iget5_locked(sb, exfat_pos_hash(key.dir_clu, key.eidx),
			     exfat_iget_test, exfat_iget_set, &key);
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return inode;

	err = exfat_fill_inode(inode, dir_flags, es);
	if (err) {
		iget_failed(inode);
		return ERR_PTR(err);
	}
	unlock_new_inode(inode);
	return inode;
}

struct inode *exfat_iget(struct super_block *sb, struct inode *dir,
			 const struct exfat_entry_set *es)
{
	return exfat_iget_pos(sb, EXFAT_I(dir)->start_clu,
			      EXFAT_I(dir)->flags & EXFAT_FLAG_NO_FAT_CHAIN, es);
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
	/* clusters are allocated at write time: count them before writeback */
	if (S_ISREG(inode->i_mode))
		stat->blocks = (u64)READ_ONCE(ei->alloc_clus) <<
			       (EXFAT_SB(inode->i_sb)->clu_shift - 9);
	stat->result_mask |= STATX_BTIME;
	stat->btime = ei->btime;
	stat->blksize = EXFAT_SB(inode->i_sb)->clu_size;
	return 0;
}

static void exfat_set_time(const struct timespec64 *ts, __le32 *stamp,
			   u8 *cs, u8 *tz)
{
	struct exfat_time t;

	exfat_ts_to_time(ts, 0, &t);
	*stamp = t.stamp;
	if (cs)
		*cs = t.cs;
	*tz = t.tz;
}

/* The inode's attributes and times, into its File entry. */
static void exfat_fill_file_entry(struct inode *inode,
				  struct exfat_dentry_file *fe)
{
	struct timespec64 ts;

	fe->attr = cpu_to_le16(exfat_inode_attr(inode));
	exfat_set_time(&EXFAT_I(inode)->btime, &fe->create_time,
		       &fe->create_10ms, &fe->create_tz);
	ts = inode_get_mtime(inode);
	exfat_set_time(&ts, &fe->modify_time, &fe->modify_10ms, &fe->modify_tz);
	ts = inode_get_atime(inode);
	exfat_set_time(&ts, &fe->access_time, NULL, &fe->access_tz);
}

/*
 * The ValidDataLength to write for a file whose set says old, and whose
 * DataLength becomes size.
 */
static int exfat_valid_to_write(struct inode *inode, u64 old, u64 size,
				u64 *valid)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	int err;

	*valid = min_t(u64, READ_ONCE(ei->valid_size), size);
	/*
	 * ValidDataLength on disk never covers data still in the page
	 * cache: it moves up once writeback has completed (the ioend work
	 * writes the entry set again).
	 */
	if (*valid > old &&
	    filemap_range_needs_writeback(inode->i_mapping, old, *valid - 1))
		*valid = min(old, size);
	/*
	 * Written is not durable: if no cache flush has come since the
	 * file's last data write completed (usually the one of
	 * exfat_sync_alloc() in the caller, or one for another file has),
	 * one now, before ValidDataLength moves up over it (rule 2).
	 */
	if (*valid > old &&
	    !exfat_flushed_since(inode->i_sb, READ_ONCE(ei->data_gen))) {
		err = exfat_flush(inode->i_sb);
		if (err)
			return err;
	}
	WRITE_ONCE(ei->disk_valid, *valid);
	return 0;
}

/*
 * Write the inode's attributes, times, size and chain into its entry set.
 * With sync, the sectors are on the device when this returns.
 */
int __exfat_write_inode(struct inode *inode, bool sync)
{
	struct super_block *sb = inode->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_dentry_stream *st;
	struct exfat_dentry_file *fe;
	struct exfat_entry_set *es;
	struct exfat_dir_iter it;
	u64 size, valid, seq, chain;
	u32 start_clu;
	u8 flags;
	int err, err2;

	if (ei->eidx == EXFAT_ROOT_EIDX || sb_rdonly(sb))
		return 0;
	if (exfat_forced_shutdown(sb))
		return -EIO;

	/*
	 * The chain as of one allocation, then that allocation's FAT and
	 * bitmap on disk: the set must not name clusters (or a FAT chain, for
	 * a file just converted from NoFatChain) allocated after it, whose
	 * FAT and bitmap may still be in the cache when the set's sector is
	 * written.  The size is capped to that chain; a later write_inode
	 * writes the rest (the inode was dirtied with the allocation).
	 */
	down_read(&ei->map_lock);
	seq = ei->alloc_seq;
	chain = (u64)ei->alloc_clus << sbi->clu_shift;
	start_clu = ei->start_clu;
	flags = ei->flags;
	up_read(&ei->map_lock);
	err = exfat_sync_alloc(sb, seq);
	if (err)
		return err;

	mutex_lock(&ei->pos_lock);
	if (ei->deleted || !inode->i_nlink) {
		mutex_unlock(&ei->pos_lock);
		return 0;
	}
	exfat_dir_iter_init_pos(&it, sb, ei->dir_clu, ei->dir_flags);
	it.sync = sync;
	err = exfat_get_entry_set(&it, ei->eidx, &es);
	if (err)
		goto out;
	fe = &es->de[0].file;
	st = &es->de[1].stream;
	exfat_fill_file_entry(inode, fe);
	if (S_ISDIR(inode->i_mode)) {
		size = chain;
		valid = size;
	} else {
		size = min_t(u64, i_size_read(inode), chain);
		err = exfat_valid_to_write(inode, le64_to_cpu(st->valid_size),
					   size, &valid);
		if (err)
			goto out_free;
	}
	st->flags = EXFAT_FLAG_ALLOC_POSSIBLE;
	st->first_cluster = 0;
	if (size) {
		st->flags |= flags;
		st->first_cluster = cpu_to_le32(start_clu);
	}
	st->size = cpu_to_le64(size);
	st->valid_size = cpu_to_le64(valid);
	err = exfat_put_entry_set(&it, es);
out_free:
	kfree(es);
out:
	err2 = exfat_dir_iter_release(&it);
	mutex_unlock(&ei->pos_lock);
	return err ?: err2;
}

/*
 * Find nr unused entries in dir (exfat_find_slots()), growing it by a
 * cluster, with its new size written to its entry set, as long as there
 * are none.  The caller holds dir's i_rwsem exclusive.
 */
int exfat_alloc_slots(struct inode *dir, unsigned int nr, u32 busy,
		      unsigned int busy_nr, u32 *eidx)
{
	int ret;

	while ((ret = exfat_find_slots(dir, nr, busy, busy_nr, eidx)) > 0) {
		ret = exfat_grow_dir(dir) ?: __exfat_write_inode(dir, false);
		if (ret)
			return ret;
	}
	return ret;
}

int exfat_write_inode(struct inode *inode, struct writeback_control *wbc)
{
	return __exfat_write_inode(inode, wbc->sync_mode == WB_SYNC_ALL);
}

/**
 * exfat_sync_valid_sizes - move ValidDataLength up over completed writeback
 * @sb: the volume
 *
 * sync(2) writes each inode without waiting for its data writeback to
 * complete first, so the entry sets it wrote keep ValidDataLength below
 * the data still in flight then.  Once that writeback has completed (the
 * caller has flushed the ioend work), write the sets of every file whose
 * ValidDataLength lags; the first one flushes the cache (rule 2), the
 * others find their data covered by that flush.
 */
int exfat_sync_valid_sizes(struct super_block *sb)
{
	struct inode *inode, *prev = NULL;
	int err = 0, err2;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		struct exfat_inode_info *ei = EXFAT_I(inode);

		spin_lock(&inode->i_lock);
		if ((inode->i_state & (I_FREEING | I_WILL_FREE | I_NEW)) ||
		    !S_ISREG(inode->i_mode) ||
		    READ_ONCE(ei->valid_size) <= READ_ONCE(ei->disk_valid)) {
			spin_unlock(&inode->i_lock);
			continue;
		}
		__iget(inode);
		spin_unlock(&inode->i_lock);
		spin_unlock(&sb->s_inode_list_lock);
		/* the reference kept the previous inode on the list */
		iput(prev);
		prev = inode;
		err2 = __exfat_write_inode(inode, true);
		err = err ?: err2;
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(prev);
	return err;
}

/* exFAT keeps access times to 2 seconds, with no 10 ms field. */
static void exfat_truncate_atime(struct inode *inode)
{
	struct timespec64 ts = inode_get_atime(inode);

	ts.tv_sec &= ~1LL;
	ts.tv_nsec = 0;
	inode_set_atime_to_ts(inode, ts);
}

int exfat_update_time(struct inode *inode, int flags)
{
	generic_update_time(inode, flags);
	if (flags & S_ATIME)
		exfat_truncate_atime(inode);
	return 0;
}

/*
 * Like vfat: a caller that does not own the file may still set its times
 * when allow_utime grants write permission to its class.
 */
static bool exfat_may_set_time(struct mnt_idmap *idmap,
			       const struct exfat_sb_info *sbi,
			       struct inode *inode)
{
	unsigned short allow = sbi->opts.allow_utime;

	if (vfsuid_eq_kuid(i_uid_into_vfsuid(idmap, inode), current_fsuid()))
		return false;
	if (vfsgid_in_group_p(i_gid_into_vfsgid(idmap, inode)))
		allow >>= 3;
	return allow & MAY_WRITE;
}

/*
 * Permission bits exFAT can store: the r and x bits are fixed by the
 * masks, and the w bits are all or nothing (the read-only attribute) for
 * files whose mask lets any be set.  Returns false for any other mode.
 */
static bool exfat_mode_storable(const struct exfat_sb_info *sbi,
				struct inode *inode, umode_t mode)
{
	umode_t mask = S_ISDIR(inode->i_mode) ? sbi->opts.fs_dmask :
						sbi->opts.fs_fmask;
	umode_t perm = mode & ~(S_IFMT | mask);

	if ((perm & 0555) != (inode->i_mode & 0555))
		return false;
	if (S_ISDIR(inode->i_mode) || !(~mask & 0222))
		return (perm & 0222) == (inode->i_mode & 0222);
	return !(perm & 0222) || (perm & 0222) == (0222 & ~mask);
}

int exfat_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
		  struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	unsigned int valid = attr->ia_valid;
	int err;

	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return -EIO;

	if ((valid & (ATTR_MTIME_SET | ATTR_ATIME_SET | ATTR_TIMES_SET)) &&
	    exfat_may_set_time(idmap, sbi, inode))
		attr->ia_valid &= ~(ATTR_MTIME_SET | ATTR_ATIME_SET |
				    ATTR_TIMES_SET);
	err = setattr_prepare(idmap, dentry, attr);
	attr->ia_valid = valid;
	if (err)
		return err;

	if ((valid & ATTR_UID &&
	     !uid_eq(from_vfsuid(idmap, i_user_ns(inode), attr->ia_vfsuid),
		     sbi->opts.fs_uid)) ||
	    (valid & ATTR_GID &&
	     !gid_eq(from_vfsgid(idmap, i_user_ns(inode), attr->ia_vfsgid),
		     sbi->opts.fs_gid)) ||
	    (valid & ATTR_MODE &&
	     attr->ia_mode & ~(S_IFREG | S_IFLNK | S_IFDIR | 0777)))
		return -EPERM;

	/* as vfat and the in-tree driver: an unstorable mode is ignored */
	if (valid & ATTR_MODE && !exfat_mode_storable(sbi, inode, attr->ia_mode))
		attr->ia_valid &= ~ATTR_MODE;

	if (valid & ATTR_SIZE) {
		err = exfat_truncate(inode, attr->ia_size);
		if (err)
			return err;
		inode_set_mtime_to_ts(inode, inode_set_ctime_current(inode));
	}

	setattr_copy(idmap, inode, attr);
	if (attr->ia_valid & ATTR_MODE && !S_ISDIR(inode->i_mode)) {
		if (inode->i_mode & 0222)
			EXFAT_I(inode)->attr &= ~EXFAT_ATTR_READONLY;
		else
			EXFAT_I(inode)->attr |= EXFAT_ATTR_READONLY;
	}
	exfat_truncate_atime(inode);
	mark_inode_dirty(inode);
	return 0;
}

const struct inode_operations exfat_file_inode_operations = {
	.setattr	= exfat_setattr,
	.getattr	= exfat_getattr,
	.update_time	= exfat_update_time,
	.fiemap		= exfat_fiemap,
	.fileattr_get	= exfat_fileattr_get,
	.fileattr_set	= exfat_fileattr_set,
};

/* Record that inode's entry set is now at eidx of dir, and rehash it. */
void exfat_set_position(struct inode *inode, struct inode *dir, u32 eidx)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	lockdep_assert_held(&ei->pos_lock);
	ei->dir_clu = EXFAT_I(dir)->start_clu;
	ei->dir_flags = EXFAT_I(dir)->flags & EXFAT_FLAG_NO_FAT_CHAIN;
	ei->eidx = eidx;
	__insert_inode_hash(inode, exfat_pos_hash(ei->dir_clu, eidx));
}
