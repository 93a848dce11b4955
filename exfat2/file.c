// SPDX-License-Identifier: GPL-2.0
/*
 * File data through iomap: buffered and direct reads, readahead, mmap,
 * splice and FIEMAP all use one mapping function.
 *
 * The range between ValidDataLength and DataLength holds no data (§7.6.5):
 * it is reported as an unwritten extent, which iomap reads as zeros.
 * SEEK_DATA/SEEK_HOLE see the whole file as data, as the in-tree driver
 * does: exFAT files have no holes, and a hole that is only ever at the end
 * (and vanishes on the first write past it) would tell programs that probe
 * for hole support (fstests' seek_sanity_test) that the middle of a file
 * can be a hole too.
 *
 * When ValidDataLength falls inside a block, the disk may hold stale bytes
 * after it in that block.  Until the first write to the file, such a block
 * is read by hand and its tail zeroed (iomap in 6.12 cannot zero part of a
 * mapped block).  Before anything is written, the tail is zeroed through
 * the page cache, so it reaches the disk before any dirty folio of the file
 * does and the hand-read path is never needed again (ei->tail_clean).
 */
#include <linux/iomap.h>
#include <linux/pagemap.h>
#include <linux/rmap.h>
#include <linux/uio.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/falloc.h>
#include "exfat.h"

/* The block holding ValidDataLength, if it is partly valid: [*start, *end) */
static bool exfat_vdl_block(struct inode *inode, loff_t *start, loff_t *end)
{
	loff_t vdl = READ_ONCE(EXFAT_I(inode)->valid_size);
	loff_t mask = i_blocksize(inode) - 1;

	if (READ_ONCE(EXFAT_I(inode)->tail_clean) ||
	    vdl >= i_size_read(inode) || !(vdl & mask))
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
	iomap->addr = exfat_disk_addr(sbi, clu, pos);
	length = min_t(u64, length, ((u64)run << sbi->clu_shift) - off);
	iomap->type = IOMAP_MAPPED;

	if (vdl < isize) {
		if (pos >= vend) {
			iomap->type = IOMAP_UNWRITTEN;
		} else if (pos >= vstart) {
			/* unless its tail is clean, exfat_read_vdl_folio() reads it */
			if (!READ_ONCE(EXFAT_I(inode)->tail_clean) &&
			    !(flags & IOMAP_REPORT))
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

	/*
	 * Nothing was written to the file yet (see the top comment), so the
	 * folio is clean: whatever readahead left in it is read again.
	 */
	if (folio_test_private(folio) && !iomap_release_folio(folio, GFP_NOFS)) {
		folio_unlock(folio);
		return -EIO;
	}
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
			exfat_disk_addr(sbi, clu, p) >> SECTOR_SHIFT;
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

/*
 * Raise ValidDataLength to end (within the file) after [start, end) was
 * written, if that range reaches it.
 */
static void exfat_extend_valid_from(struct inode *inode, loff_t start,
				    loff_t end)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);

	if (end <= READ_ONCE(ei->valid_size))
		return;
	down_write(&ei->map_lock);
	end = min(end, i_size_read(inode));
	if (start <= ei->valid_size && end > ei->valid_size) {
		ei->valid_size = end;
		ei->vdl_seq++;
		up_write(&ei->map_lock);
		mark_inode_dirty(inode);
		return;
	}
	up_write(&ei->map_lock);
}

/* Raise ValidDataLength to end: everything below end is data now. */
static void exfat_extend_valid(struct inode *inode, loff_t end)
{
	exfat_extend_valid_from(inode, 0, end);
}

/*
 * A buffered write raises ValidDataLength over each folio it filled while
 * it still holds the folio's lock: zeroing past ValidDataLength
 * (exfat_zero_to()) takes that lock too, so it either runs first or sees
 * the new ValidDataLength (exfat_gap_valid()) and never zeroes the data.
 */
static void exfat_put_folio(struct inode *inode, loff_t pos,
			    unsigned int copied, struct folio *folio)
{
	if (copied)
		exfat_extend_valid_from(inode, pos, pos + copied);
	folio_unlock(folio);
	folio_put(folio);
}

static const struct iomap_folio_ops exfat_write_folio_ops = {
	.put_folio	= exfat_put_folio,
};

static bool exfat_gap_valid(struct inode *inode, const struct iomap *iomap)
{
	return iomap->validity_cookie == READ_ONCE(EXFAT_I(inode)->vdl_seq);
}

static const struct iomap_folio_ops exfat_gap_folio_ops = {
	.put_folio	= exfat_put_folio,
	.iomap_valid	= exfat_gap_valid,
};

/*
 * Mapping for exfat_zero_to(): from ValidDataLength on, blocks are zeroed
 * in the page cache (the first one read from disk below ValidDataLength).
 * The mapping is stale once ValidDataLength moves; a position below it is
 * data someone wrote meanwhile, and the zeroing starts again past it.
 */
static int exfat_gap_iomap_begin(struct inode *inode, loff_t pos,
				 loff_t length, unsigned int flags,
				 struct iomap *iomap, struct iomap *srcmap)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	loff_t bmask = i_blocksize(inode) - 1;
	loff_t vdl, vend;
	u32 seq, off, clu, run;
	int err;

	down_read(&ei->map_lock);
	vdl = ei->valid_size;
	seq = ei->vdl_seq;
	up_read(&ei->map_lock);
	if (pos < vdl)
		return -EAGAIN;
	err = exfat_map_cluster(inode, pos >> sbi->clu_shift, &clu, &run);
	if (err)
		return err;
	off = pos & (sbi->clu_size - 1);
	iomap->bdev = inode->i_sb->s_bdev;
	iomap->offset = pos;
	iomap->addr = exfat_disk_addr(sbi, clu, pos);
	iomap->length = min_t(u64, length, ((u64)run << sbi->clu_shift) - off);
	iomap->type = IOMAP_MAPPED;
	iomap->flags = 0;
	vend = (vdl + bmask) & ~bmask;
	if (pos >= vend)
		iomap->flags |= IOMAP_F_NEW;
	else
		iomap->length = min_t(u64, iomap->length, vend - pos);
	iomap->validity_cookie = seq;
	iomap->folio_ops = &exfat_gap_folio_ops;
	return 0;
}

