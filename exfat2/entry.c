// SPDX-License-Identifier: GPL-2.0
/*
 * Directory entries and entry sets (§6).  A directory is addressed by entry
 * index; entries are read through the buffer cache one sector at a time,
 * and a file's entry set is copied out and verified (type sequence,
 * NameLength, SetChecksum) before anything in it is trusted.
 */
#include <linux/slab.h>
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/sizes.h>
#include "exfat.h"

void exfat_dir_iter_init(struct exfat_dir_iter *it, struct inode *dir)
{
	memset(it, 0, sizeof(*it));
	it->sb = dir->i_sb;
	it->dir = dir;
}

/*
 * Iterate over a directory known only by its first cluster, as the parent
 * of an inode is: its clusters are found by walking the FAT (or, for a
 * contiguous directory, by arithmetic), bounded by the largest directory.
 */
void exfat_dir_iter_init_pos(struct exfat_dir_iter *it, struct super_block *sb,
			     u32 start_clu, u8 flags)
{
	memset(it, 0, sizeof(*it));
	it->sb = sb;
	it->start_clu = start_clu;
	it->flags = flags;
}

/* Release the current sector, writing it first if asked to. */
static int exfat_dir_iter_put_bh(struct exfat_dir_iter *it)
{
	int err = 0;

	if (!it->bh)
		return 0;
	if (it->dirty && it->sync)
		err = exfat_sync_meta(it->sb, it->bh, it->fua);
	exfat_put_sector(it->bh);
	it->bh = NULL;
	it->dirty = false;
	if (err && !it->err)
		it->err = err;
	return err;
}

int exfat_dir_iter_release(struct exfat_dir_iter *it)
{
	exfat_dir_iter_put_bh(it);
	return it->err;
}

static struct rw_semaphore *exfat_set_lock(const struct exfat_dir_iter *it)
{
	u32 clu = it->dir ? EXFAT_I(it->dir)->start_clu : it->start_clu;

	return &EXFAT_SB(it->sb)->set_locks[hash_32(clu, ilog2(EXFAT_SET_LOCKS))];
}

/* How messages name the directory: its inode number, or first cluster. */
static unsigned long exfat_iter_dir_id(const struct exfat_dir_iter *it)
{
	return it->dir ? it->dir->i_ino : it->start_clu;
}

/* The index of directory dir, if it has one that is good. */
static struct exfat_dindex *exfat_good_dindex(struct inode *dir)
{
	struct exfat_dindex *idx = READ_ONCE(EXFAT_I(dir)->dindex);

	return idx && !READ_ONCE(idx->bad) ? idx : NULL;
}

static struct exfat_dindex *exfat_iter_dindex(const struct exfat_dir_iter *it)
{
	return it->dir ? exfat_good_dindex(it->dir) : NULL;
}

/* Number of entries the directory's DataLength holds. */
u32 exfat_dir_entries(struct inode *dir)
{
	return min_t(u64, i_size_read(dir), EXFAT_MAX_DIR_SIZE) >>
	       EXFAT_DENTRY_SHIFT;
}

/* The chain of the directory it walks ends before its cluster fclu. */
static int exfat_dir_chain_short(struct exfat_dir_iter *it, u32 fclu)
{
	if (it->quiet)
		return -ESTALE;
	exfat_fs_error(it->sb, "directory at %u ends before its cluster %u",
		       it->start_clu, fclu);
	return -EFSCORRUPTED;
}

static int exfat_dir_iter_map(struct exfat_dir_iter *it, u32 fclu, u32 *clu)
{
	struct exfat_sb_info *sbi = EXFAT_SB(it->sb);
	u32 len;
	int err;

	if (it->dir) {
		/*
		 * Map a run once, not every entry: a directory's clusters
		 * are only ever added, so the run stays valid while the
		 * iterator lives.
		 */
		if (fclu - it->run_fclu < it->run_len) {
			*clu = it->run_clu + (fclu - it->run_fclu);
			return 0;
		}
		err = exfat_map_cluster(it->dir, fclu, clu, &len);
		if (!err) {
			it->run_fclu = fclu;
			it->run_clu = *clu;
			it->run_len = len;
		}
		return err;
	}

	if (fclu >= exfat_max_dir_clus(sbi))
		return it->quiet ? -ESTALE : -EFSCORRUPTED;
	if (it->flags & EXFAT_FLAG_NO_FAT_CHAIN) {
		*clu = it->start_clu + fclu;
	} else {
		struct exfat_fat_cursor cur = {};

		if (!it->walk_clu || fclu < it->walk_fclu) {
			it->walk_fclu = 0;
			it->walk_clu = it->start_clu;
		}
		err = 0;
		while (it->walk_fclu < fclu && !err) {
			err = it->quiet ?
			      exfat_fat_next_quiet(it->sb, &cur, it->walk_clu,
						   &it->walk_clu) :
			      exfat_fat_next(it->sb, &cur, it->walk_clu,
					     &it->walk_clu);
			if (!err && it->walk_clu == EXFAT_FAT_EOC)
				err = exfat_dir_chain_short(it, fclu);
			it->walk_fclu++;
		}
		exfat_fat_cursor_release(&cur);
		if (err) {
			it->walk_clu = 0;
			return err;
		}
		*clu = it->walk_clu;
	}
	if (it->quiet)
		/* a directory freed since the handle was made is stale */
		return exfat_clu_valid(sbi, *clu) &&
		       exfat_clu_in_use(it->sb, *clu) ? 0 : -ESTALE;
	if (!exfat_clu_valid(sbi, *clu)) {
		exfat_fs_error(it->sb, "directory at cluster %u: cluster %u out of range",
			       it->start_clu, *clu);
		return -EFSCORRUPTED;
	}
	return 0;
}

/*
 * Return a pointer to entry eidx, valid until the next call on the
 * iterator or its release.
 */
const union exfat_dentry *exfat_dir_iter_get(struct exfat_dir_iter *it,
					     u32 eidx)
{
	struct exfat_sb_info *sbi = EXFAT_SB(it->sb);
	u64 pos = (u64)eidx << EXFAT_DENTRY_SHIFT;
	u32 clu;
	sector_t sect;
	int err;

	if (it->dir && eidx >= exfat_dir_entries(it->dir))
		return ERR_PTR(-ENOENT);
	err = exfat_dir_iter_map(it, pos >> sbi->clu_shift, &clu);
	if (err)
		return ERR_PTR(err);
	sect = exfat_clu_to_sect(sbi, clu) +
	       ((pos & (sbi->clu_size - 1)) >> sbi->sect_shift);
	if (!it->bh || it->sect != sect) {
		unsigned int shift = sbi->clu_shift - sbi->sect_shift;
		struct buffer_head *bh;
		u64 ra;

		exfat_dir_iter_put_bh(it);
		/*
		 * A directory is read front to back: a sector not in memory
		 * comes with the rest of its contiguous run (the cluster, when
		 * walking the FAT), up to 128 KiB.
		 */
		ra = it->dir ? it->run_clu + it->run_len - clu : 1;
		ra = (ra << shift) - (sect - exfat_clu_to_sect(sbi, clu));
		bh = exfat_read_sector_ra(it->sb, sect,
					  min_t(u64, ra,
						SZ_128K >> sbi->sect_shift));
		if (IS_ERR(bh))
			return ERR_CAST(bh);
		it->bh = bh;
		it->sect = sect;
	}
	return exfat_sector_data(it->bh) +
	       (pos & ((1U << sbi->sect_shift) - 1));
}

