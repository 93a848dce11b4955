// SPDX-License-Identifier: GPL-2.0
/*
 * Superblock: mount options, boot region (with fall back to the backup
 * region), volume metadata lookup in the root directory, statfs and the
 * module entry points.
 */
#include <linux/module.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/blkdev.h>
#include <linux/seq_file.h>
#include <linux/statfs.h>
#include <linux/iversion.h>
#include <linux/fs_struct.h>
#include <linux/cred.h>
#include <linux/log2.h>
#include <uapi/linux/exfat.h>
#include "exfat.h"

#define EXFAT_DEFAULT_IOCHARSET	"utf8"

/*
 * The range of stamps exFAT can hold as written here (in UTC, §7.4.8):
 * 1980-01-01 00:00:00 to 2107-12-31 23:59:59.
 */
#define EXFAT_MIN_TIME		315532800LL
#define EXFAT_MAX_TIME		4354819199LL

static struct kmem_cache *exfat_inode_cachep;

static struct inode *exfat_alloc_inode(struct super_block *sb)
{
	struct exfat_inode_info *ei;

	ei = alloc_inode_sb(sb, exfat_inode_cachep, GFP_NOFS);
	if (!ei)
		return NULL;
	/*
	 * Not in the slab constructor: debugobjects forgets a work item
	 * when its memory is freed, so it is set up for every inode.
	 */
	INIT_WORK(&ei->ioend_work, exfat_ioend_work);
	ei->start_clu = 0;
	ei->flags = 0;
	ei->attr = 0;
	ei->valid_size = 0;
	ei->alloc_clus = 0;
	ei->alloc_seq = 0;
	exfat_window_init(&ei->win);
	ei->deleted = false;
	ei->disk_valid = 0;
	ei->data_gen = 0;
	ei->find_hint = 0;
	ei->free_hint = 0;
	ei->dindex = NULL;
	ei->tail_clean = true;
	ei->emap = (struct exfat_extent_map) {};
	return &ei->vfs_inode;
}

static void exfat_free_inode(struct inode *inode)
{
	kmem_cache_free(exfat_inode_cachep, EXFAT_I(inode));
}

static void exfat_evict_inode(struct inode *inode)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	truncate_inode_pages_final(&inode->i_data);
	flush_work(&ei->ioend_work);
	/*
	 * An unlinked inode's entry set is gone: its clusters can go too.
	 * The root has no entry set and is never unlinked.
	 */
	if (!inode->i_nlink && !is_bad_inode(inode) && ei->alloc_clus &&
	    !WARN_ON_ONCE(ei->eidx == EXFAT_ROOT_EIDX)) {
		/* the FAT and bitmap change: not on a frozen volume */
		sb_start_intwrite(inode->i_sb);
		down_write(&ei->map_lock);
		exfat_free_clusters(inode, 0);
		up_write(&ei->map_lock);
		sb_end_intwrite(inode->i_sb);
	}
	clear_inode(inode);
	exfat_window_drop(inode);
	exfat_drop_extents(inode);
	exfat_dir_index_drop(inode);
}

static int exfat_sync_fs(struct super_block *sb, int wait)
{
	u32 gen;
	int err;

	if (!wait || exfat_forced_shutdown(sb) || sb_rdonly(sb))
		return 0;
	/* ValidDataLength over the writeback completed since the inodes */
	flush_workqueue(EXFAT_SB(sb)->ioend_wq);
	err = exfat_sync_valid_sizes(sb);
	exfat_dir_pool_drain(sb);
	err = exfat_commit_frees(sb) ?: err;
	gen = exfat_meta_gen(sb);
	if (!err)
		err = sync_blockdev(sb->s_bdev) ?: exfat_meta_check(sb);
	if (!err)
		err = exfat_clear_vol_dirty(sb, gen);
	return err;
}

/*
 * Freeze (FIFREEZE, snapshots): the VFS has stopped writers, page faults
 * and evictions that free clusters, and synced once.  Sync again, for
 * what those evictions freed meanwhile, so that the frozen device holds
 * a volume with VolumeDirty clear that any implementation mounts as is.
 * Nothing is written until thaw: every later metadata change comes from
 * an operation the freeze holds back.
 */
static int exfat_freeze_fs(struct super_block *sb)
{
	return exfat_sync_fs(sb, 1);
}

static void exfat_inode_init_once(void *obj)
{
	struct exfat_inode_info *ei = obj;

	init_rwsem(&ei->map_lock);
	mutex_init(&ei->pos_lock);
	spin_lock_init(&ei->ioend_lock);
	INIT_LIST_HEAD(&ei->ioend_list);
	inode_init_once(&ei->vfs_inode);
}