static const struct iomap_ops exfat_gap_iomap_ops = {
	.iomap_begin	= exfat_gap_iomap_begin,
};

/*
 * Make [ValidDataLength, end) zeros and raise ValidDataLength to end.  The
 * range lies within the file's clusters.  Writes and page faults may move
 * ValidDataLength meanwhile; see exfat_put_folio().
 */
static int exfat_zero_to(struct inode *inode, loff_t end)
{
	loff_t vdl;
	int err;

	do {
		vdl = READ_ONCE(EXFAT_I(inode)->valid_size);
		if (vdl >= end)
			return 0;
		err = iomap_zero_range(inode, vdl, end - vdl, NULL,
				       &exfat_gap_iomap_ops);
	} while (err == -EAGAIN);
	if (!err)
		exfat_extend_valid(inode, end);
	return err;
}

/*
 * Mapping for writes.  Clusters are allocated here, up to the end of the
 * range, so the chain always covers what the page cache may write back.
 * Blocks past ValidDataLength are unwritten: iomap zeroes the parts of
 * them a write does not cover instead of reading the disk.
 */
static int exfat_write_iomap_begin(struct inode *inode, loff_t pos,
				   loff_t length, unsigned int flags,
				   struct iomap *iomap, struct iomap *srcmap)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	loff_t bmask = i_blocksize(inode) - 1;
	u64 need = exfat_bytes_to_clus(sbi, pos + length);
	u32 fclu = pos >> sbi->clu_shift, off, clu, run;
	loff_t vend;
	int err = 0;

	if (need > sbi->clu_count)
		return -ENOSPC;
	iomap->bdev = inode->i_sb->s_bdev;
	iomap->offset = pos;
	iomap->flags = 0;

	down_write(&ei->map_lock);
	if (flags & IOMAP_ZERO) {
		if (fclu >= ei->alloc_clus) {
			iomap->type = IOMAP_HOLE;
			iomap->addr = IOMAP_NULL_ADDR;
			iomap->length = length;
			goto out;
		}
	} else if (need > ei->alloc_clus) {
		/* near a full volume, map what fits: the write comes up short */
		u64 avail = ei->alloc_clus + READ_ONCE(sbi->free_clusters);

		if (need > avail && avail > fclu)
			need = avail;
		err = exfat_alloc_clusters(inode, need);
		if (err)
			goto out;
		iomap->flags |= IOMAP_F_DIRTY;
	}

	err = exfat_map_cluster_locked(inode, fclu, &clu, &run);
	if (err)
		goto out;
	off = pos & (sbi->clu_size - 1);
	iomap->addr = exfat_disk_addr(sbi, clu, pos);
	length = min_t(u64, length, ((u64)run << sbi->clu_shift) - off);

	/*
	 * Past ValidDataLength the disk holds nothing worth reading: writes
	 * see unwritten blocks, and zeroing (which skips unwritten blocks but
	 * must really write here, since ValidDataLength is about to cover
	 * them) sees new ones, zeroed in the page cache instead of read.
	 */
	vend = (ei->valid_size + bmask) & ~bmask;
	if (pos < vend) {
		iomap->type = IOMAP_MAPPED;
		length = min(length, vend - pos);
	} else if (flags & IOMAP_ZERO) {
		iomap->type = IOMAP_MAPPED;
		iomap->flags |= IOMAP_F_NEW;
	} else {
		iomap->type = IOMAP_UNWRITTEN;
	}
	iomap->length = length;
	if (!(flags & IOMAP_ZERO))
		iomap->folio_ops = &exfat_write_folio_ops;
