// SPDX-License-Identifier: GPL-2.0
/*
 * Directory entries and entry sets (§6).  A directory is addressed by entry
 * index; entries are read through the buffer cache one sector at a time,
 * and a file's entry set is copied out and verified (type sequence,
 * NameLength, SetChecksum) before anything in it is trusted.
 */
#include <linux/slab.h>
#include "exfat.h"

void exfat_dir_iter_init(struct exfat_dir_iter *it, struct inode *dir)
{
	it->dir = dir;
	it->bh = NULL;
	it->sect = 0;
}

void exfat_dir_iter_release(struct exfat_dir_iter *it)
{
	if (it->bh)
		exfat_put_sector(it->bh);
	it->bh = NULL;
}

/* Number of entries the directory's DataLength holds. */
u32 exfat_dir_entries(struct inode *dir)
{
	return min_t(u64, i_size_read(dir), EXFAT_MAX_DIR_SIZE) >>
	       EXFAT_DENTRY_SHIFT;
}

/*
 * Return a pointer to entry eidx, valid until the next call on the
 * iterator or its release.
 */
const union exfat_dentry *exfat_dir_iter_get(struct exfat_dir_iter *it,
					     u32 eidx)
{
	struct exfat_sb_info *sbi = EXFAT_SB(it->dir->i_sb);
	u64 pos = (u64)eidx << EXFAT_DENTRY_SHIFT;
	u32 clu, len;
	sector_t sect;
	int err;

	if (eidx >= exfat_dir_entries(it->dir))
		return ERR_PTR(-ENOENT);
	err = exfat_map_cluster(it->dir, pos >> sbi->clu_shift, &clu, &len);
	if (err)
		return ERR_PTR(err);
	sect = exfat_clu_to_sect(sbi, clu) +
	       ((pos & (sbi->clu_size - 1)) >> sbi->sect_shift);
	if (!it->bh || it->sect != sect) {
		struct buffer_head *bh;

		/* a directory is read front to back: prefetch its cluster */
		if ((pos & (sbi->clu_size - 1)) == 0 && sbi->clu_shift > sbi->sect_shift)
			exfat_readahead_sectors(it->dir->i_sb, sect,
						1U << (sbi->clu_shift - sbi->sect_shift));
		bh = exfat_read_sector(it->dir->i_sb, sect);
		if (IS_ERR(bh))
			return ERR_CAST(bh);
		exfat_dir_iter_release(it);
		it->bh = bh;
		it->sect = sect;
	}
	return exfat_sector_data(it->bh) +
	       (pos & ((1U << sbi->sect_shift) - 1));
}

int exfat_dir_read_entry(struct inode *dir, u32 eidx, union exfat_dentry *de)
{
	struct exfat_dir_iter it;
	const union exfat_dentry *p;

	exfat_dir_iter_init(&it, dir);
	p = exfat_dir_iter_get(&it, eidx);
	if (!IS_ERR(p))
		*de = *p;
	exfat_dir_iter_release(&it);
	return PTR_ERR_OR_ZERO(p);
}

/**
 * exfat_get_entry_set - read and verify the file entry set at @eidx
 * @it: iterator over the directory holding the set
 * @eidx: index of the File entry
 * @esp: on success, a verified copy of the set; free with kfree()
 *
 * Returns 0, -EFSCORRUPTED (reported) when the set fails verification,
 * -ENOENT when @eidx does not hold an in-use File entry, or an I/O error.
 */
int exfat_get_entry_set(struct exfat_dir_iter *it, u32 eidx,
			struct exfat_entry_set **esp)
{
	struct inode *dir = it->dir;
	const union exfat_dentry *de;
	struct exfat_entry_set *es;
	const char *why;
	unsigned int nr, i;

	de = exfat_dir_iter_get(it, eidx);
	if (IS_ERR(de))
		return PTR_ERR(de);
	if (de->generic.type != EXFAT_TYPE_FILE)
		return -ENOENT;
	nr = de->file.secondary_count + 1;
	if (nr < 1 + EXFAT_FILE_MIN_SECONDARY ||
	    eidx + nr > exfat_dir_entries(dir)) {
		exfat_fs_error(dir->i_sb, "directory %lu, entry %u: SecondaryCount %u out of range",
			       dir->i_ino, eidx, nr - 1);
		return -EFSCORRUPTED;
	}

	es = kmalloc(struct_size(es, de, nr), GFP_NOFS);
	if (!es)
		return -ENOMEM;
	es->eidx = eidx;
	es->nr = nr;
	for (i = 0; i < nr; i++) {
		de = exfat_dir_iter_get(it, eidx + i);
		if (IS_ERR(de)) {
			kfree(es);
			return PTR_ERR(de);
		}
		es->de[i] = *de;
	}

	why = exfat_verify_file_set(es->de, nr);
	if (why) {
		exfat_fs_error(dir->i_sb, "directory %lu, entry %u: bad entry set (%s)",
			       dir->i_ino, eidx, why);
		kfree(es);
		return -EFSCORRUPTED;
	}
	*esp = es;
	return 0;
}
