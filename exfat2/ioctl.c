// SPDX-License-Identifier: GPL-2.0
/*
 * ioctls: the FAT attribute interface shared with vfat
 * (FAT_IOCTL_GET_ATTRIBUTES) and the volume label.
 */
#include <linux/uaccess.h>
#include <linux/compat.h>
#include <linux/msdos_fs.h>
#include <linux/mount.h>
#include <linux/security.h>
#include <linux/fsnotify.h>
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

long exfat_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct inode *inode = file_inode(file);

	switch (cmd) {
	case FAT_IOCTL_GET_ATTRIBUTES:
		return exfat_ioc_get_attributes(inode, (u32 __user *)arg);
	case FAT_IOCTL_SET_ATTRIBUTES:
		return exfat_ioc_set_attributes(file, (u32 __user *)arg);
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