out:
	up_write(&ei->map_lock);
	return err;
}

static const struct iomap_ops exfat_write_iomap_ops = {
	.iomap_begin	= exfat_write_iomap_begin,
};

/*
 * Writeback mapping.  A run mapped for one folio serves the next ones
 * unless clusters left the chain since (a truncate between two folios):
 * the run may then hold freed clusters, now another file's.
 */
static int exfat_map_blocks(struct iomap_writepage_ctx *wpc,
			    struct inode *inode, loff_t offset, unsigned int len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	u32 seq = READ_ONCE(EXFAT_I(inode)->map_seq);
	u32 off, clu, run;
	int err;

	if (offset >= wpc->iomap.offset &&
	    offset < wpc->iomap.offset + wpc->iomap.length &&
	    wpc->iomap.validity_cookie == seq)
		return 0;
	if (offset >> sbi->clu_shift >= READ_ONCE(EXFAT_I(inode)->alloc_clus))
		return -EIO;
	err = exfat_map_cluster(inode, offset >> sbi->clu_shift, &clu, &run);
	if (err)
		return err;
	off = offset & (sbi->clu_size - 1);
	wpc->iomap.type = IOMAP_MAPPED;
	wpc->iomap.flags = 0;
	wpc->iomap.bdev = inode->i_sb->s_bdev;
	wpc->iomap.offset = offset;
	wpc->iomap.addr = exfat_disk_addr(sbi, clu, offset);
	wpc->iomap.length = ((u64)run << sbi->clu_shift) - off;
	wpc->iomap.validity_cookie = seq;
	return 0;
}

/*
 * Writeback completion: finish the ioends in process context.  If
 * ValidDataLength on disk lags behind, the inode is dirtied: the next
 * write_inode moves it up over the data, once a cache flush has made the
 * data durable (rule 2; one flush then serves every file written before
 * it, instead of one per completion here).
 */
void exfat_ioend_work(struct work_struct *work)
{
	struct exfat_inode_info *ei = container_of(work,
						   struct exfat_inode_info,
						   ioend_work);
	struct iomap_ioend *ioend, *next;
	LIST_HEAD(list);

	spin_lock_irq(&ei->ioend_lock);
	list_splice_init(&ei->ioend_list, &list);
	spin_unlock_irq(&ei->ioend_lock);
	list_for_each_entry_safe(ioend, next, &list, io_list) {
		list_del_init(&ioend->io_list);
		iomap_finish_ioends(ioend,
				    blk_status_to_errno(ioend->io_bio.bi_status));
	}
	if (READ_ONCE(ei->valid_size) > READ_ONCE(ei->disk_valid))
		mark_inode_dirty_sync(&ei->vfs_inode);
}