/* Directory entries in one filesystem sector. */
static u32 exfat_dentries_per_sect(const struct exfat_sb_info *sbi)
{
	return 1U << (sbi->sect_shift - EXFAT_DENTRY_SHIFT);
}

/* Is entry i in the range of n entries from first? */
static bool exfat_in_range(u32 i, u32 first, unsigned int n)
{
	return i - first < n;
}

/*
 * One sector's share of a change to a directory: the entries of put (may
 * be NULL) that lie in the sector are written, the del_nr entries from
 * del that lie in it and that put does not cover are marked not in use,
 * and with close_tail, end-of-directory entries after put's last entry
 * in the sector become unused ones (write-ordering rule 7: the end of the
 * directory then only ever starts at a sector boundary, so that
 * exfat_find_slots() can place every set that fits in a sector inside
 * one, and a set reaches the disk in one sector write, never torn by a
 * power cut between two).
 *
 * The change is made under the buffer's lock, so that a writeback of the
 * block device running meanwhile sends the sector as it was before or
 * after, never a new SetChecksum beside an old Stream entry.  The caller
 * holds the directory's set lock for writing.
 */
static int exfat_sector_apply(struct exfat_dir_iter *it, u32 sect_first,
			      const struct exfat_entry_set *put, u32 del,
			      unsigned int del_nr, bool close_tail)
{
	u32 per_sect = exfat_dentries_per_sect(EXFAT_SB(it->sb));
	const union exfat_dentry *p;
	struct exfat_dindex *idx;
	union exfat_dentry *de;
	u32 i, tail = sect_first + per_sect;
	bool changed = false;

	p = exfat_dir_iter_get(it, sect_first);
	if (IS_ERR(p))
		return PTR_ERR(p);
	exfat_set_vol_dirty(it->sb);
	/* sect_first is the first entry of its sector: p is its start */
	exfat_sector_lock(it->bh);
	de = (union exfat_dentry *)p;
	for (i = 0; i < per_sect; i++) {
		u32 eidx = sect_first + i;

		if (put && exfat_in_range(eidx, put->eidx, put->nr)) {
			const union exfat_dentry *src = &put->de[eidx - put->eidx];

			if (memcmp(&de[i], src, sizeof(*src))) {
				de[i] = *src;
				changed = true;
			}
			tail = eidx + 1;
		} else if (exfat_in_range(eidx, del, del_nr)) {
			if (de[i].generic.type & EXFAT_TYPE_IN_USE)
				changed = true;
			de[i].generic.type &= ~EXFAT_TYPE_IN_USE;
		} else if (close_tail && eidx >= tail &&
			   de[i].generic.type == EXFAT_TYPE_EOD) {
			de[i].generic.type = EXFAT_TYPE_FILE & ~EXFAT_TYPE_IN_USE;
			changed = true;
		}
	}
	exfat_sector_unlock(it->sb, it->bh, changed);
	/* a sync write waits for the sector, dirtied now or before */
	it->dirty = true;
	idx = exfat_iter_dindex(it);
	for (i = 0; idx && i < per_sect; i++)
		exfat_dindex_set_type(idx, sect_first + i, de[i].generic.type);
	return 0;
}

/*
 * exfat_name_xhash() of the name in the entries after a Stream entry whose
 * NameLength is len, taken as exfat_es_get_name() takes it; get(arg, i)
 * returns the i-th entry of the set.
 */
static int exfat_set_xhash(const struct exfat_sb_info *sbi, unsigned int len,
			   unsigned int nr,
			   const union exfat_dentry *(*get)(void *, u32),
			   void *arg, u16 *xhash)
{
	const union exfat_dentry *de;
	unsigned int i, n;
	u32 h = 0;

	for (i = 2; i < nr && len; i++, len -= n) {
		de = get(arg, i);
		if (IS_ERR(de))
			return PTR_ERR(de);
		n = min_t(unsigned int, len, EXFAT_NAME_PER_ENTRY);
		h = exfat_name_xhash(sbi->upcase, h, de->name.name, n);
	}
	*xhash = exfat_name_xhash_end(h);
	return 0;
}

static const union exfat_dentry *exfat_es_entry(void *es, u32 i)
{
	return &((struct exfat_entry_set *)es)->de[i];
}

/* A set in a directory, for exfat_set_xhash(): its File entry's index. */
struct exfat_set_at {
	struct exfat_dir_iter	*it;
	u32			first;
};

static const union exfat_dentry *exfat_set_at_entry(void *arg, u32 i)
{
	struct exfat_set_at *at = arg;

	return exfat_dir_iter_get(at->it, at->first + i);
}

/*
 * Take the sets whose File entry lies in the nr entries from first out of
 * the index: they are about to be overwritten or deleted.
 */
static int exfat_dindex_forget(struct exfat_dir_iter *it,
			       struct exfat_dindex *idx, u32 first, u32 nr)
{
	const union exfat_dentry *de;
	u32 i;
	int hash;

	for (i = first; i < first + nr; i++) {
		de = exfat_dir_iter_get(it, i);
		if (IS_ERR(de))
			return PTR_ERR(de);
		if (de->generic.type != EXFAT_TYPE_FILE)
			continue;
		hash = -1;
		de = i + 1 < idx->nr_slots ? exfat_dir_iter_get(it, i + 1) :
					     NULL;
		if (!IS_ERR_OR_NULL(de) &&
		    de->generic.type == EXFAT_TYPE_STREAM)
			hash = le16_to_cpu(de->stream.name_hash);
		exfat_dindex_remove(idx, i, hash);
	}
	return 0;
}

/*
 * Write the set put (may be NULL) and remove the del_nr entries from del
 * but for those put covers, sector by sector; set lock held for writing.
 * The directory's index follows (its i_rwsem is held exclusive then).
 */
static int exfat_dir_apply(struct exfat_dir_iter *it,
			   const struct exfat_entry_set *put, u32 del,
			   unsigned int del_nr)
{
	u32 per_sect = exfat_dentries_per_sect(EXFAT_SB(it->sb));
	u32 first = U32_MAX, end = 0, last_put = 0, sect;
	struct exfat_dindex *idx;
	int err = 0;

	if (put) {
		first = put->eidx;
		end = put->eidx + put->nr;
		last_put = (end - 1) & ~(per_sect - 1);
	}
	if (del_nr) {
		first = min(first, del);
		end = max(end, del + del_nr);
	}
	if (first >= end)
		return 0;
	idx = exfat_iter_dindex(it);
	if (idx) {
		lockdep_assert_held_write(&it->dir->i_rwsem);
		if (put)
			err = exfat_dindex_forget(it, idx, put->eidx, put->nr);
		if (!err && del_nr)
			err = exfat_dindex_forget(it, idx, del, del_nr);
	}
	for (sect = first & ~(per_sect - 1); sect < end && !err;
	     sect += per_sect)
		err = exfat_sector_apply(it, sect, put, del, del_nr,
					 put && sect == last_put);
	if (idx && !err && put && put->nr > 1 &&
	    put->de[0].generic.type == EXFAT_TYPE_FILE &&
	    put->de[1].generic.type == EXFAT_TYPE_STREAM) {
		const struct exfat_dentry_stream *st = &put->de[1].stream;
		u16 xhash;

		err = exfat_set_xhash(EXFAT_SB(it->sb), st->name_len, put->nr,
				      exfat_es_entry, (void *)put, &xhash) ?:
		      exfat_dindex_add(idx, put->eidx,
				       le16_to_cpu(st->name_hash), xhash);
	}
	if (idx && err)
		WRITE_ONCE(idx->bad, true);
	return err;
}

