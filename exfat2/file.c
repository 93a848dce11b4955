// SPDX-License-Identifier: GPL-2.0
/*
 * File data through iomap: buffered and direct reads, readahead, mmap,
 * splice, SEEK_DATA/SEEK_HOLE and FIEMAP all use one mapping function.
 *
 * The range between ValidDataLength and DataLength holds no data (§7.6.5):
 * it is reported as an unwritten extent, which iomap reads as zeros.  When
 * ValidDataLength falls inside a block, that block is read by hand and its
 * tail zeroed, since iomap in 6.12 cannot zero part of a mapped block.
 */
#include <linux/iomap.h>
#include <linux/pagemap.h>
#include <linux/uio.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include "exfat.h"

/* The block holding ValidDataLength, if it is partly valid: [*start, *end) */
static bool exfat_vdl_block(struct inode *inode, loff_t *start, loff_t *end)
{
	loff_t vdl = READ_ONCE(EXFAT_I(inode)->valid_size);
	loff_t mask = i_blocksize(inode) - 1;

	if (vdl >= i_size_read(inode) || !(vdl & mask))
		return false;
	*start = vdl & ~mask;
	*end = *start + mask + 1;
	return true;
}

static int exfat_read_iomap_begin(struct inode *inode, loff_t pos,
				  loff_t length, unsigned int flags,
				  struct iomap *iomap, struct iomap *srcmap)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	loff_t isize = i_size_read(inode);
	loff_t vdl = READ_ONCE(EXFAT_I(inode)->valid_size);
	loff_t bmask = i_blocksize(inode) - 1;
	loff_t vstart = vdl & ~bmask, vend = (vdl + bmask) & ~bmask;
	u32 off, clu, run;
	int err;

	iomap->bdev = inode->i_sb->s_bdev;
	iomap->offset = pos;
	iomap->flags = 0;
	if (pos >= isize) {
		iomap->type = IOMAP_HOLE;
		iomap->addr = IOMAP_NULL_ADDR;
		iomap->length = length;
		return 0;
	}

	length = min_t(loff_t, length, ((isize + bmask) & ~bmask) - pos);
	err = exfat_map_cluster(inode, pos >> sbi->clu_shift, &clu, &run);
	if (err)
		return err;
	off = pos & (sbi->clu_size - 1);
	iomap->addr = ((u64)exfat_clu_to_sect(sbi, clu) << sbi->sect_shift) + off;
	length = min_t(u64, length, ((u64)run << sbi->clu_shift) - off);
	iomap->type = IOMAP_MAPPED;

	if (vdl < isize) {
		if (pos >= vend) {
			iomap->type = IOMAP_UNWRITTEN;
		} else if (pos >= vstart) {
			/* exfat_read_vdl_folio() reads this block */
			if (!(flags & IOMAP_REPORT))
				return -EAGAIN;
			length = min(length, vend - pos);
		} else {
			length = min(length, vstart - pos);
		}
	}
	iomap->length = length;
	return 0;
}

static const struct iomap_ops exfat_read_iomap_ops = {
	.iomap_begin	= exfat_read_iomap_begin,
};

/* Read the folio that holds a partly valid block; see the top comment. */
static int exfat_read_vdl_folio(struct inode *inode, struct folio *folio)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	unsigned int bsize = i_blocksize(inode);
	loff_t vdl = READ_ONCE(EXFAT_I(inode)->valid_size);
	loff_t pos = folio_pos(folio);
	size_t off;
	int err = 0;

	for (off = 0; off < folio_size(folio); off += bsize) {
		loff_t p = pos + off;
		struct bio *bio;
		u32 clu, run;

		if (p >= vdl || p >= i_size_read(inode)) {
			folio_zero_range(folio, off, folio_size(folio) - off);
			break;
		}
		err = exfat_map_cluster(inode, p >> sbi->clu_shift, &clu, &run);
		if (err)
			break;
		bio = bio_alloc(inode->i_sb->s_bdev, 1, REQ_OP_READ, GFP_NOFS);
		bio->bi_iter.bi_sector =
			((exfat_clu_to_sect(sbi, clu) << sbi->sect_shift) +
			 (p & (sbi->clu_size - 1))) >> SECTOR_SHIFT;
		bio_add_folio_nofail(bio, folio, bsize, off);
		err = submit_bio_wait(bio);
		bio_put(bio);
		if (err)
			break;
		if (p + bsize > vdl)
			folio_zero_range(folio, off + (vdl - p), p + bsize - vdl);
	}
	if (!err)
		folio_mark_uptodate(folio);
	folio_unlock(folio);
	return err;
}