static void exfat_writeback_end_bio(struct bio *bio)
{
	struct iomap_ioend *ioend = iomap_ioend_from_bio(bio);
	struct inode *inode = ioend->io_inode;
	struct exfat_inode_info *ei = EXFAT_I(inode);
	unsigned long flags;

	spin_lock_irqsave(&ei->ioend_lock, flags);
	/* the data is on the device, not yet durable: see rule 2 */
	WRITE_ONCE(ei->data_gen,
		   max(ei->data_gen, exfat_flush_gen(inode->i_sb)));
	if (list_empty(&ei->ioend_list))
		queue_work(EXFAT_SB(inode->i_sb)->ioend_wq, &ei->ioend_work);
	list_add_tail(&ioend->io_list, &ei->ioend_list);
	spin_unlock_irqrestore(&ei->ioend_lock, flags);
}

static int exfat_prepare_ioend(struct iomap_ioend *ioend, int status)
{
	if (!status)
		ioend->io_bio.bi_end_io = exfat_writeback_end_bio;
	return status;
}

static const struct iomap_writeback_ops exfat_writeback_ops = {
	.map_blocks	= exfat_map_blocks,
	.prepare_ioend	= exfat_prepare_ioend,
};

static int exfat_writepages(struct address_space *mapping,
			    struct writeback_control *wbc)
{
	struct iomap_writepage_ctx wpc = {};

	if (unlikely(exfat_forced_shutdown(mapping->host->i_sb)))
		return -EIO;
	return iomap_writepages(mapping, wbc, &wpc, &exfat_writeback_ops);
}

/* Give back clusters a failed or short write allocated past the size. */
static void exfat_trim_alloc(struct inode *inode)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	u32 keep = exfat_bytes_to_clus(sbi, i_size_read(inode));

	down_write(&ei->map_lock);
	if (ei->alloc_clus > keep) {
		exfat_free_clusters(inode, keep);
		mark_inode_dirty(inode);
	}
	up_write(&ei->map_lock);
}

/*
 * Zero the rest of the block holding ValidDataLength, through the page
 * cache: whatever the disk holds there is undefined (§7.6.5).
 */
static int exfat_zero_vdl_tail(struct inode *inode)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	loff_t bmask = i_blocksize(inode) - 1;
	loff_t vdl = READ_ONCE(ei->valid_size);
	int err;

	err = exfat_zero_to(inode, min((vdl + bmask) & ~bmask,
				       i_size_read(inode)));
	if (!err)
		WRITE_ONCE(ei->tail_clean, true);
	return err;
}

/*
 * The folio holding the old end of the file may be writable in some page
 * tables, mapped when ValidDataLength was raised up to that end.  Clear
 * those mappings: a store past the old end then faults, and
 * exfat_page_mkwrite() raises ValidDataLength over it, so no data written
 * through a mapping ever lies past ValidDataLength, where zeroing goes.
 */
static void exfat_wrprotect_eof(struct inode *inode, loff_t old)
{
	struct folio *folio;

	if (!(old & (PAGE_SIZE - 1)))
		return;
	folio = filemap_lock_folio(inode->i_mapping, old >> PAGE_SHIFT);
	if (IS_ERR(folio))
		return;
	if (folio_mkclean(folio))
		folio_mark_dirty(folio);
	folio_unlock(folio);
	folio_put(folio);
}

/*
 * Grow the file to size with clusters but no data: the new range lies past
 * ValidDataLength, so it reads as zeros without being written.  Page
 * faults wait meanwhile (invalidate_lock).
 */
static int exfat_expand(struct inode *inode, loff_t size)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	u64 need = exfat_bytes_to_clus(sbi, size);
	loff_t old = i_size_read(inode);
	loff_t page_end = min_t(loff_t, size, round_up(old, PAGE_SIZE));
	int err;

	if (need > sbi->clu_count)
		return -ENOSPC;
	down_write(&ei->map_lock);
	err = exfat_alloc_clusters(inode, need);
	up_write(&ei->map_lock);
	if (err)
		return err;
	filemap_invalidate_lock(inode->i_mapping);
	exfat_wrprotect_eof(inode, old);
	truncate_setsize(inode, size);
	mark_inode_dirty(inode);
	/* the old end may sit inside a block whose disk tail is stale */
	if (!ei->tail_clean)
		err = exfat_zero_vdl_tail(inode);
	/* and stores through a mapping past the old end are not data */
	if (!err && old < page_end)
		err = iomap_zero_range(inode, old, page_end - old, NULL,
				       &exfat_write_iomap_ops);
	filemap_invalidate_unlock(inode->i_mapping);
	return err;
}