/*
 * Overwrite the single entry eidx with de (a volume label); the sector is
 * written back later unless it->sync.
 */
int exfat_dir_put_entry(struct exfat_dir_iter *it, u32 eidx,
			const union exfat_dentry *de)
{
	DEFINE_RAW_FLEX(struct exfat_entry_set, one, de, 1);
	int err;

	one->eidx = eidx;
	one->nr = 1;
	one->de[0] = *de;
	down_write(exfat_set_lock(it));
	err = exfat_dir_apply(it, one, 0, 0);
	up_write(exfat_set_lock(it));
	if (!err && it->sync)
		err = exfat_dir_iter_put_bh(it);
	return err ?: it->err;
}

/* Write es's entries and close its sector's tail; set lock held. */
static int __exfat_put_entry_set(struct exfat_dir_iter *it,
				 struct exfat_entry_set *es)
{
	es->de[0].file.set_checksum = cpu_to_le16(exfat_set_checksum(es->de,
								     es->nr));
	return exfat_dir_apply(it, es, 0, 0);
}

/* Mark nr entries from eidx as no longer in use; set lock held. */
static int __exfat_delete_entries(struct exfat_dir_iter *it, u32 eidx,
				  unsigned int nr)
{
	if (it->dir && eidx < EXFAT_I(it->dir)->free_hint)
		EXFAT_I(it->dir)->free_hint = eidx;
	return exfat_dir_apply(it, NULL, eidx, nr);
}

/*
 * Write an entry set back, its SetChecksum recomputed.  With it->sync the
 * sectors are written before this returns.
 */
int exfat_put_entry_set(struct exfat_dir_iter *it, struct exfat_entry_set *es)
{
	int err;

	down_write(exfat_set_lock(it));
	err = __exfat_put_entry_set(it, es);
	up_write(exfat_set_lock(it));
	if (!err && it->sync)
		err = exfat_dir_iter_put_bh(it);
	return err ?: it->err;
}

/*
 * Replace the set of old_nr entries at old_eidx by es, in the same
 * directory: es is written and what es does not cover of the old set is
 * deleted under one hold of the set lock, so that no reader sees half of
 * either.  When exfat_same_sector() holds for the two, both changes go to
 * the disk in one sector write: a crash leaves one set or the other.
 */
int exfat_replace_entry_set(struct exfat_dir_iter *it,
			    struct exfat_entry_set *es, u32 old_eidx,
			    unsigned int old_nr)
{
	int err;

	es->de[0].file.set_checksum = cpu_to_le16(exfat_set_checksum(es->de,
								     es->nr));
	down_write(exfat_set_lock(it));
	if (it->dir && old_eidx < EXFAT_I(it->dir)->free_hint)
		EXFAT_I(it->dir)->free_hint = old_eidx;
	err = exfat_dir_apply(it, es, old_eidx, old_nr);
	up_write(exfat_set_lock(it));
	if (!err && it->sync)
		err = exfat_dir_iter_put_bh(it);
	return err ?: it->err;
}

/* Do nr entries at eidx and old_nr at old_eidx all lie in one sector? */
bool exfat_same_sector(struct super_block *sb, u32 eidx, unsigned int nr,
		       u32 old_eidx, unsigned int old_nr)
{
	u32 shift = EXFAT_SB(sb)->sect_shift - EXFAT_DENTRY_SHIFT;
	u32 first = min(eidx, old_eidx);
	u32 last = max(eidx + nr, old_eidx + old_nr) - 1;

	return nr && old_nr && first >> shift == last >> shift;
}

/* Make the sector holding entry eidx of dir durable, as it is in memory. */
int exfat_sync_entry(struct inode *dir, u32 eidx)
{
	struct exfat_dir_iter it;
	const union exfat_dentry *p;
	int err;

	exfat_dir_iter_init(&it, dir);
	p = exfat_dir_iter_get(&it, eidx);
	err = IS_ERR(p) ? PTR_ERR(p) : exfat_sync_meta_durable(dir->i_sb, it.bh);
	return exfat_dir_iter_release(&it) ?: err;
}

/*
 * A walk over the entry sets of a directory, the one way its entries are
 * read in order.  It is bounded by the directory's DataLength (an inode)
 * or by the size its parent's Stream entry gives (exfat_walk_init_pos()),
 * ends at the end-of-directory entry if there is one before that, and
 * never needs one: most directories other systems write end exactly at a
 * cluster boundary with no end marker.
 *
 * Each item is one primary entry with the secondaries that follow it: a
 * File entry and at most SecondaryCount in-use secondary entries (fewer
 * when the set is damaged: then item->whole is false and the walk goes on
 * at the first entry that is not one of its secondaries), a benign
 * primary (volume GUID, TexFAT padding, ...) likewise, and the critical
 * primaries that have no secondaries (bitmap, up-case table, label) one
 * entry each.  Unused entries and stray secondaries are skipped.
 */
void exfat_walk_init(struct exfat_walk *w, struct inode *dir, u32 start)
{
	exfat_dir_iter_init(&w->it, dir);
	w->pos = start;
	w->end = exfat_dir_entries(dir);
}

/* A walk over the directory at start_clu whose DataLength is size. */
void exfat_walk_init_pos(struct exfat_walk *w, struct super_block *sb,
			 u32 start_clu, u8 flags, u64 size)
{
	exfat_dir_iter_init_pos(&w->it, sb, start_clu, flags);
	w->pos = 0;
	w->end = min_t(u64, size, EXFAT_MAX_DIR_SIZE) >> EXFAT_DENTRY_SHIFT;
}

/* Stop before entry end (a set starting before it is still whole). */
void exfat_walk_limit(struct exfat_walk *w, u32 end)
{
	w->end = min(w->end, end);
}

/* Has the primary entry de secondaries after it, and how many at most? */
static unsigned int exfat_primary_secondaries(const union exfat_dentry *de)
{
	u8 type = de->generic.type;

	/* byte 1 of the generic primary template (§6.3.2) */
	if (type == EXFAT_TYPE_FILE || exfat_type_benign(type))
		return de->file.secondary_count;
	return 0;	/* bitmap, up-case table, label: no secondaries */
}

/**
 * exfat_walk_next - the next item of a directory walk
 * @w: the walk
 * @item: filled in with the item; item->de is valid until the next call
 *
 * Returns 1 with @item set, 0 at the end of the directory, or an error.
 */