static void exfat_put_super(struct super_block *sb)
{
	flush_workqueue(EXFAT_SB(sb)->ioend_wq);
	if (!sb_rdonly(sb) && !exfat_forced_shutdown(sb))
		exfat_dir_pool_drain(sb);
	if (!sb_rdonly(sb) && !exfat_forced_shutdown(sb) &&
	    !exfat_commit_frees(sb)) {
		u32 gen = exfat_meta_gen(sb);

		if (!sync_blockdev(sb->s_bdev) && !exfat_meta_check(sb))
			exfat_clear_vol_dirty(sb, gen);
	}
	exfat_drop_pending_frees(sb);
	exfat_free_bitmap(sb);
	exfat_dindex_shrinker_free(sb);
	destroy_workqueue(EXFAT_SB(sb)->ioend_wq);
}

static void exfat_sb_shutdown(struct super_block *sb)
{
	exfat_shutdown(sb, EXFAT_GOING_DOWN_NOSYNC);
}

static int exfat_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct super_block *sb = dentry->d_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u64 id = huge_encode_dev(sb->s_bdev->bd_dev);

	buf->f_type = sb->s_magic;
	buf->f_bsize = sbi->clu_size;
	buf->f_blocks = sbi->clu_count;
	buf->f_bfree = READ_ONCE(sbi->free_clusters) +
		       READ_ONCE(sbi->pending_clusters);
	buf->f_bavail = buf->f_bfree;
	buf->f_fsid = u64_to_fsid(id);
	buf->f_namelen = EXFAT_MAX_NAME_LEN * NLS_MAX_CHARSET_SIZE;
	return 0;
}

static int exfat_show_options(struct seq_file *m, struct dentry *root)
{
	struct exfat_sb_info *sbi = EXFAT_SB(root->d_sb);
	struct exfat_mount_options *opts = &sbi->opts;

	if (!uid_eq(opts->fs_uid, GLOBAL_ROOT_UID))
		seq_printf(m, ",uid=%u",
			   from_kuid_munged(&init_user_ns, opts->fs_uid));
	if (!gid_eq(opts->fs_gid, GLOBAL_ROOT_GID))
		seq_printf(m, ",gid=%u",
			   from_kgid_munged(&init_user_ns, opts->fs_gid));
	seq_printf(m, ",fmask=%04o,dmask=%04o", opts->fs_fmask, opts->fs_dmask);
	if (opts->allow_utime)
		seq_printf(m, ",allow_utime=%04o", opts->allow_utime);
	seq_printf(m, ",iocharset=%s", opts->iocharset);
	if (opts->errors == EXFAT_ERRORS_CONT)
		seq_puts(m, ",errors=continue");
	else if (opts->errors == EXFAT_ERRORS_PANIC)
		seq_puts(m, ",errors=panic");
	else
		seq_puts(m, ",errors=remount-ro");
	if (opts->discard)
		seq_puts(m, ",discard");
	if (opts->keep_last_dots)
		seq_puts(m, ",keep_last_dots");
	if (opts->sys_tz)
		seq_puts(m, ",sys_tz");
	else if (opts->time_offset)
		seq_printf(m, ",time_offset=%d", opts->time_offset);
	if (opts->zero_size_dir)
		seq_puts(m, ",zero_size_dir");
	return 0;
}

static const struct super_operations exfat_sops = {
	.alloc_inode	= exfat_alloc_inode,
	.free_inode	= exfat_free_inode,
	.evict_inode	= exfat_evict_inode,
	.write_inode	= exfat_write_inode,
	.put_super	= exfat_put_super,
	.sync_fs	= exfat_sync_fs,
	.freeze_fs	= exfat_freeze_fs,
	.statfs		= exfat_statfs,
	.show_options	= exfat_show_options,
	.shutdown	= exfat_sb_shutdown,
};

enum {
	EXFAT_OPT_UID, EXFAT_OPT_GID, EXFAT_OPT_UMASK, EXFAT_OPT_DMASK,
	EXFAT_OPT_FMASK, EXFAT_OPT_ALLOW_UTIME, EXFAT_OPT_CHARSET,
	EXFAT_OPT_ERRORS, EXFAT_OPT_DISCARD, EXFAT_OPT_KEEP_LAST_DOTS,
	EXFAT_OPT_SYS_TZ, EXFAT_OPT_TIME_OFFSET, EXFAT_OPT_ZERO_SIZE_DIR,
	/* accepted for compatibility, no effect */
	EXFAT_OPT_UTF8, EXFAT_OPT_DEBUG, EXFAT_OPT_NAMECASE,
	EXFAT_OPT_CODEPAGE,
};