/*
 * Before data lands at pos: the block holding ValidDataLength gets a clean
 * tail, the file grows to pos if it is shorter, and the bytes between
 * ValidDataLength and pos become zeros.  The caller holds i_rwsem.
 */
static int exfat_prepare_write(struct inode *inode, loff_t pos)
{
	int err;

	if (!EXFAT_I(inode)->tail_clean) {
		err = exfat_zero_vdl_tail(inode);
		if (err)
			return err;
	}
	if (pos > i_size_read(inode)) {
		err = exfat_expand(inode, pos);
		if (err)
			return err;
	}
	return exfat_zero_to(inode, pos);
}

static int exfat_dio_write_end_io(struct kiocb *iocb, ssize_t size, int error,
				  unsigned int flags)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	loff_t end = iocb->ki_pos + size;
	unsigned long irqflags;

	if (error || size <= 0)
		return error;
	spin_lock_irqsave(&ei->ioend_lock, irqflags);
	WRITE_ONCE(ei->data_gen,
		   max(ei->data_gen, exfat_flush_gen(inode->i_sb)));
	spin_unlock_irqrestore(&ei->ioend_lock, irqflags);
	if (end > i_size_read(inode)) {
		i_size_write(inode, end);
		mark_inode_dirty(inode);
	}
	exfat_extend_valid(inode, end);
	return 0;
}

static const struct iomap_dio_ops exfat_dio_write_ops = {
	.end_io		= exfat_dio_write_end_io,
};

/*
 * Direct writes below ValidDataLength that cover whole blocks change only
 * the blocks they write, and may complete after i_rwsem is dropped.  Any
 * other direct write completes before it returns, after the direct writes
 * in flight: it zeroes the range up to its start and the rest of its
 * partial blocks (other writes in flight there would be overwritten with
 * zeros), and raises ValidDataLength and the size when it completes (the
 * clusters past the old size must not be trimmed while its bios write
 * them).  The caller holds i_rwsem exclusive.
 */
static int exfat_dio_write_flags(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	loff_t end = iocb->ki_pos + iov_iter_count(from);
	unsigned int bmask = i_blocksize(inode) - 1;

	lockdep_assert_held_write(&inode->i_rwsem);
	if (end <= READ_ONCE(EXFAT_I(inode)->valid_size) &&
	    !((iocb->ki_pos | end) & bmask))
		return 0;
	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	inode_dio_wait(inode);
	return IOMAP_DIO_FORCE_WAIT;
}

static ssize_t exfat_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	int dio_flags = 0;
	loff_t pos;
	ssize_t ret;

	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return -EIO;
	if (iocb->ki_flags & IOCB_NOWAIT) {
		if (!inode_trylock(inode))
			return -EAGAIN;
	} else {
		inode_lock(inode);
	}
	ret = generic_write_checks(iocb, from);
	if (ret <= 0)
		goto out;
	ret = file_modified(iocb->ki_filp);
	if (ret)
		goto out;
	/* like Windows: a modified file needs archiving */
	EXFAT_I(inode)->attr |= EXFAT_ATTR_ARCHIVE;

	pos = iocb->ki_pos;
	if (iocb->ki_flags & IOCB_DIRECT) {
		dio_flags = exfat_dio_write_flags(iocb, from);
		if (dio_flags < 0) {
			ret = dio_flags;
			goto out;
		}
	}
	ret = exfat_prepare_write(inode, pos);
	if (ret)
		goto out_trim;

	if (iocb->ki_flags & IOCB_DIRECT) {
		ret = filemap_write_and_wait_range(inode->i_mapping, 0,
						   pos + iov_iter_count(from) - 1);
		if (!ret)
			ret = iomap_dio_rw(iocb, from, &exfat_write_iomap_ops,
					   &exfat_dio_write_ops, dio_flags,
					   NULL, 0);
		if (ret == -ENOTBLK)
			ret = 0;
		if (ret >= 0 && iov_iter_count(from)) {
			/* finish what direct I/O could not through the cache */
			ssize_t done = ret;

			iocb->ki_flags &= ~IOCB_DIRECT;
			ret = iomap_file_buffered_write(iocb, from,
							&exfat_write_iomap_ops,
							NULL);
			if (ret > 0) {
				exfat_extend_valid(inode, iocb->ki_pos);
				ret += done;
			} else if (done) {
				ret = done;
			}
		}
	} else {
		ret = iomap_file_buffered_write(iocb, from,
						&exfat_write_iomap_ops, NULL);
		if (ret > 0)
			exfat_extend_valid(inode, iocb->ki_pos);
	}
