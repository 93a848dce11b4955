// SPDX-License-Identifier: GPL-2.0
/*
 * Directory reading.  The position of a directory stream is 2 plus the
 * index of the next entry to look at; entries never move while they exist,
 * so positions stay valid across concurrent changes (telldir/seekdir).
 */
#include <linux/slab.h>
#include <linux/hash.h>
#include "exfat.h"

#define EXFAT_DIR_POS_BASE	2	/* after "." and ".." */

/*
 * Count subdirectories for nlink.  Only the File entries' attributes are
 * looked at; a set that fails verification later is reported then.
 */
int exfat_count_subdirs(struct inode *dir)
{
	struct exfat_walk_item item;
	struct exfat_walk w;
	int count = 0, ret;

	if (!EXFAT_I(dir)->start_clu)
		return 0;
	exfat_walk_init(&w, dir, 0);
	while ((ret = exfat_walk_next(&w, &item)) > 0)
		if (exfat_walk_item_is_dir(&item))
			count++;
	exfat_walk_release(&w);
	return ret < 0 ? ret : count;
}

/* Emit the set of item, read and verified; 0 when ctx is full. */
static int exfat_emit_set(struct file *file, struct dir_context *ctx,
			  struct exfat_walk *w,
			  const struct exfat_walk_item *item, __le16 *uni,
			  char *name)
{
	struct inode *dir = file_inode(file);
	struct super_block *sb = dir->i_sb;
	struct exfat_entry_set *es;
	struct inode *inode;
	unsigned int nlen;
	unsigned long ino;
	int err, len;
	u8 type;

	err = exfat_get_entry_set(&w->it, item->eidx, &es);
	if (err == -EFSCORRUPTED)
		return 1;	/* reported; the rest stays readable */
	if (err)
		return err;
	nlen = exfat_es_get_name(es, uni);
	type = exfat_es_attr(es) & EXFAT_ATTR_DIRECTORY ? DT_DIR : DT_REG;
	kfree(es);

	inode = exfat_ilookup(sb, dir, item->eidx);
	if (inode) {
		ino = inode->i_ino;
		iput(inode);
	} else {
		ino = iunique(sb, EXFAT_ROOT_INO + 1);
	}
	len = exfat_utf16_to_nls(sb, uni, nlen, name, EXFAT_MAX_NLS_NAME);
	if (len < 0) {
		exfat_fs_error(sb, "directory %lu, entry %u: name cannot be converted (%d)",
			       dir->i_ino, item->eidx, len);
		return 1;
	}
	return dir_emit(ctx, name, len, ino, type);
}

static int exfat_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct exfat_walk_item item;
	struct exfat_walk w;
	__le16 *uni;
	char *name;
	int ret;

	if (unlikely(exfat_forced_shutdown(dir->i_sb)))
		return -EIO;
	if (!dir_emit_dots(file, ctx))
		return 0;
	if (!EXFAT_I(dir)->start_clu ||
	    ctx->pos - EXFAT_DIR_POS_BASE >= exfat_dir_entries(dir))
		return 0;

	uni = kmalloc_array(EXFAT_MAX_NAME_LEN, sizeof(*uni), GFP_KERNEL);
	name = kmalloc(EXFAT_MAX_NLS_NAME, GFP_KERNEL);
	if (!uni || !name) {
		ret = -ENOMEM;
		goto out_free;
	}

	exfat_walk_init(&w, dir, ctx->pos - EXFAT_DIR_POS_BASE);
	while ((ret = exfat_walk_next(&w, &item)) > 0) {
		if (item.type == EXFAT_TYPE_FILE) {
			ret = exfat_emit_set(file, ctx, &w, &item, uni, name);
			if (ret < 0)
				break;
			if (!ret) {	/* ctx is full: this set comes next */
				ret = 1;
				break;
			}
		}
		ctx->pos = w.pos + EXFAT_DIR_POS_BASE;
	}
	/* at the end, past every entry: a later call returns at once */
	if (!ret)
		ctx->pos = exfat_dir_entries(dir) + EXFAT_DIR_POS_BASE;
	exfat_walk_release(&w);
out_free:
	kfree(name);
	kfree(uni);
	return min(ret, 0);
}

const struct file_operations exfat_dir_operations = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= exfat_readdir,
	.fsync		= exfat_file_fsync,
	.unlocked_ioctl	= exfat_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= exfat_compat_ioctl,
#endif
};