static const struct constant_table exfat_error_modes[] = {
	{ "continue",	EXFAT_ERRORS_CONT },
	{ "panic",	EXFAT_ERRORS_PANIC },
	{ "remount-ro",	EXFAT_ERRORS_RO },
	{}
};

static const struct fs_parameter_spec exfat_param_spec[] = {
	fsparam_uid("uid",		EXFAT_OPT_UID),
	fsparam_gid("gid",		EXFAT_OPT_GID),
	fsparam_u32oct("umask",		EXFAT_OPT_UMASK),
	fsparam_u32oct("dmask",		EXFAT_OPT_DMASK),
	fsparam_u32oct("fmask",		EXFAT_OPT_FMASK),
	fsparam_u32oct("allow_utime",	EXFAT_OPT_ALLOW_UTIME),
	fsparam_string("iocharset",	EXFAT_OPT_CHARSET),
	fsparam_enum("errors",		EXFAT_OPT_ERRORS, exfat_error_modes),
	fsparam_flag("discard",		EXFAT_OPT_DISCARD),
	fsparam_flag("keep_last_dots",	EXFAT_OPT_KEEP_LAST_DOTS),
	fsparam_flag("sys_tz",		EXFAT_OPT_SYS_TZ),
	fsparam_s32("time_offset",	EXFAT_OPT_TIME_OFFSET),
	fsparam_flag("zero_size_dir",	EXFAT_OPT_ZERO_SIZE_DIR),
	__fsparam(NULL, "utf8", EXFAT_OPT_UTF8, fs_param_deprecated, NULL),
	__fsparam(NULL, "debug", EXFAT_OPT_DEBUG, fs_param_deprecated, NULL),
	__fsparam(fs_param_is_u32, "namecase", EXFAT_OPT_NAMECASE,
		  fs_param_deprecated, NULL),
	__fsparam(fs_param_is_u32, "codepage", EXFAT_OPT_CODEPAGE,
		  fs_param_deprecated, NULL),
	{}
};

static int exfat_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct exfat_sb_info *sbi = fc->s_fs_info;
	struct exfat_mount_options *opts = &sbi->opts;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, exfat_param_spec, param, &result);
	if (opt < 0)
		return opt;

	switch (opt) {
	case EXFAT_OPT_UID:
		opts->fs_uid = result.uid;
		break;
	case EXFAT_OPT_GID:
		opts->fs_gid = result.gid;
		break;
	case EXFAT_OPT_UMASK:
		opts->fs_fmask = result.uint_32;
		opts->fs_dmask = result.uint_32;
		break;
	case EXFAT_OPT_DMASK:
		opts->fs_dmask = result.uint_32;
		break;
	case EXFAT_OPT_FMASK:
		opts->fs_fmask = result.uint_32;
		break;
	case EXFAT_OPT_ALLOW_UTIME:
		opts->allow_utime = result.uint_32 & 0022;
		break;
	case EXFAT_OPT_CHARSET:
		kfree(opts->iocharset);
		opts->iocharset = param->string;
		param->string = NULL;
		break;
	case EXFAT_OPT_ERRORS:
		opts->errors = result.uint_32;
		break;
	case EXFAT_OPT_DISCARD:
		opts->discard = true;
		break;
	case EXFAT_OPT_KEEP_LAST_DOTS:
		opts->keep_last_dots = true;
		break;
	case EXFAT_OPT_SYS_TZ:
		opts->sys_tz = true;
		break;
	case EXFAT_OPT_TIME_OFFSET:
		/* UtcOffset spans -12..+14 hours; allow a full day either way */
		if (result.int_32 < -24 * 60 || result.int_32 > 24 * 60)
			return invalfc(fc, "time_offset out of range");
		opts->time_offset = result.int_32;
		break;
	case EXFAT_OPT_ZERO_SIZE_DIR:
		opts->zero_size_dir = true;
		break;
	default:
		break;
	}
	return 0;
}

/* Read the first 512 bytes of the sector at byte offset pos. */
static int exfat_read_boot_copy(struct super_block *sb, u64 pos,
				struct exfat_boot_sector *bs)
{
	struct buffer_head *bh;

	bh = exfat_read_sector(sb, pos >> sb->s_blocksize_bits);
	if (IS_ERR(bh))
		return PTR_ERR(bh);
	memcpy(bs, (u8 *)exfat_sector_data(bh) +
	       (pos & (sb->s_blocksize - 1)), sizeof(*bs));
	exfat_put_sector(bh);
	return 0;
}