int exfat_walk_next(struct exfat_walk *w, struct exfat_walk_item *item)
{
	const union exfat_dentry *de;
	u32 limit = w->it.dir ? exfat_dir_entries(w->it.dir) :
				w->end;
	unsigned int sc, i;
	u8 type;

	for (; w->pos < w->end; w->pos++) {
		de = exfat_dir_iter_get(&w->it, w->pos);
		if (IS_ERR(de))
			return PTR_ERR(de);
		type = de->generic.type;
		if (type == EXFAT_TYPE_EOD) {
			w->end = w->pos;
			return 0;
		}
		if (exfat_type_in_use(type) && !exfat_type_secondary(type))
			break;
	}
	if (w->pos >= w->end)
		return 0;

	item->eidx = w->pos;
	item->type = type;
	sc = exfat_primary_secondaries(de);
	for (i = 1; i <= sc && item->eidx + i < limit; i++) {
		de = exfat_dir_iter_get(&w->it, item->eidx + i);
		if (IS_ERR(de))
			return PTR_ERR(de);
		if (!exfat_type_in_use(de->generic.type) ||
		    !exfat_type_secondary(de->generic.type))
			break;
	}
	item->nr = i;
	item->whole = i == sc + 1 &&
		      (type != EXFAT_TYPE_FILE || sc >= EXFAT_FILE_MIN_SECONDARY);
	w->pos = item->eidx + item->nr;
	/* the secondaries may have moved the iterator: the primary again */
	item->de = exfat_dir_iter_get(&w->it, item->eidx);
	return IS_ERR(item->de) ? PTR_ERR(item->de) : 1;
}

/* Entry eidx of the walk's directory, valid until the walk moves on. */
const union exfat_dentry *exfat_walk_entry(struct exfat_walk *w, u32 eidx)
{
	return exfat_dir_iter_get(&w->it, eidx);
}

int exfat_walk_release(struct exfat_walk *w)
{
	return exfat_dir_iter_release(&w->it);
}

/* Copy the nr entries from eidx, under the set lock; free with kfree(). */
static int exfat_copy_entry_set(struct exfat_dir_iter *it, u32 eidx,
				unsigned int nr, struct exfat_entry_set **esp)
{
	const union exfat_dentry *de;
	struct exfat_entry_set *es;
	unsigned int i;

	es = kmalloc(struct_size(es, de, nr), GFP_NOFS);
	if (!es)
		return -ENOMEM;
	es->eidx = eidx;
	es->nr = nr;
	down_read(exfat_set_lock(it));
	for (i = 0; i < nr; i++) {
		de = exfat_dir_iter_get(it, eidx + i);
		if (IS_ERR(de)) {
			up_read(exfat_set_lock(it));
			kfree(es);
			return PTR_ERR(de);
		}
		es->de[i] = *de;
	}
	up_read(exfat_set_lock(it));
	*esp = es;
	return 0;
}

/* Verify a copied set; a bad one is freed (see exfat_get_entry_set()). */
static int exfat_check_entry_set(struct exfat_dir_iter *it,
				 struct exfat_entry_set *es)
{
	const char *why = exfat_verify_file_set(es->de, es->nr);

	if (!why)
		return 0;
	if (!it->quiet)
		exfat_fs_error(it->sb, "directory %lu, entry %u: bad entry set (%s)",
			       exfat_iter_dir_id(it), es->eidx, why);
	kfree(es);
	return it->quiet ? -ESTALE : -EFSCORRUPTED;
}

/**
 * exfat_get_entry_set - read and verify the file entry set at @eidx
 * @it: iterator over the directory holding the set
 * @eidx: index of the File entry
 * @esp: on success, a verified copy of the set; free with kfree()
 *
 * Returns 0, -EFSCORRUPTED (reported) when the set fails verification,
 * -ENOENT when @eidx does not hold an in-use File entry, or an I/O error.
 * With @it->quiet (a position from a file handle), a set that does not
 * verify, or a directory that cannot hold one there, is -ESTALE and not
 * reported.
 */
int exfat_get_entry_set(struct exfat_dir_iter *it, u32 eidx,
			struct exfat_entry_set **esp)
{
	const union exfat_dentry *de;
	struct exfat_entry_set *es;
	unsigned int nr;
	u32 limit = it->dir ? exfat_dir_entries(it->dir) :
			      EXFAT_MAX_DIR_SIZE >> EXFAT_DENTRY_SHIFT;
	int err;

	de = exfat_dir_iter_get(it, eidx);
	if (IS_ERR(de))
		return PTR_ERR(de);
	if (de->generic.type != EXFAT_TYPE_FILE)
		return -ENOENT;
	nr = de->file.secondary_count + 1;
	if (nr < 1 + EXFAT_FILE_MIN_SECONDARY || eidx + nr > limit) {
		if (it->quiet)
			return -ESTALE;
		exfat_fs_error(it->sb, "directory %lu, entry %u: SecondaryCount %u out of range",
			       exfat_iter_dir_id(it), eidx, nr - 1);
		return -EFSCORRUPTED;
	}

	err = exfat_copy_entry_set(it, eidx, nr, &es) ?:
	      exfat_check_entry_set(it, es);
	if (!err)
		*esp = es;
	return err;
}

/*
 * The directory's index (dindex.c), built from one pass over its entries
 * (their types) and one walk (its sets).  Built by whoever first needs it
 * (a lookup, holding dir's i_rwsem shared, or a create); when two build
 * at once, one copy is kept.  Every change to the directory made through
 * an iterator on its inode updates it (exfat_dir_apply(),
 * exfat_sector_apply(), exfat_grow_dir()); write_inode rewrites a set in
 * place, leaving its name and position alone, through an iterator on the
 * parent's first cluster, which the index does not need to see.
 */
static struct exfat_dindex *exfat_build_dindex(struct inode *dir)
{
	u32 i, total = exfat_dir_entries(dir);
	const union exfat_dentry *de;
	struct exfat_dindex *idx;
	struct exfat_walk_item item;
	struct exfat_dir_iter it;
	struct exfat_walk w;
	int ret = 0;

	idx = exfat_dindex_alloc(total);
	if (!idx)
		return NULL;
	exfat_dir_iter_init(&it, dir);
	for (i = 0; i < total && !ret; i++) {
		de = exfat_dir_iter_get(&it, i);
		if (IS_ERR(de))
			ret = PTR_ERR(de);
		else
			exfat_dindex_set_type(idx, i, de->generic.type);
	}
	exfat_dir_iter_release(&it);

	exfat_walk_init(&w, dir, 0);
	while (!ret && (ret = exfat_walk_next(&w, &item)) > 0) {
		ret = 0;
		if (item.type != EXFAT_TYPE_FILE || !item.whole)
			continue;
		de = exfat_walk_entry(&w, item.eidx + 1);
		if (IS_ERR(de)) {
			ret = PTR_ERR(de);
		} else if (de->generic.type == EXFAT_TYPE_STREAM) {
			struct exfat_set_at at = { &w.it, item.eidx };
			u16 hash = le16_to_cpu(de->stream.name_hash), xhash;

			ret = exfat_set_xhash(EXFAT_SB(dir->i_sb),
					      de->stream.name_len, item.nr,
					      exfat_set_at_entry, &at, &xhash) ?:
			      exfat_dindex_add(idx, item.eidx, hash, xhash);
		}
	}
	exfat_walk_release(&w);
	/* an error is found again, and reported, by the scan without one */
	if (ret) {
		exfat_dindex_free(idx);
		return NULL;
	}
	return idx;
}

