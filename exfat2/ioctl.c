// SPDX-License-Identifier: GPL-2.0
/*
 * ioctls: the FAT attribute interface shared with vfat, the volume label,
 * FITRIM, shutdown, and the generic file attribute interface.
 */
#include <linux/uaccess.h>
#include <linux/compat.h>
#include <linux/msdos_fs.h>
#include <linux/mount.h>
#include <linux/security.h>
#include <linux/fsnotify.h>
#include <linux/fileattr.h>
#include <linux/blkdev.h>
#include <linux/slab.h>
#include <uapi/linux/exfat.h>
#include "exfat.h"

/* The attribute word as other systems see it. */
u16 exfat_inode_attr(struct inode *inode)
{
	u16 attr = EXFAT_I(inode)->attr;

	if (S_ISDIR(inode->i_mode))
		attr |= EXFAT_ATTR_DIRECTORY;
	else if (!(inode->i_mode & 0222))
		attr |= EXFAT_ATTR_READONLY;
	return attr;
}

static int exfat_ioc_get_attributes(struct inode *inode, u32 __user *uattr)
{
	u32 attr;

	inode_lock_shared(inode);
	attr = exfat_inode_attr(inode);
	inode_unlock_shared(inode);
	return put_user(attr, uattr);
}

/*
 * As vfat: setting the attribute word is a chmod for the read-only bit,
 * plus the hidden, system and archive bits stored as they are.
 */
static int exfat_ioc_set_attributes(struct file *file, u32 __user *uattr)
{
	struct inode *inode = file_inode(file);
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	bool is_dir = S_ISDIR(inode->i_mode);
	struct iattr ia;
	u32 attr;
	u16 old;
	int err;

	if (get_user(attr, uattr))
		return -EFAULT;
	err = mnt_want_write_file(file);
	if (err)
		return err;
	inode_lock(inode);
	old = exfat_inode_attr(inode);
	attr = (attr & EXFAT_ATTR_RWMASK) | (is_dir ? EXFAT_ATTR_DIRECTORY : 0);
	if (EXFAT_I(inode)->eidx == EXFAT_ROOT_EIDX &&
	    attr != EXFAT_ATTR_DIRECTORY) {
		err = -EINVAL;
		goto out;
	}
	if ((attr | old) & EXFAT_ATTR_SYSTEM && !capable(CAP_LINUX_IMMUTABLE)) {
		err = -EPERM;
		goto out;
	}

	ia.ia_valid = ATTR_MODE | ATTR_CTIME;
	ia.ia_ctime = current_time(inode);
	ia.ia_mode = exfat_make_mode(sbi, attr);
	if (!is_dir)
		ia.ia_mode = (ia.ia_mode & ~0111) | (inode->i_mode & 0111);
	err = security_inode_setattr(file_mnt_idmap(file), file->f_path.dentry,
				     &ia);
	if (err)
		goto out;
	err = exfat_setattr(file_mnt_idmap(file), file->f_path.dentry, &ia);
	if (err)
		goto out;
	fsnotify_change(file->f_path.dentry, ia.ia_valid);
	EXFAT_I(inode)->attr = attr & ~(is_dir ? EXFAT_ATTR_READONLY : 0);
	mark_inode_dirty(inode);
out:
	inode_unlock(inode);
	mnt_drop_write_file(file);
	return err;
}

/*
 * Write the volume label (§7.3) into the root directory, creating its
 * entry when there is none.
 */
static int exfat_write_label(struct super_block *sb, const u16 *uni,
			     unsigned int len)
{
	struct inode *root = d_inode(sb->s_root);
	union exfat_dentry label;
	struct exfat_dir_iter it;
	u32 found;
	int err;

	if (unlikely(exfat_forced_shutdown(sb)))
		return -EIO;
	exfat_make_label_entry(&label, uni, len);

	inode_lock(root);
	err = exfat_dir_find_type(root, EXFAT_TYPE_LABEL, &found);
	if (err == -ENOENT)
		err = exfat_alloc_slots(root, 1, 0, 0, &found);
	if (!err) {
		exfat_dir_iter_init(&it, root);
		it.sync = true;
		err = exfat_dir_put_entry(&it, found, &label);
		err = exfat_dir_iter_release(&it) ?: err;
	}
	inode_unlock(root);
	return err;
}

/*
 * FS_IOC_SHUTDOWN, or the device going away: every later operation fails
 * with -EIO.  With a sync first unless told not to.
 */
int exfat_shutdown(struct super_block *sb, u32 flags)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	int err;

	if (exfat_forced_shutdown(sb))
		return 0;
	switch (flags) {
	case EXFAT_GOING_DOWN_DEFAULT:
	case EXFAT_GOING_DOWN_FULLSYNC:
		err = bdev_freeze(sb->s_bdev);
		if (err)
			return err;
		bdev_thaw(sb->s_bdev);
		break;
	case EXFAT_GOING_DOWN_NOSYNC:
		break;
	default:
		return -EINVAL;
	}
	set_bit(EXFAT_STATE_SHUTDOWN, &sbi->state);
	exfat_warn(sb, "shut down (%s)", flags == EXFAT_GOING_DOWN_NOSYNC ?
		   "without sync" : "after sync");
	return 0;
}