/*
 * Check the boot checksum of the region starting at sector first.  The
 * block size is the filesystem's sector size by now.
 */
static const char *exfat_check_boot_csum(struct super_block *sb,
					 sector_t first, int *err)
{
	struct buffer_head *bh;
	const __le32 *stored;
	unsigned int i, n = sb->s_blocksize / sizeof(__le32);
	u32 sum = 0;

	exfat_readahead_sectors(sb, first, EXFAT_BOOT_REGION_SECTORS);
	for (i = 0; i < EXFAT_BOOT_CHECKSUM_SECTOR; i++) {
		bh = exfat_read_sector(sb, first + i);
		if (IS_ERR(bh)) {
			*err = PTR_ERR(bh);
			return "I/O error";
		}
		sum = exfat_boot_checksum_add(sum, exfat_sector_data(bh),
					      sb->s_blocksize, i == 0);
		exfat_put_sector(bh);
	}
	bh = exfat_read_sector(sb, first + EXFAT_BOOT_CHECKSUM_SECTOR);
	if (IS_ERR(bh)) {
		*err = PTR_ERR(bh);
		return "I/O error";
	}
	stored = exfat_sector_data(bh);
	for (i = 0; i < n; i++) {
		if (le32_to_cpu(stored[i]) != sum) {
			exfat_put_sector(bh);
			return "boot checksum";
		}
	}
	exfat_put_sector(bh);
	return NULL;
}

/*
 * Try one boot region: its boot sector is at byte offset pos, and for the
 * backup region the sector size it must declare is given by want_shift
 * (0: any).  On success the block size is the volume's sector size.
 */
static const char *exfat_try_boot_region(struct super_block *sb, u64 pos,
					 unsigned int want_shift,
					 struct exfat_boot_sector *bs,
					 int *err)
{
	u64 dev_bytes = bdev_nr_bytes(sb->s_bdev);
	unsigned int shift;
	const char *why;

	*err = exfat_read_boot_copy(sb, pos, bs);
	if (*err)
		return "I/O error";
	shift = bs->sector_shift;
	if (want_shift && shift != want_shift)
		return "BytesPerSectorShift";
	why = exfat_verify_boot_sector(bs, 0);
	if (why)
		return why;
	if (le64_to_cpu(bs->vol_length) > dev_bytes >> shift)
		return "VolumeLength beyond the end of the device";
	if ((1U << shift) < bdev_logical_block_size(sb->s_bdev))
		return "sector size smaller than the device's logical block size";
	if (!sb_set_blocksize(sb, 1U << shift))
		return "unsupported sector size";
	return exfat_check_boot_csum(sb, pos >> shift, err);
}

static int exfat_read_boot(struct super_block *sb,
			   struct exfat_boot_sector *bs)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int min_shift, shift;
	const char *why, *bwhy = NULL, *r;
	bool named_exfat;
	int err = 0;

	if (!sb_min_blocksize(sb, 512)) {
		exfat_err(sb, "unable to set the block size");
		return -EINVAL;
	}
	min_shift = sb->s_blocksize_bits;

	why = exfat_try_boot_region(sb, 0, 0, bs, &err);
	if (!why) {
		sbi->boot_sector = 0;
		return 0;
	}
	if (err)
		return err;
	named_exfat = !memcmp(bs->fs_name, EXFAT_BOOT_FS_NAME,
			      EXFAT_BOOT_FS_NAME_LEN);

	/*
	 * The backup region starts at sector 12, whose byte offset depends on
	 * the sector size the damaged main region may no longer tell us.
	 */
	for (shift = max(min_shift, EXFAT_MIN_SECTOR_SHIFT);
	     shift <= EXFAT_MAX_SECTOR_SHIFT; shift++) {
		if (!sb_set_blocksize(sb, 1U << min_shift))
			break;
		r = exfat_try_boot_region(sb,
					  (u64)EXFAT_BACKUP_BOOT_SECTOR << shift,
					  shift, bs, &err);
		if (!r) {
			exfat_warn(sb, "main boot region is bad (%s); mounting from the backup boot region, read-only; run fsck.exfat",
				   why);
			sbi->boot_sector = EXFAT_BACKUP_BOOT_SECTOR;
			sb->s_flags |= SB_RDONLY;
			return 0;
		}
		if (err)
			return err;
		/* report what is wrong at the sector size it claims */
		if (!bwhy || bs->sector_shift == shift)
			bwhy = r;
	}
	if (named_exfat)
		exfat_err(sb, "invalid exFAT volume: bad %s (backup boot region: bad %s)",
			  why, bwhy ?: "sector size");
	else
		exfat_err(sb, "not an exFAT volume (no exFAT boot sector in the main or backup boot region)");
	return -EINVAL;
}