out_trim:
	if (EXFAT_I(inode)->alloc_clus >
	    exfat_bytes_to_clus(EXFAT_SB(inode->i_sb), i_size_read(inode)))
		exfat_trim_alloc(inode);
out:
	inode_unlock(inode);
	if (ret > 0)
		ret = generic_write_sync(iocb, ret);
	return ret;
}

/* Change the size; the caller holds i_rwsem. */
int exfat_truncate(struct inode *inode, loff_t size)
{
	struct exfat_sb_info *sbi = EXFAT_SB(inode->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	bool cut;
	int err;

	inode_dio_wait(inode);
	if (!ei->tail_clean) {
		err = exfat_zero_vdl_tail(inode);
		if (err)
			return err;
	}
	if (size > i_size_read(inode))
		return exfat_expand(inode, size);

	/* the disk past the new end of its block must read as zeros */
	err = iomap_truncate_page(inode, size, NULL, &exfat_write_iomap_ops);
	if (err)
		return err;
	filemap_invalidate_lock(inode->i_mapping);
	truncate_setsize(inode, size);
	down_write(&ei->map_lock);
	ei->valid_size = min(ei->valid_size, size);
	ei->vdl_seq++;
	up_write(&ei->map_lock);
	/*
	 * The smaller size is durable before the FAT entry that cuts the
	 * chain is written (rule 4): on a disk with a write-back cache,
	 * written is not enough, the two could reach the media in either
	 * order and a crash leave the old size over a shorter chain.
	 */
	err = __exfat_write_inode(inode, true);
	down_read(&ei->map_lock);
	cut = !(ei->flags & EXFAT_FLAG_NO_FAT_CHAIN) && size &&
	      exfat_bytes_to_clus(sbi, size) < ei->alloc_clus;
	up_read(&ei->map_lock);
	if (!err && cut)
		err = exfat_flush(inode->i_sb);
	down_write(&ei->map_lock);
	if (!err)
		err = exfat_free_clusters(inode, exfat_bytes_to_clus(sbi, size));
	up_write(&ei->map_lock);
	filemap_invalidate_unlock(inode->i_mapping);
	mark_inode_dirty(inode);
	return err;
}

/*
 * fallocate: mode 0 allocates clusters and, past the end, grows the file
 * without writing a byte (the new range is past ValidDataLength, so it
 * reads as zeros).  exFAT cannot hold clusters past DataLength, so
 * FALLOC_FL_KEEP_SIZE beyond the end is not supported; ZERO_RANGE zeroes
 * only what lies below ValidDataLength.
 */
static long exfat_fallocate(struct file *file, int mode, loff_t offset,
			    loff_t len)
{
	struct inode *inode = file_inode(file);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	loff_t end = offset + len, vdl;
	long err;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if (!S_ISREG(inode->i_mode))
		return -ENODEV;
	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return -EIO;

	inode_lock(inode);
	err = file_modified(file);
	if (err)
		goto out;
	if (end > i_size_read(inode)) {
		if (mode & FALLOC_FL_KEEP_SIZE) {
			err = -EOPNOTSUPP;
			goto out;
		}
		/* RLIMIT_FSIZE: SIGXFSZ and EFBIG, as for a write */
		err = inode_newsize_ok(inode, end);
		if (err)
			goto out;
		err = exfat_expand(inode, end);
		if (err)
			goto out;
	}
	if (mode & FALLOC_FL_ZERO_RANGE) {
		inode_dio_wait(inode);
		vdl = min(READ_ONCE(ei->valid_size), end);
		if (offset < vdl)
			err = iomap_zero_range(inode, offset, vdl - offset, NULL,
					       &exfat_write_iomap_ops);
	}
out:
	inode_unlock(inode);
	return err;
}

static vm_fault_t exfat_page_mkwrite(struct vm_fault *vmf)
{
	struct inode *inode = file_inode(vmf->vma->vm_file);
	struct folio *folio = page_folio(vmf->page);
	vm_fault_t ret;

	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return VM_FAULT_SIGBUS;
	sb_start_pagefault(inode->i_sb);
	file_update_time(vmf->vma->vm_file);
	filemap_invalidate_lock_shared(inode->i_mapping);
	/*
	 * ValidDataLength moves up to the end of this folio below: first
	 * the range between it and the folio must become zeros on disk.
	 */
	if (exfat_zero_to(inode, min(folio_pos(folio), i_size_read(inode)))) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	ret = iomap_page_mkwrite(vmf, &exfat_write_iomap_ops);
	if (!(ret & VM_FAULT_ERROR))
		exfat_extend_valid(inode, folio_pos(folio) + folio_size(folio));
out:
	filemap_invalidate_unlock_shared(inode->i_mapping);
	sb_end_pagefault(inode->i_sb);
	return ret;
}

static const struct vm_operations_struct exfat_file_vm_ops = {
	.fault		= filemap_fault,
	.map_pages	= filemap_map_pages,
	.page_mkwrite	= exfat_page_mkwrite,
};

int exfat_file_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct inode *inode = file_inode(file);
	struct super_block *sb = inode->i_sb;
	int err;

	if (unlikely(exfat_forced_shutdown(sb)))
		return -EIO;
	/*
	 * Data first; then the inode's entry set, which write_inode writes
	 * only after the FAT and bitmap it depends on; then the rest of the
	 * metadata (the parent directory's entries and size), and a flush.
	 */
	err = file_write_and_wait_range(file, start, end);
	/* its completion dirties the inode if ValidDataLength must move */
	if (S_ISREG(inode->i_mode))
		flush_work(&EXFAT_I(inode)->ioend_work);
	if (!err)
		err = sync_inode_metadata(inode, 1);
	if (!err)
		err = exfat_meta_barrier(sb);
	return err;
}