static int exfat_ioc_get_label(struct super_block *sb, char __user *ulabel)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	__le16 uni[EXFAT_LABEL_MAX_LEN];
	char *buf;
	int i, len;

	buf = kzalloc(FSLABEL_MAX, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	mutex_lock(&sbi->label_lock);
	for (i = 0; i < sbi->label_len; i++)
		uni[i] = cpu_to_le16(sbi->label[i]);
	len = exfat_utf16_to_nls(sb, uni, sbi->label_len, buf, FSLABEL_MAX);
	mutex_unlock(&sbi->label_lock);
	if (len >= 0 && copy_to_user(ulabel, buf, FSLABEL_MAX))
		len = -EFAULT;
	kfree(buf);
	return len < 0 ? len : 0;
}

static int exfat_ioc_set_label(struct file *file, const char __user *ulabel)
{
	struct super_block *sb = file_inode(file)->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u16 uni[EXFAT_LABEL_MAX_LEN];
	char *label;
	int len, err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	label = strndup_user(ulabel, FSLABEL_MAX);
	if (IS_ERR(label))
		return PTR_ERR(label);
	len = exfat_nls_to_utf16(sb, label, strlen(label), uni,
				 EXFAT_LABEL_MAX_LEN);
	kfree(label);
	if (len == -ENAMETOOLONG)
		return -EINVAL;
	if (len < 0)
		return len;

	err = mnt_want_write_file(file);
	if (err)
		return err;
	err = exfat_write_label(sb, uni, len);
	mnt_drop_write_file(file);
	if (!err) {
		mutex_lock(&sbi->label_lock);
		memcpy(sbi->label, uni, len * sizeof(*uni));
		sbi->label_len = len;
		mutex_unlock(&sbi->label_lock);
	}
	return err;
}

/* Discard the free clusters in the range, as the bitmap says now. */
static int exfat_ioc_fitrim(struct super_block *sb, struct fstrim_range __user *urange)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct fstrim_range range;
	u64 trimmed = 0, heap_end;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (!bdev_max_discard_sectors(sb->s_bdev))
		return -EOPNOTSUPP;
	if (copy_from_user(&range, urange, sizeof(range)))
		return -EFAULT;
	/* as ext4 and xfs: a range past the end or below a cluster is wrong */
	heap_end = ((u64)sbi->heap_start << sbi->sect_shift) +
		   ((u64)sbi->clu_count << sbi->clu_shift);
	if (range.start >= heap_end || range.len < sbi->clu_size ||
	    range.minlen > heap_end)
		return -EINVAL;
	range.minlen = max_t(u64, range.minlen,
			     bdev_discard_granularity(sb->s_bdev));
	err = exfat_trim(sb, range.start, range.len, range.minlen, &trimmed);
	if (err)
		return err;
	range.len = trimmed;
	return copy_to_user(urange, &range, sizeof(range)) ? -EFAULT : 0;
}

static int exfat_ioc_shutdown(struct super_block *sb, u32 __user *uflags)
{
	u32 flags;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (get_user(flags, uflags))
		return -EFAULT;
	return exfat_shutdown(sb, flags);
}

int exfat_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	/* no FS_*_FL or FS_XFLAG_* has an exFAT attribute to map to */
	fileattr_fill_flags(fa, 0);
	return 0;
}

int exfat_fileattr_set(struct mnt_idmap *idmap, struct dentry *dentry,
		       struct fileattr *fa)
{
	if (fileattr_has_fsx(fa) ? fa->fsx_xflags : fa->flags)
		return -EOPNOTSUPP;
	return 0;
}

long exfat_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct inode *inode = file_inode(file);

	switch (cmd) {
	case FAT_IOCTL_GET_ATTRIBUTES:
		return exfat_ioc_get_attributes(inode, (u32 __user *)arg);
	case FAT_IOCTL_SET_ATTRIBUTES:
		return exfat_ioc_set_attributes(file, (u32 __user *)arg);
	case FS_IOC_GETFSLABEL:
		return exfat_ioc_get_label(inode->i_sb, (char __user *)arg);
	case FS_IOC_SETFSLABEL:
		return exfat_ioc_set_label(file, (const char __user *)arg);
	case FITRIM:
		return exfat_ioc_fitrim(inode->i_sb,
					(struct fstrim_range __user *)arg);
	case EXFAT_IOC_SHUTDOWN:
		return exfat_ioc_shutdown(inode->i_sb, (u32 __user *)arg);
	default:
		return -ENOTTY;
	}
}

#ifdef CONFIG_COMPAT
long exfat_compat_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg)
{
	return exfat_ioctl(file, cmd, (unsigned long)compat_ptr(arg));
}
#endif