static void exfat_set_geometry(struct exfat_sb_info *sbi,
			       const struct exfat_boot_sector *bs)
{
	sbi->sect_shift = bs->sector_shift;
	sbi->clu_shift = bs->sector_shift + bs->cluster_shift;
	sbi->clu_size = 1U << sbi->clu_shift;
	sbi->vol_sectors = le64_to_cpu(bs->vol_length);
	sbi->num_fats = bs->num_fats;
	sbi->vol_flags = le16_to_cpu(bs->vol_flags);
	sbi->active_fat = sbi->num_fats == 2 ?
			  (sbi->vol_flags & EXFAT_VF_ACTIVE_FAT) : 0;
	sbi->fat_sectors = le32_to_cpu(bs->fat_length);
	sbi->fat_start = le32_to_cpu(bs->fat_offset) +
			 sbi->active_fat * sbi->fat_sectors;
	sbi->fat2_start = le32_to_cpu(bs->fat_offset) +
			  (sbi->active_fat ^ 1) * sbi->fat_sectors;
	sbi->heap_start = le32_to_cpu(bs->clu_heap_offset);
	sbi->clu_count = le32_to_cpu(bs->clu_count);
	sbi->root_clu = le32_to_cpu(bs->root_cluster);
	sbi->serial = le32_to_cpu(bs->vol_serial);
	sbi->fs_revision = le16_to_cpu(bs->fs_revision);
}

/*
 * Find the critical primary entries of the root directory (§7.1-7.3):
 * the allocation bitmap the active FAT selects, the up-case table and the
 * volume label.
 */
static int exfat_scan_root(struct super_block *sb, struct inode *root)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_root_info *ri;
	struct exfat_walk_item item;
	struct exfat_walk w;
	const char *why = NULL;
	unsigned int i;
	int err;

	ri = kzalloc(sizeof(*ri), GFP_KERNEL);
	if (!ri)
		return -ENOMEM;
	exfat_walk_init(&w, root, 0);
	while (!why && (err = exfat_walk_next(&w, &item)) > 0)
		why = exfat_parse_root_entry(ri, item.de, sbi->active_fat);
	exfat_walk_release(&w);
	if (why) {
		exfat_err(sb, "%s", why);
		err = -EFSCORRUPTED;
	}
	if (err)
		goto out;
	if (ri->bad_guid)
		exfat_warn(sb, "ignoring a bad volume GUID entry");
	if (ri->have_guid) {
		memcpy(sbi->vol_guid, ri->guid, sizeof(sbi->vol_guid));
		sbi->has_guid = true;
	}
	sbi->label_len = ri->label_len;
	for (i = 0; i < ri->label_len; i++)
		sbi->label[i] = ri->label[i];

	err = -EFSCORRUPTED;
	if (!ri->have_bitmap) {
		exfat_err(sb, "no allocation bitmap in the root directory");
		goto out;
	}
	err = exfat_load_bitmap(sb, ri->bitmap_clu, ri->bitmap_len);
	if (err)
		goto out;

	if (!ri->have_upcase) {
		exfat_warn(sb, "no up-case table; using the built-in one, read-only");
		sbi->upcase_builtin = true;
		err = exfat_load_upcase(sb, 0, 0, 0);
	} else {
		err = exfat_load_upcase(sb, ri->upcase_clu, ri->upcase_len,
					ri->upcase_csum);
	}
	kfree(ri);
	ri = NULL;
	if (err)
		return err;

	/*
	 * The root's clusters read so far, checked now that they can be,
	 * then the rest of its chain (see exfat_fill_inode()).
	 */
	down_write(&EXFAT_I(root)->map_lock);
	for (i = 0; i < EXFAT_I(root)->emap.nr && !err; i++)
		err = exfat_check_chain_run(root, EXFAT_I(root)->emap.ext[i].clu,
					    EXFAT_I(root)->emap.ext[i].len);
	up_write(&EXFAT_I(root)->map_lock);
	return err ?: exfat_map_prefill(root, EXFAT_I(root)->alloc_clus - 1);
out:
	kfree(ri);
	return err;
}