static sector_t exfat_bmap(struct address_space *mapping, sector_t block)
{
	return iomap_bmap(mapping, block, &exfat_read_iomap_ops);
}

const struct address_space_operations exfat_aops = {
	.read_folio		= exfat_read_folio,
	.readahead		= exfat_readahead,
	.writepages		= exfat_writepages,
	.dirty_folio		= iomap_dirty_folio,
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
	if (!(iocb->ki_flags & IOCB_DIRECT)) {
		loff_t size = i_size_read(inode);
		u64 last = min_t(u64, size, iocb->ki_pos + iov_iter_count(to));

		if (iocb->ki_pos < size && iov_iter_count(to)) {
			ret = exfat_map_prefill(inode, (last - 1) >>
						EXFAT_SB(inode->i_sb)->clu_shift);
			if (ret)
				return ret;
		}
		return generic_file_read_iter(iocb, to);
	}

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

static int exfat_file_open(struct inode *inode, struct file *file)
{
	int err = 0;

	if (unlikely(exfat_forced_shutdown(inode->i_sb)))
		return -EIO;
	file->f_mode |= FMODE_CAN_ODIRECT;
	/* writers (and mmap writes) need a clean tail; see the top comment */
	if (file->f_mode & FMODE_WRITE && !READ_ONCE(EXFAT_I(inode)->tail_clean)) {
		inode_lock(inode);
		if (!EXFAT_I(inode)->tail_clean)
			err = exfat_zero_vdl_tail(inode);
		inode_unlock(inode);
		if (err)
			return err;
	}
	return generic_file_open(inode, file);
}

/* A writer closing the file: it no longer needs an allocation window. */
static int exfat_file_release(struct inode *inode, struct file *file)
{
	if (file->f_mode & FMODE_WRITE)
		exfat_window_drop(inode);
	return 0;
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
	file_accessed(file);
	vma->vm_ops = &exfat_file_vm_ops;
	return 0;
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
	.release	= exfat_file_release,
	.llseek		= generic_file_llseek,
	.read_iter	= exfat_file_read_iter,
	.write_iter	= exfat_file_write_iter,
	.mmap		= exfat_file_mmap,
	.fsync		= exfat_file_fsync,
	.splice_read	= exfat_splice_read,
	.splice_write	= iter_file_splice_write,
	.fallocate	= exfat_fallocate,
	.unlocked_ioctl	= exfat_ioctl,
#ifdef CONFIG_COMPAT
	.compat_ioctl	= exfat_compat_ioctl,
#endif
};