/*
 * dir's index, built if it has none; NULL when there is none to use.  The
 * caller holds dir's i_rwsem, shared at least.
 */
static struct exfat_dindex *exfat_dir_index(struct inode *dir)
{
	struct exfat_sb_info *sbi = EXFAT_SB(dir->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(dir);
	struct exfat_dindex *idx, *old;

	lockdep_assert_held(&dir->i_rwsem);
	/* pairs with the smp_store_release() below: a whole index */
	idx = smp_load_acquire(&ei->dindex);
	if (!idx) {
		idx = exfat_build_dindex(dir);
		if (!idx)
			return NULL;
		idx->dir = dir;
		spin_lock(&sbi->dindex_lock);
		old = ei->dindex;
		if (!old) {
			list_add_tail(&idx->lru, &sbi->dindex_list);
			sbi->nr_dindex++;
			/* pairs with the smp_load_acquire() above */
			smp_store_release(&ei->dindex, idx);
		}
		spin_unlock(&sbi->dindex_lock);
		if (old) {
			exfat_dindex_free(idx);
			idx = old;
		}
	}
	return READ_ONCE(idx->bad) ? NULL : idx;
}

/*
 * Free dir's index: at eviction, or with dir's i_rwsem held exclusive (no
 * reader can be using it).
 */
void exfat_dir_index_drop(struct inode *dir)
{
	struct exfat_sb_info *sbi = EXFAT_SB(dir->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(dir);
	struct exfat_dindex *idx;

	spin_lock(&sbi->dindex_lock);
	idx = ei->dindex;
	if (idx) {
		list_del(&idx->lru);
		sbi->nr_dindex--;
		WRITE_ONCE(ei->dindex, NULL);
	}
	spin_unlock(&sbi->dindex_lock);
	exfat_dindex_free(idx);
}

/* For a writer (dir's i_rwsem held exclusive): a bad index is rebuilt. */
static struct exfat_dindex *exfat_dir_index_w(struct inode *dir)
{
	struct exfat_dindex *idx = READ_ONCE(EXFAT_I(dir)->dindex);

	lockdep_assert_held_write(&dir->i_rwsem);
	if (idx && READ_ONCE(idx->bad))
		exfat_dir_index_drop(dir);
	return exfat_dir_index(dir);
}

/* The index told something the disk does not hold: stop using it. */
static void exfat_dindex_stale(struct inode *dir, struct exfat_dindex *idx,
			       u32 eidx)
{
	WRITE_ONCE(idx->bad, true);
	exfat_warn_ratelimited(dir->i_sb,
			       "directory %lu: index out of date at entry %u, dropped",
			       dir->i_ino, eidx);
}

/*
 * Is the set the index names at eidx the one called uni (len units, hash
 * its NameHash)?  It is copied once; a position that holds no whole File
 * set with that NameHash is -ESTALE, a set with another name 0, and the
 * set is verified only when its name matches (returned in *esp, 1).
 */
static int exfat_indexed_set_named(struct exfat_dir_iter *it, u32 eidx,
				   const u16 *uni, unsigned int len, u16 hash,
				   __le16 *cand, struct exfat_entry_set **esp)
{
	const struct exfat_dentry_stream *st;
	const union exfat_dentry *de;
	struct exfat_entry_set *es;
	unsigned int nr, i;
	int err;

	if (eidx >= exfat_dir_entries(it->dir))
		return -ESTALE;
	de = exfat_dir_iter_get(it, eidx);
	if (IS_ERR(de))
		return PTR_ERR(de);
	nr = de->file.secondary_count + 1;
	if (de->generic.type != EXFAT_TYPE_FILE ||
	    nr < 1 + EXFAT_FILE_MIN_SECONDARY ||
	    eidx + nr > exfat_dir_entries(it->dir))
		return -ESTALE;
	err = exfat_copy_entry_set(it, eidx, nr, &es);
	if (err)
		return err;
	for (i = 1; i < nr; i++) {
		u8 type = es->de[i].generic.type;

		if (!exfat_type_in_use(type) || !exfat_type_secondary(type))
			break;
	}
	st = exfat_es_stream(es);
	if (i < nr || st->type != EXFAT_TYPE_STREAM ||
	    le16_to_cpu(st->name_hash) != hash) {
		kfree(es);
		return -ESTALE;
	}
	if (st->name_len != len || (nr - 2) * EXFAT_NAME_PER_ENTRY < len ||
	    exfat_name_cmp(EXFAT_SB(it->sb), uni, len, cand,
			   exfat_es_get_name(es, cand))) {
		kfree(es);
		return 0;
	}
	err = exfat_check_entry_set(it, es);
	if (err)
		return err;
	*esp = es;
	return 1;
}

/**
 * exfat_index_find - look a name up through the directory's index
 * @dir: the directory (its i_rwsem held, shared at least)
 * @uni: the name, @len units, @hash its NameHash
 * @len: its length
 * @hash: its NameHash
 * @cand: room for EXFAT_MAX_NAME_LEN + EXFAT_NAME_PER_ENTRY units
 * @esp: set to a verified copy of the set found
 *
 * Every set the index names is read and checked to be a whole set with
 * that NameHash where the index says, so a hit is never taken on trust.
 * Returns 1 with *@esp set, 0 when @dir holds no such name, -ESTALE when
 * the index cannot answer (there is none, or it was found out of date:
 * then it is not used again), or another error.
 */
int exfat_index_find(struct inode *dir, const u16 *uni, unsigned int len,
		     u16 hash, __le16 *cand, struct exfat_entry_set **esp)
{
	struct exfat_dindex *idx = exfat_dir_index(dir);
	struct exfat_dir_iter it;
	u32 cursor = 0, eidx = 0;
	int ret = 0, err;
	u16 xhash;

	if (!idx)
		return -ESTALE;
	xhash = exfat_name_xhash_cpu(EXFAT_SB(dir->i_sb)->upcase, uni, len);
	exfat_dir_iter_init(&it, dir);
	while (!ret &&
	       (eidx = exfat_dindex_next(idx, hash, xhash, &cursor)) != U32_MAX)
		ret = exfat_indexed_set_named(&it, eidx, uni, len, hash, cand,
					      esp);
	err = exfat_dir_iter_release(&it);
	if (ret == -ESTALE)
		exfat_dindex_stale(dir, idx, eidx);
	if (err && ret > 0) {
		kfree(*esp);
		*esp = NULL;
	}
	return err && ret >= 0 ? err : ret;
}

/*
 * Memory pressure: free the indexes of directories nobody is using (their
 * i_rwsem free), oldest first.  An index is rebuilt at the next need.
 */
static unsigned long exfat_dindex_count(struct shrinker *shrink,
					struct shrink_control *sc)
{
	struct exfat_sb_info *sbi = shrink->private_data;

	return READ_ONCE(sbi->nr_dindex) ?: SHRINK_EMPTY;
}

static unsigned long exfat_dindex_scan(struct shrinker *shrink,
				       struct shrink_control *sc)
{
	struct exfat_sb_info *sbi = shrink->private_data;
	struct exfat_dindex *idx, *next;
	unsigned long freed = 0;
	LIST_HEAD(dispose);
	struct inode *dir;

	spin_lock(&sbi->dindex_lock);
	list_for_each_entry_safe(idx, next, &sbi->dindex_list, lru) {
		if (freed >= sc->nr_to_scan)
			break;
		dir = idx->dir;
		/*
		 * The inode lives while its index is on the list (eviction
		 * takes it off under this lock); with its i_rwsem, no one
		 * reads the index.
		 */
		if (!down_write_trylock(&dir->i_rwsem))
			continue;
		WRITE_ONCE(EXFAT_I(dir)->dindex, NULL);
		up_write(&dir->i_rwsem);
		list_move(&idx->lru, &dispose);
		sbi->nr_dindex--;
		freed++;
	}
	spin_unlock(&sbi->dindex_lock);
	list_for_each_entry_safe(idx, next, &dispose, lru)
		exfat_dindex_free(idx);
	return freed;
}

int exfat_dindex_shrinker_init(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct shrinker *s;

	spin_lock_init(&sbi->dindex_lock);
	INIT_LIST_HEAD(&sbi->dindex_list);
	s = shrinker_alloc(0, "exfat2-dindex:%s", sb->s_id);
	if (!s)
		return -ENOMEM;
	s->count_objects = exfat_dindex_count;
	s->scan_objects = exfat_dindex_scan;
	s->private_data = sbi;
	sbi->dindex_shrinker = s;
	shrinker_register(s);
	return 0;
}

/* At unmount, once every inode is evicted (so every index freed). */
void exfat_dindex_shrinker_free(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	shrinker_free(sbi->dindex_shrinker);
	sbi->dindex_shrinker = NULL;
	WARN_ON_ONCE(!list_empty(&sbi->dindex_list));
}

/*
 * Give directory dir one more cluster, zeroed (all end-of-directory
 * entries) on disk before it is linked; the caller writes the directory's
 * new size to its entry set (exfat_alloc_slots()).  The caller holds
 * dir's i_rwsem exclusive.
 */
int exfat_grow_dir(struct inode *dir)
{
	struct exfat_sb_info *sbi = EXFAT_SB(dir->i_sb);
	struct exfat_inode_info *ei = EXFAT_I(dir);
	struct exfat_dindex *idx;
	u32 old = ei->alloc_clus;
	int err;

	if (old + 1 > exfat_max_dir_clus(sbi))
		return -ENOSPC;
	down_write(&ei->map_lock);
	err = exfat_append_dir_cluster(dir);
	if (!err) {
		i_size_write(dir, (loff_t)ei->alloc_clus << sbi->clu_shift);
		ei->valid_size = i_size_read(dir);
		dir->i_blocks = i_size_read(dir) >> 9;
	}
	up_write(&ei->map_lock);
	if (err)
		return err;
	idx = exfat_good_dindex(dir);
	if (idx && exfat_dindex_grow(idx, exfat_dir_entries(dir)))
		WRITE_ONCE(idx->bad, true);
	return 0;
}

/*
 * The search of exfat_find_slots() on the disk: from entry start (a
 * sector's first), a run of nr unused entries not among the busy_nr from
 * busy.  Returns 1 with *first set, 0 when there is none; *free is the
 * first unused entry seen (total if none).
 */
static int exfat_scan_slots(struct inode *dir, u32 start, unsigned int nr,
			    u32 busy, unsigned int busy_nr, u32 *first,
			    u32 *free)
{
	u32 per_sect = exfat_dentries_per_sect(EXFAT_SB(dir->i_sb));
	u32 i, run = 0, total = exfat_dir_entries(dir), eod = total;
	const union exfat_dentry *de;
	struct exfat_dir_iter it;
	int ret = 0;

	*free = total;
	exfat_dir_iter_init(&it, dir);
	for (i = start; i < total; i++) {
		de = exfat_dir_iter_get(&it, i);
		if (IS_ERR(de)) {
			ret = PTR_ERR(de);
			break;
		}
		if (exfat_type_in_use(de->generic.type) ||
		    exfat_in_range(i, busy, busy_nr)) {
			run = 0;
			continue;
		}
		if (*free == total)
			*free = i;
		if (de->generic.type == EXFAT_TYPE_EOD && eod == total)
			eod = i;
		if (++run < nr)
			continue;
		*first = i + 1 - nr;
		if (exfat_slots_placeable(*first, nr, eod, per_sect)) {
			ret = 1;
			break;
		}
	}
	exfat_dir_iter_release(&it);
	return ret;
}

/*
 * The same search through dir's index, from where a run of nr entries may
 * begin (exfat_dindex_run_hint()) if that is past start; the run found is
 * checked on the disk.  *free is then start: entries between the two may
 * be unused.  -ESTALE when the index cannot answer.
 */
static int exfat_index_slots(struct inode *dir, u32 start, unsigned int nr,
			     u32 busy, unsigned int busy_nr, u32 *first,
			     u32 *free)
{
	u32 per_sect = exfat_dentries_per_sect(EXFAT_SB(dir->i_sb));
	struct exfat_dindex *idx = exfat_dir_index_w(dir);
	const union exfat_dentry *de;
	struct exfat_dir_iter it;
	u32 i, from, total;
	int ret = 1;

	if (!idx)
		return -ESTALE;
	total = exfat_dir_entries(dir);
	if (idx->nr_slots != total) {
		exfat_dindex_stale(dir, idx, idx->nr_slots);
		return -ESTALE;
	}
	from = max(start, exfat_dindex_run_hint(idx, nr) & ~(per_sect - 1));
	if (!exfat_dindex_find_run(idx, from, nr, busy, busy_nr, per_sect,
				   first, free)) {
		/* one may start in the last nr - 1, and go on past the end */
		if (!busy_nr)
			exfat_dindex_set_run_hint(idx, nr,
						  max(from, total - min(total, nr - 1)));
		if (from != start)
			*free = start;
		return 0;
	}
	if (!busy_nr)
		exfat_dindex_set_run_hint(idx, nr, *first);
	if (from != start)
		*free = start;
	exfat_dir_iter_init(&it, dir);
	for (i = *first; i < *first + nr && ret > 0; i++) {
		de = exfat_dir_iter_get(&it, i);
		if (IS_ERR(de))
			ret = PTR_ERR(de);
		else if (exfat_type_in_use(de->generic.type))
			ret = -ESTALE;
	}
	exfat_dir_iter_release(&it);
	if (ret == -ESTALE)
		exfat_dindex_stale(dir, idx, i - 1);
	return ret;
}

/*
 * Find nr consecutive unused entries in dir, but for the busy_nr entries
 * from busy (slots already promised to another set, not yet written).
 * Returns 0 with *eidx the first, 1 when there are none (the directory
 * must grow: exfat_alloc_slots()), or an error.  A set
 * that fits in a sector is placed inside one (see
 * exfat_sector_apply()), except at an end-of-directory entry in
 * mid-sector, which only a directory last written by another
 * implementation has: entries skipped there would be end-of-directory
 * entries in front of the set.  The search starts at the directory's
 * free_hint (the caller holds dir's i_rwsem exclusive), so filling a
 * directory does not rescan it from the start every time, and goes
 * through the directory's index when it has one.
 */
int exfat_find_slots(struct inode *dir, unsigned int nr, u32 busy,
		     unsigned int busy_nr, u32 *eidx)
{
	u32 per_sect = exfat_dentries_per_sect(EXFAT_SB(dir->i_sb));
	struct exfat_inode_info *ei = EXFAT_I(dir);
	u32 start, first = 0, free;
	int ret;

	lockdep_assert_held_write(&dir->i_rwsem);
	/* from the start of the hint's sector: a run may begin there */
	start = min(ei->free_hint, exfat_dir_entries(dir)) & ~(per_sect - 1);
	ret = exfat_index_slots(dir, start, nr, busy, busy_nr, &first, &free);
	if (ret == -ESTALE)
		ret = exfat_scan_slots(dir, start, nr, busy, busy_nr, &first,
				       &free);
	if (ret < 0)
		return ret;
	if (!ret) {
		/* searched: a free run at the end continues into growth */
		ei->free_hint = free;
		return 1;
	}
	*eidx = first;
	/* nothing unused before the set: look after it next */
	ei->free_hint = free == first ? first + nr : free;
	return 0;
}

/*
 * Find nr entries for a set in the one sector that holds the old_nr
 * entries of the set at old_eidx of dir (which the new set replaces),
 * counting those and any unused ones as free, but not the busy_nr from
 * busy.  Returns -ENOSPC if the old set is not inside one sector or its
 * sector has no such run: then the caller places the set elsewhere.  As
 * for exfat_find_slots(), the caller holds dir's i_rwsem exclusive.
 */
int exfat_find_slots_near(struct inode *dir, unsigned int nr, u32 old_eidx,
			  unsigned int old_nr, u32 busy, unsigned int busy_nr,
			  u32 *eidx)
{
	u32 per_sect = exfat_dentries_per_sect(EXFAT_SB(dir->i_sb));
	u32 i, run = 0, first = old_eidx & ~(per_sect - 1);
	u32 end = min(first + per_sect, exfat_dir_entries(dir));
	struct exfat_dir_iter it;
	const union exfat_dentry *de;
	int err = -ENOSPC;

	if (nr > per_sect ||
	    !exfat_same_sector(dir->i_sb, old_eidx, old_nr, old_eidx, old_nr))
		return -ENOSPC;
	exfat_dir_iter_init(&it, dir);
	for (i = first; i < end; i++) {
		bool old = exfat_in_range(i, old_eidx, old_nr);

		de = exfat_dir_iter_get(&it, i);
		if (IS_ERR(de)) {
			err = PTR_ERR(de);
			break;
		}
		if (exfat_in_range(i, busy, busy_nr) ||
		    (!old && exfat_type_in_use(de->generic.type))) {
			run = 0;
			continue;
		}
		if (++run == nr) {
			*eidx = i + 1 - nr;
			err = 0;
			break;
		}
	}
	exfat_dir_iter_release(&it);
	return err;
}

/* Mark the entries of the set at eidx, nr long, as no longer in use. */
int exfat_delete_entries(struct exfat_dir_iter *it, u32 eidx, unsigned int nr)
{
	int err;

	down_write(exfat_set_lock(it));
	err = __exfat_delete_entries(it, eidx, nr);
	up_write(exfat_set_lock(it));
	return err;
}

/*
 * Does the set of item carry the name uni (len units, hash its NameHash)?
 * The raw name is compared; the set is verified only on a match.  cand
 * has room for EXFAT_MAX_NAME_LEN + EXFAT_NAME_PER_ENTRY units.
 */
int exfat_walk_item_named(struct exfat_walk *w,
			  const struct exfat_walk_item *item,
			  const u16 *uni, unsigned int len, u16 hash,
			  __le16 *cand)
{
	const union exfat_dentry *de;
	unsigned int i, got;

	de = exfat_walk_entry(w, item->eidx + 1);
	if (IS_ERR(de))
		return PTR_ERR(de);
	if (de->generic.type != EXFAT_TYPE_STREAM ||
	    de->stream.name_len != len ||
	    le16_to_cpu(de->stream.name_hash) != hash)
		return 0;
	for (got = 0, i = 2; got < len && i < item->nr;
	     i++, got += EXFAT_NAME_PER_ENTRY) {
		de = exfat_walk_entry(w, item->eidx + i);
		if (IS_ERR(de))
			return PTR_ERR(de);
		memcpy(cand + got, de->name.name, sizeof(de->name.name));
	}
	return got >= len &&
	       !exfat_name_cmp(EXFAT_SB(w->it.sb), uni, len, cand, len);
}

/* Does the set's name differ from uni in any unit (case included)? */
bool exfat_es_name_differs(const struct exfat_entry_set *es, const u16 *uni,
			   unsigned int len)
{
	unsigned int i;

	for (i = 0; i < len; i++) {
		const struct exfat_dentry_name *ne =
			&es->de[2 + i / EXFAT_NAME_PER_ENTRY].name;

		if (le16_to_cpu(ne->name[i % EXFAT_NAME_PER_ENTRY]) != uni[i])
			return true;
	}
	return false;
}

/* Give a new set the creation, modification and access time ts. */
void exfat_es_stamp(struct exfat_entry_set *es, const struct timespec64 *ts)
{
	struct exfat_dentry_file *fe = &es->de[0].file;
	struct exfat_time t;

	exfat_ts_to_time(ts, 0, &t);
	fe->create_time = t.stamp;
	fe->modify_time = t.stamp;
	fe->create_10ms = t.cs;
	fe->modify_10ms = t.cs;
	fe->create_tz = t.tz;
	fe->modify_tz = t.tz;
	exfat_ts_to_time(&(struct timespec64){ ts->tv_sec & ~1LL, 0 }, 0, &t);
	fe->access_time = t.stamp;
	fe->access_tz = t.tz;
}

/*
 * Secondary entries after the name may allocate clusters of their own
 * (Vendor Allocation); they go with the set.  The pending-free list keeps
 * them allocated until the deleted set is durable.
 */
void exfat_es_free_allocs(struct super_block *sb,
			  const struct exfat_entry_set *es)
{
	unsigned int i;

	for (i = 2; i < es->nr; i++) {
		const struct exfat_dentry_generic *g = &es->de[i].generic;

		if (g->type != EXFAT_TYPE_NAME &&
		    g->byte1 & EXFAT_FLAG_ALLOC_POSSIBLE)
			exfat_free_secondary_alloc(sb, g->type,
						   le32_to_cpu(g->first_cluster),
						   le64_to_cpu(g->data_length),
						   g->byte1 & EXFAT_FLAG_NO_FAT_CHAIN);
	}
}

/* Is the File entry of item that of a directory? */
bool exfat_walk_item_is_dir(const struct exfat_walk_item *item)
{
	return item->type == EXFAT_TYPE_FILE &&
	       le16_to_cpu(item->de->file.attr) & EXFAT_ATTR_DIRECTORY;
}

/*
 * Where the data of the set of item (a File set) is: its first cluster,
 * its Stream entry's flags and its DataLength.  -EFSCORRUPTED if the set
 * has no Stream entry.
 */
int exfat_walk_item_data(struct exfat_walk *w,
			 const struct exfat_walk_item *item, u32 *clu,
			 u8 *flags, u64 *size)
{
	const union exfat_dentry *de;

	if (item->nr < 2)
		return -EFSCORRUPTED;
	de = exfat_walk_entry(w, item->eidx + 1);
	if (IS_ERR(de))
		return PTR_ERR(de);
	if (de->generic.type != EXFAT_TYPE_STREAM)
		return -EFSCORRUPTED;
	*clu = le32_to_cpu(de->stream.first_cluster);
	*flags = de->stream.flags;
	*size = le64_to_cpu(de->stream.size);
	return 0;
}

/* Copy the name of a verified set; returns its length in UTF-16 units. */
unsigned int exfat_es_get_name(const struct exfat_entry_set *es, __le16 *name)
{
	unsigned int len = exfat_es_stream(es)->name_len;
	unsigned int i;

	for (i = 0; i < len; i++)
		name[i] = es->de[2 + i / EXFAT_NAME_PER_ENTRY].name.name[i % EXFAT_NAME_PER_ENTRY];
	return len;
}

/* The attributes of a set's File entry. */
u16 exfat_es_attr(const struct exfat_entry_set *es)
{
	return le16_to_cpu(es->de[0].file.attr);
}

void exfat_es_add_attr(struct exfat_entry_set *es, u16 attr)
{
	es->de[0].file.attr |= cpu_to_le16(attr);
}

/* Point a new set's Stream entry at its data. */
void exfat_es_set_stream(struct exfat_entry_set *es, u32 clu, u8 flags,
			 u64 size, u64 valid)
{
	struct exfat_dentry_stream *st = &es->de[1].stream;

	st->flags |= flags;
	st->first_cluster = cpu_to_le32(clu);
	st->size = cpu_to_le64(size);
	st->valid_size = cpu_to_le64(valid);
}

/*
 * Give new_es, a set built with a new name, what the set src (the same
 * file's, read again) says now: the File entry but for SecondaryCount,
 * the Stream entry but for the name's length and hash, and the benign
 * secondaries after the name.  -EINVAL if src's secondaries do not fit.
 */
int exfat_es_take_contents(struct exfat_entry_set *new_es,
			   const struct exfat_entry_set *src)
{
	const struct exfat_dentry_stream *st = exfat_es_stream(src);
	unsigned int nr = new_es->nr;
	unsigned int extra = src->nr - 2 -
			     DIV_ROUND_UP(st->name_len, EXFAT_NAME_PER_ENTRY);

	if (extra != nr - 2 - DIV_ROUND_UP(exfat_es_stream(new_es)->name_len,
					   EXFAT_NAME_PER_ENTRY))
		return -EINVAL;
	new_es->de[0] = src->de[0];
	new_es->de[0].file.secondary_count = nr - 1;
	new_es->de[1].stream = (struct exfat_dentry_stream){
		.type = st->type,
		.flags = st->flags,
		.name_len = new_es->de[1].stream.name_len,
		.name_hash = new_es->de[1].stream.name_hash,
		.valid_size = st->valid_size,
		.first_cluster = st->first_cluster,
		.size = st->size,
	};
	memcpy(&new_es->de[nr - extra], &src->de[src->nr - extra],
	       extra * sizeof(src->de[0]));
	return 0;
}

/*
 * Build a file entry set named uni (len units) in a new buffer: File and
 * Stream entries from tmpl when given (a rename keeps everything but the
 * name, benign secondaries included), else empty ones for attr.
 */
struct exfat_entry_set *exfat_build_set(struct super_block *sb,
					const u16 *uni, unsigned int len,
					const struct exfat_entry_set *tmpl,
					u16 attr)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int nname = DIV_ROUND_UP(len, EXFAT_NAME_PER_ENTRY);
	unsigned int extra = 0, nr, i;
	struct exfat_entry_set *es;
	__le16 *le;

	if (tmpl)
		extra = tmpl->nr - 2 -
			DIV_ROUND_UP(exfat_es_stream(tmpl)->name_len,
				     EXFAT_NAME_PER_ENTRY);
	nr = 2 + nname + extra;
	if (nr > EXFAT_MAX_SET_ENTRIES)
		return ERR_PTR(-ENAMETOOLONG);
	es = kzalloc(struct_size(es, de, nr), GFP_NOFS);
	le = kmalloc_array(len, sizeof(*le), GFP_NOFS);
	if (!es || !le) {
		kfree(es);
		kfree(le);
		return ERR_PTR(-ENOMEM);
	}
	es->nr = nr;
	if (tmpl) {
		es->de[0] = tmpl->de[0];
		es->de[1] = tmpl->de[1];
		memcpy(&es->de[2 + nname], &tmpl->de[tmpl->nr - extra],
		       extra * sizeof(es->de[0]));
	} else {
		es->de[0].file.type = EXFAT_TYPE_FILE;
		es->de[0].file.attr = cpu_to_le16(attr);
		es->de[1].stream.type = EXFAT_TYPE_STREAM;
		es->de[1].stream.flags = EXFAT_FLAG_ALLOC_POSSIBLE;
	}
	es->de[0].file.secondary_count = nr - 1;
	es->de[1].stream.name_len = len;
	for (i = 0; i < len; i++)
		le[i] = cpu_to_le16(uni[i]);
	es->de[1].stream.name_hash = cpu_to_le16(exfat_name_hash(sbi->upcase,
								 le, len));
	for (i = 0; i < nname; i++) {
		unsigned int n = min(len - i * EXFAT_NAME_PER_ENTRY,
				     EXFAT_NAME_PER_ENTRY);

		es->de[2 + i].name.type = EXFAT_TYPE_NAME;
		memcpy(es->de[2 + i].name.name, le + i * EXFAT_NAME_PER_ENTRY,
		       n * sizeof(*le));
	}
	kfree(le);
	return es;
}

/*
 * Find the first primary entry of the given type in dir.  Returns 0 with
 * *eidx set, -ENOENT, or an error.
 */
int exfat_dir_find_type(struct inode *dir, u8 type, u32 *eidx)
{
	struct exfat_walk_item item;
	struct exfat_walk w;
	int ret;

	if (!EXFAT_I(dir)->start_clu)
		return -ENOENT;
	exfat_walk_init(&w, dir, 0);
	while ((ret = exfat_walk_next(&w, &item)) > 0 && item.type != type)
		;
	exfat_walk_release(&w);
	if (ret > 0)
		*eidx = item.eidx;
	return ret > 0 ? 0 : ret ?: -ENOENT;
}
