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

/* Copy the name of a verified set; returns its length in UTF-16 units. */
unsigned int exfat_es_get_name(const struct exfat_entry_set *es, __le16 *name)
{
	unsigned int len = exfat_es_stream(es)->name_len;
	unsigned int i;

	for (i = 0; i < len; i++)
		name[i] = es->de[2 + i / EXFAT_NAME_PER_ENTRY].name.name[i % EXFAT_NAME_PER_ENTRY];
	return len;
}

/*
 * Count subdirectories for nlink.  Only the File entries' attributes are
 * looked at; a set that fails verification later is reported then.
 */
int exfat_count_subdirs(struct inode *dir)
{
	struct exfat_dir_iter it;
	const union exfat_dentry *de;
	u32 eidx, nr = exfat_dir_entries(dir);
	int count = 0;

	if (!EXFAT_I(dir)->start_clu)
		return 0;
	exfat_dir_iter_init(&it, dir);
	for (eidx = 0; eidx < nr; eidx++) {
		de = exfat_dir_iter_get(&it, eidx);
		if (IS_ERR(de)) {
			count = PTR_ERR(de);
			break;
		}
		if (de->generic.type == EXFAT_TYPE_EOD)
			break;
		if (de->generic.type != EXFAT_TYPE_FILE)
			continue;
		if (le16_to_cpu(de->file.attr) & EXFAT_ATTR_DIRECTORY)
			count++;
		eidx += de->file.secondary_count;
	}
	exfat_dir_iter_release(&it);
	return count;
}

static int exfat_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct super_block *sb = dir->i_sb;
	struct exfat_dir_iter it;
	const union exfat_dentry *de;
	struct exfat_entry_set *es;
	u32 eidx, nr = exfat_dir_entries(dir);
	__le16 *uni;
	char *name;
	int err = 0, len;

	if (unlikely(exfat_forced_shutdown(sb)))
		return -EIO;
	if (!dir_emit_dots(file, ctx))
		return 0;
	if (!EXFAT_I(dir)->start_clu || ctx->pos - EXFAT_DIR_POS_BASE >= nr)
		return 0;

	uni = kmalloc_array(EXFAT_MAX_NAME_LEN, sizeof(*uni), GFP_KERNEL);
	name = kmalloc(EXFAT_MAX_NLS_NAME, GFP_KERNEL);
	if (!uni || !name) {
		err = -ENOMEM;
		goto out_free;
	}

	exfat_dir_iter_init(&it, dir);
	for (eidx = ctx->pos - EXFAT_DIR_POS_BASE; eidx < nr;
	     ctx->pos = eidx + EXFAT_DIR_POS_BASE) {
		struct inode *inode;
		unsigned int nlen, set_nr;
		unsigned long ino;
		u8 type;

		de = exfat_dir_iter_get(&it, eidx);
		if (IS_ERR(de)) {
			err = PTR_ERR(de);
			break;
		}
		if (de->generic.type == EXFAT_TYPE_EOD) {
			eidx = nr;
			ctx->pos = eidx + EXFAT_DIR_POS_BASE;
			break;
		}
		if (de->generic.type != EXFAT_TYPE_FILE) {
			eidx++;
			continue;
		}
		err = exfat_get_entry_set(&it, eidx, &es);
		if (err == -EFSCORRUPTED) {
			/* reported; the rest of the directory stays readable */
			err = 0;
			eidx++;
			continue;
		}
		if (err)
			break;

		nlen = exfat_es_get_name(es, uni);
		type = le16_to_cpu(es->de[0].file.attr) & EXFAT_ATTR_DIRECTORY ?
		       DT_DIR : DT_REG;
		inode = exfat_ilookup(sb, dir, eidx);
		if (inode) {
			ino = inode->i_ino;
			iput(inode);
		} else {
			ino = iunique(sb, EXFAT_ROOT_INO + 1);
		}
		set_nr = es->nr;
		kfree(es);

		len = exfat_utf16_to_nls(sb, uni, nlen, name, EXFAT_MAX_NLS_NAME);
		if (len < 0) {
			exfat_fs_error(sb, "directory %lu, entry %u: name cannot be converted (%d)",
				       dir->i_ino, eidx, len);
			eidx++;
			continue;
		}
		if (!dir_emit(ctx, name, len, ino, type))
			break;
		eidx += set_nr;
	}
	exfat_dir_iter_release(&it);
out_free:
	kfree(name);
	kfree(uni);
	return err;
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