static int exfat_read_root(struct super_block *sb, struct inode **rootp)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_inode_info *ei;
	struct inode *inode;
	u32 nr_clu;
	int err;

	err = exfat_count_chain(sb, sbi->root_clu, exfat_max_dir_clus(sbi),
				&nr_clu);
	if (err)
		return err;

	inode = new_inode(sb);
	if (!inode)
		return -ENOMEM;
	ei = EXFAT_I(inode);
	inode->i_ino = EXFAT_ROOT_INO;
	inode_set_iversion(inode, 1);
	ei->start_clu = sbi->root_clu;
	ei->flags = 0;
	ei->attr = EXFAT_ATTR_DIRECTORY;
	ei->dir_clu = sbi->root_clu;
	ei->dir_flags = 0;
	ei->eidx = EXFAT_ROOT_EIDX;
	inode->i_uid = sbi->opts.fs_uid;
	inode->i_gid = sbi->opts.fs_gid;
	inode->i_mode = S_IFDIR | (0777 & ~sbi->opts.fs_dmask);
	inode->i_op = &exfat_dir_inode_operations;
	inode->i_fop = &exfat_dir_operations;
	inode->i_size = (loff_t)nr_clu << sbi->clu_shift;
	ei->alloc_clus = nr_clu;
	ei->valid_size = inode->i_size;
	inode->i_blocks = inode->i_size >> 9;
	ei->btime = simple_inode_init_ts(inode);
	set_nlink(inode, 2);
	*rootp = inode;
	return 0;
}