static int exfat_read_folio(struct file *file, struct folio *folio)
{
	struct inode *inode = folio->mapping->host;
	loff_t start, end;

	if (exfat_vdl_block(inode, &start, &end) &&
	    start < folio_pos(folio) + folio_size(folio) &&
	    folio_pos(folio) < end)
		return exfat_read_vdl_folio(inode, folio);
	return iomap_read_folio(folio, &exfat_read_iomap_ops);
}

static void exfat_readahead(struct readahead_control *rac)
{
	/* stops before a partly valid block, left to ->read_folio */
	iomap_readahead(rac, &exfat_read_iomap_ops);
}

static sector_t exfat_bmap(struct address_space *mapping, sector_t block)
{
	return iomap_bmap(mapping, block, &exfat_read_iomap_ops);
}

const struct address_space_operations exfat_aops = {
	.read_folio		= exfat_read_folio,
	.readahead		= exfat_readahead,
	.bmap			= exfat_bmap,
	.invalidate_folio	= iomap_invalidate_folio,
	.release_folio		= iomap_release_folio,
	.is_partially_uptodate	= iomap_is_partially_uptodate,
	.migrate_folio		= filemap_migrate_folio,
	.error_remove_folio	= generic_error_remove_folio,
};

static ssize_t exfat_file_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	loff_t start, end;
	ssize_t ret;

	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return -EIO;
	if (!(iocb->ki_flags & IOCB_DIRECT))
		return generic_file_read_iter(iocb, to);

	if (!iov_iter_count(to))
		return 0;
	if (iocb->ki_flags & IOCB_NOWAIT) {
		if (!inode_trylock_shared(inode))
			return -EAGAIN;
	} else {
		inode_lock_shared(inode);
	}
	if (exfat_vdl_block(inode, &start, &end) &&
	    start < iocb->ki_pos + iov_iter_count(to) && iocb->ki_pos < end) {
		/* a partly valid block needs zeroing: go through the cache */
		inode_unlock_shared(inode);
		iocb->ki_flags &= ~IOCB_DIRECT;
		ret = filemap_write_and_wait_range(inode->i_mapping, iocb->ki_pos,
						   iocb->ki_pos + iov_iter_count(to) - 1);
		return ret ?: filemap_read(iocb, to, 0);
	}
	ret = iomap_dio_rw(iocb, to, &exfat_read_iomap_ops, NULL, 0, NULL, 0);
	inode_unlock_shared(inode);
	file_accessed(iocb->ki_filp);
	return ret;
}

static loff_t exfat_file_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);

	switch (whence) {
	case SEEK_DATA:
		inode_lock_shared(inode);
		offset = iomap_seek_data(inode, offset, &exfat_read_iomap_ops);
		inode_unlock_shared(inode);
		break;
	case SEEK_HOLE:
		inode_lock_shared(inode);
		offset = iomap_seek_hole(inode, offset, &exfat_read_iomap_ops);
		inode_unlock_shared(inode);
		break;
	default:
		return generic_file_llseek(file, offset, whence);
	}
	if (offset < 0)
		return offset;
	return vfs_setpos(file, offset, inode->i_sb->s_maxbytes);
}

static int exfat_file_open(struct inode *inode, struct file *file)
{
	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return -EIO;
	file->f_mode |= FMODE_CAN_ODIRECT;
	return generic_file_open(inode, file);
}

static ssize_t exfat_splice_read(struct file *in, loff_t *ppos,
				 struct pipe_inode_info *pipe, size_t len,
				 unsigned int flags)
{
	if (unlikely(exfat_forced_shutdown(file_inode(in)->i_sb)))
		return -EIO;
	return filemap_splice_read(in, ppos, pipe, len, flags);
}

static int exfat_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (unlikely(exfat_forced_shutdown(file_inode(file)->i_sb)))
		return -EIO;
	return generic_file_readonly_mmap(file, vma);
}

int exfat_fiemap(struct inode *inode, struct fiemap_extent_info *fieinfo,
		 u64 start, u64 len)
{
	int err;

	inode_lock_shared(inode);
	err = iomap_fiemap(inode, fieinfo, start, len, &exfat_read_iomap_ops);
	inode_unlock_shared(inode);
	return err;
}

const struct file_operations exfat_file_operations = {
	.open		= exfat_file_open,
	.llseek		= exfat_file_llseek,
	.read_iter	= exfat_file_read_iter,
	.mmap		= exfat_file_mmap,
	.splice_read	= exfat_splice_read,
	.unlocked_ioctl	= exfat_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= exfat_compat_ioctl,
#endif
};
