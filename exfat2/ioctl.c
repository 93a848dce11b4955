// SPDX-License-Identifier: GPL-2.0
/*
 * ioctls: the FAT attribute interface shared with vfat
 * (FAT_IOCTL_GET_ATTRIBUTES) and the volume label.
 */
#include <linux/uaccess.h>
#include <linux/compat.h>
#include <linux/msdos_fs.h>
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

long exfat_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct inode *inode = file_inode(file);

	switch (cmd) {
	case FAT_IOCTL_GET_ATTRIBUTES:
		return exfat_ioc_get_attributes(inode, (u32 __user *)arg);
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