/* Mount options that depend on the device or load something. */
static int exfat_apply_options(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_mount_options *opts = &sbi->opts;

	if (opts->allow_utime == (unsigned short)-1)
		opts->allow_utime = ~opts->fs_dmask & 0022;
	if (opts->discard && !bdev_max_discard_sectors(sb->s_bdev)) {
		exfat_warn(sb, "the device does not support discard; ignoring the discard option");
		opts->discard = false;
	}
	opts->utf8 = !strcmp(opts->iocharset, "utf8");
	if (!opts->utf8) {
		sbi->nls = load_nls(opts->iocharset);
		if (!sbi->nls) {
			exfat_err(sb, "unknown iocharset %s", opts->iocharset);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * What the boot sector says about the volume as a whole: its identity for
 * user space, and the state it was left in.
 */
static void exfat_present_volume(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	/* the volume serial, in the order blkid prints it */
	u8 uuid[4] = { sbi->serial >> 24, sbi->serial >> 16,
		       sbi->serial >> 8, sbi->serial };

	/*
	 * No holes: a file never holds more than the cluster heap, and a
	 * write past that is EFBIG, as with the in-tree driver.
	 */
	sb->s_maxbytes = min_t(u64, MAX_LFS_FILESIZE,
			       (u64)sbi->clu_count << sbi->clu_shift);
	super_set_uuid(sb, uuid, sizeof(uuid));
	/* FS_IOC_GETFSSYSFSPATH answers "exfat/<device>" */
	super_set_sysfs_name_bdev(sb);

	if (sbi->fs_revision != 0x0100)
		exfat_info(sb, "FileSystemRevision %u.%02u",
			   sbi->fs_revision >> 8, sbi->fs_revision & 0xff);
	if (sbi->vol_flags & EXFAT_VF_DIRTY)
		exfat_warn(sb, "volume was not properly unmounted; run fsck.exfat");
	if (sbi->vol_flags & EXFAT_VF_MEDIA_FAILURE)
		exfat_warn(sb, "volume has reported media failures; run fsck.exfat");

	/* errors of earlier users of the device are not ours */
	sbi->meta_wb_err = errseq_sample(&sb->s_bdev->bd_mapping->wb_err);
	errseq_check_and_advance(&sb->s_bdev->bd_mapping->wb_err,
				 &sbi->meta_wb_err);
}

/*
 * The root directory's inode, with what its critical entries describe
 * (bitmap, up-case table, label) loaded.
 */
static int exfat_load_root(struct super_block *sb, struct inode **rootp)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct inode *root;
	int err;

	err = exfat_read_root(sb, &root);
	if (err)
		return err;
	err = exfat_scan_root(sb, root);
	/* "." and ".." count as links, as in every other directory */
	if (!err)
		err = exfat_count_subdirs(root);
	if (err < 0) {
		iput(root);
		return err;
	}
	set_nlink(root, err + 2);
	if (sbi->upcase_builtin && !sb_rdonly(sb)) {
		exfat_warn(sb, "up-case table unusable: names could be hashed differently from other systems; mounting read-only");
		sb->s_flags |= SB_RDONLY;
	}
	*rootp = root;
	return 0;
}

static int exfat_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct exfat_sb_info *sbi = sb->s_fs_info;
	struct exfat_boot_sector *bs;
	struct inode *root;
	int err;

	err = exfat_apply_options(sb);
	if (err)
		return err;

	sb->s_magic = EXFAT_SUPER_MAGIC;
	sb->s_op = &exfat_sops;
	sb->s_flags |= SB_NODIRATIME;
	sb->s_time_gran = 10 * NSEC_PER_MSEC;
	sb->s_time_min = EXFAT_MIN_TIME;
	sb->s_time_max = EXFAT_MAX_TIME;

	sbi->ioend_wq = alloc_workqueue("exfat2-ioend/%s",
					WQ_MEM_RECLAIM | WQ_FREEZABLE, 0, sb->s_id);
	if (!sbi->ioend_wq)
		return -ENOMEM;
	err = exfat_dindex_shrinker_init(sb);
	if (err)
		goto out;
	bs = kmalloc(sizeof(*bs), GFP_KERNEL);
	if (!bs) {
		err = -ENOMEM;
		goto out;
	}
	err = exfat_read_boot(sb, bs);
	if (!err)
		exfat_set_geometry(sbi, bs);
	kfree(bs);
	if (err)
		goto out;
	exfat_present_volume(sb);

	err = exfat_load_root(sb, &root);
	if (err)
		goto out;
	sb->s_d_op = &exfat_dentry_ops;
	sb->s_export_op = &exfat_export_ops;
	sb->s_root = d_make_root(root);
	if (!sb->s_root) {
		err = -ENOMEM;
		goto out;
	}
	return 0;

out:
	/* the up-case table goes with sbi in exfat_kill_sb */
	exfat_free_bitmap(sb);
	exfat_dindex_shrinker_free(sb);
	destroy_workqueue(sbi->ioend_wq);
	return err;
}

static int exfat_get_tree(struct fs_context *fc)
{
	return get_tree_bdev(fc, exfat_fill_super);
}

/*
 * Remount applies the options that only steer future operations and
 * refuses, with a message, those that cached inodes and dentries depend
 * on (ownership, masks, character set, name matching).
 */
static int exfat_reconfigure(struct fs_context *fc)
{
	struct super_block *sb = fc->root->d_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_mount_options *cur = &sbi->opts;
	struct exfat_mount_options *new = &((struct exfat_sb_info *)fc->s_fs_info)->opts;
	u32 gen;
	int err;

	fc->sb_flags |= SB_NODIRATIME;
	if (!uid_eq(new->fs_uid, cur->fs_uid) || !gid_eq(new->fs_gid, cur->fs_gid))
		return invalfc(fc, "exfat2: uid and gid cannot change on remount");
	if (new->fs_fmask != cur->fs_fmask || new->fs_dmask != cur->fs_dmask)
		return invalfc(fc, "exfat2: umask, fmask and dmask cannot change on remount");
	if (strcmp(new->iocharset, cur->iocharset))
		return invalfc(fc, "exfat2: iocharset cannot change on remount");
	if (new->keep_last_dots != cur->keep_last_dots)
		return invalfc(fc, "exfat2: keep_last_dots cannot change on remount");
	if (!(fc->sb_flags & SB_RDONLY) &&
	    (sbi->boot_sector || sbi->upcase_builtin))
		return invalfc(fc, "exfat2: volume is read-only; run fsck.exfat");
	if (new->discard && !bdev_max_discard_sectors(sb->s_bdev))
		return invalfc(fc, "exfat2: the device does not support discard");

	err = sync_filesystem(sb);
	if (err)
		return err;
	if (fc->sb_flags & SB_RDONLY && !sb_rdonly(sb)) {
		gen = exfat_meta_gen(sb);
		err = exfat_meta_write_all(sb) ?: exfat_clear_vol_dirty(sb, gen);
		if (err)
			return err;
	}

	if (new->allow_utime == (unsigned short)-1)
		new->allow_utime = ~new->fs_dmask & 0022;
	WRITE_ONCE(cur->errors, new->errors);
	WRITE_ONCE(cur->discard, new->discard);
	WRITE_ONCE(cur->sys_tz, new->sys_tz);
	WRITE_ONCE(cur->time_offset, new->time_offset);
	WRITE_ONCE(cur->zero_size_dir, new->zero_size_dir);
	WRITE_ONCE(cur->allow_utime, new->allow_utime);
	return 0;
}

static void exfat_free_sbi(struct exfat_sb_info *sbi)
{
	kfree(sbi->opts.iocharset);
	kfree(sbi);
}

static void exfat_fc_free(struct fs_context *fc)
{
	if (fc->s_fs_info)
		exfat_free_sbi(fc->s_fs_info);
}

static const struct fs_context_operations exfat_context_ops = {
	.parse_param	= exfat_parse_param,
	.get_tree	= exfat_get_tree,
	.reconfigure	= exfat_reconfigure,
	.free		= exfat_fc_free,
};

static int exfat_init_fs_context(struct fs_context *fc)
{
	struct exfat_sb_info *sbi;
	int i;

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sbi->opts.iocharset = kstrdup(EXFAT_DEFAULT_IOCHARSET, GFP_KERNEL);
	if (!sbi->opts.iocharset) {
		kfree(sbi);
		return -ENOMEM;
	}
	mutex_init(&sbi->alloc_lock);
	mutex_init(&sbi->label_lock);
	mutex_init(&sbi->vol_lock);
	mutex_init(&sbi->alloc_sync_lock);
	mutex_init(&sbi->commit_lock);
	for (i = 0; i < EXFAT_SET_LOCKS; i++)
		init_rwsem(&sbi->set_locks[i]);
	INIT_LIST_HEAD(&sbi->pending_frees);
	exfat_windows_init(&sbi->windows);
	ratelimit_state_init(&sbi->msg_ratelimit, DEFAULT_RATELIMIT_INTERVAL,
			     DEFAULT_RATELIMIT_BURST);

	if (fc->purpose == FS_CONTEXT_FOR_RECONFIGURE && fc->root) {
		/* a remount starts from the options in force */
		const struct exfat_mount_options *cur =
			&EXFAT_SB(fc->root->d_sb)->opts;
		char *cs = sbi->opts.iocharset;

		sbi->opts = *cur;
		sbi->opts.iocharset = cs;
		if (strcmp(cs, cur->iocharset)) {
			kfree(cs);
			sbi->opts.iocharset = kstrdup(cur->iocharset, GFP_KERNEL);
			if (!sbi->opts.iocharset) {
				kfree(sbi);
				return -ENOMEM;
			}
		}
	} else {
		sbi->opts.fs_uid = current_uid();
		sbi->opts.fs_gid = current_gid();
		sbi->opts.fs_fmask = current_umask();
		sbi->opts.fs_dmask = current_umask();
		sbi->opts.allow_utime = (unsigned short)-1;
		sbi->opts.errors = EXFAT_ERRORS_RO;
	}

	fc->s_fs_info = sbi;
	fc->ops = &exfat_context_ops;
	return 0;
}

static void exfat_free_sbi_rcu(struct rcu_head *head)
{
	struct exfat_sb_info *sbi = container_of(head, struct exfat_sb_info,
						 rcu);

	unload_nls(sbi->nls);
	kvfree(sbi->upcase);
	exfat_free_sbi(sbi);
}

static void exfat_kill_sb(struct super_block *sb)
{
	struct exfat_sb_info *sbi = sb->s_fs_info;

	kill_block_super(sb);
	/* dentry hashing may still look at the up-case table under RCU */
	if (sbi)
		call_rcu(&sbi->rcu, exfat_free_sbi_rcu);
}

static struct file_system_type exfat_fs_type = {
	.owner			= THIS_MODULE,
	.name			= "exfat",
	.init_fs_context	= exfat_init_fs_context,
	.parameters		= exfat_param_spec,
	.kill_sb		= exfat_kill_sb,
	.fs_flags		= FS_REQUIRES_DEV | FS_ALLOW_IDMAP,
};

static int __init exfat_init(void)
{
	int err;

	exfat_inode_cachep = kmem_cache_create("exfat2_inode_cache",
					       sizeof(struct exfat_inode_info),
					       0, SLAB_RECLAIM_ACCOUNT |
					       SLAB_ACCOUNT,
					       exfat_inode_init_once);
	if (!exfat_inode_cachep)
		return -ENOMEM;
	err = register_filesystem(&exfat_fs_type);
	if (err)
		kmem_cache_destroy(exfat_inode_cachep);
	return err;
}

static void __exit exfat_exit(void)
{
	unregister_filesystem(&exfat_fs_type);
	/* wait for exfat_free_sbi_rcu and inode frees */
	rcu_barrier();
	kmem_cache_destroy(exfat_inode_cachep);
}

module_init(exfat_init);
module_exit(exfat_exit);
MODULE_ALIAS_FS("exfat");
MODULE_DESCRIPTION("exFAT filesystem");
MODULE_LICENSE("GPL");
