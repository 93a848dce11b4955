// SPDX-License-Identifier: GPL-2.0
/*
 * Name lookup and the case-insensitive dentry operations.  Names are
 * compared in UTF-16 through the volume's up-case table, as §7.2 requires.
 */
#include <linux/slab.h>
#include <linux/nls.h>
#include <linux/iversion.h>
#include <linux/namei.h>
#include "exfat.h"

/*
 * Decode the next character of a name in the mount's iocharset into a
 * code point.  Returns the bytes consumed, or -EINVAL.  With utf8, a
 * lone surrogate spelled as exfat_utf16_to_nls() spells it counts as a
 * character: readdir hands such names out, so they must be found again.
 */
static int exfat_next_char(const struct exfat_sb_info *sbi, const char *s,
			   unsigned int len, unicode_t *cp)
{
	wchar_t wc;
	u32 c;
	int n;

	if (!sbi->nls) {
		n = exfat_utf8_to_char((const u8 *)s, len, &c);
		if (n > 0)
			*cp = c;
		return n > 0 ? n : -EINVAL;
	}
	n = sbi->nls->char2uni(s, len, &wc);
	if (n <= 0)
		return -EINVAL;
	*cp = wc;
	return n;
}

static unicode_t exfat_fold(const struct exfat_sb_info *sbi, unicode_t cp)
{
	return cp <= 0xffff ? exfat_toupper(sbi, cp) : cp;
}

static unsigned int exfat_dname_len(const struct exfat_sb_info *sbi,
				    const char *name, unsigned int len)
{
	if (sbi->opts.keep_last_dots)
		return len;
	return exfat_strip_trailing_dots(name, len);
}

static int exfat_d_hash(const struct dentry *dentry, struct qstr *qstr)
{
	const struct exfat_sb_info *sbi = EXFAT_SB(dentry->d_sb);
	const char *s = qstr->name;
	unsigned int len = exfat_dname_len(sbi, s, qstr->len);
	unsigned long hash = init_name_hash(dentry);
	unicode_t cp;
	int n;

	while (len) {
		n = exfat_next_char(sbi, s, len, &cp);
		if (n < 0)
			return n;
		hash = partial_name_hash(exfat_fold(sbi, cp), hash);
		s += n;
		len -= n;
	}
	qstr->hash = end_name_hash(hash);
	return 0;
}

static int exfat_d_cmp(const struct dentry *dentry, unsigned int len,
		       const char *str, const struct qstr *name)
{
	const struct exfat_sb_info *sbi = EXFAT_SB(dentry->d_sb);
	unsigned int alen = exfat_dname_len(sbi, name->name, name->len);
	unsigned int blen = exfat_dname_len(sbi, str, len);
	const char *a = name->name, *b = str;
	unicode_t ca, cb;
	int na, nb;

	while (alen && blen) {
		na = exfat_next_char(sbi, a, alen, &ca);
		nb = exfat_next_char(sbi, b, blen, &cb);
		if (na < 0 || nb < 0)
			return 1;
		if (exfat_fold(sbi, ca) != exfat_fold(sbi, cb))
			return 1;
		a += na;
		alen -= na;
		b += nb;
		blen -= nb;
	}
	return alen || blen;
}

/* see exfat_has_mounts() */
#define EXFAT_MOUNT_WALK	16

/*
 * Whether something is mounted on dentry or below it: dropping it
 * (d_invalidate()) would detach those mounts.  Unused dentries below are
 * pruned first (d_invalidate() would prune them too), so that the walk
 * meets only the ones in use and their ancestors; a tree of those wider or
 * deeper than the walk's stack counts as mounted on.  A mount made below
 * while this runs can be missed, as it can by d_invalidate().
 */
static bool exfat_has_mounts(struct dentry *dentry)
{
	struct dentry *stack[EXFAT_MOUNT_WALK];
	struct dentry *d, *child;
	bool found = false;
	int n = 0;

	if (d_mountpoint(dentry))
		return true;
	if (!d_is_dir(dentry))
		return false;
	shrink_dcache_parent(dentry);
	stack[n++] = dget(dentry);
	while (n && !found) {
		d = stack[--n];
		spin_lock(&d->d_lock);
		hlist_for_each_entry(child, &d->d_children, d_sib) {
			if (d_mountpoint(child)) {
				found = true;
				break;
			}
			spin_lock_nested(&child->d_lock, DENTRY_D_LOCK_NESTED);
			if (!hlist_empty(&child->d_children)) {
				if (n < EXFAT_MOUNT_WALK)
					stack[n++] = dget_dlock(child);
				else
					found = true;
			}
			spin_unlock(&child->d_lock);
			if (found)
				break;
		}
		spin_unlock(&d->d_lock);
		dput(d);
	}
	while (n)
		dput(stack[--n]);
	return found;
}

/*
 * A negative dentry is only as good as the directory it was looked up in:
 * names match case-insensitively, so a create under another case must not
 * reuse it, and a change to the directory may have filled it.
 */
static int exfat_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	if (flags & LOOKUP_RCU)
		return -ECHILD;
	/*
	 * A rename target is looked up again, so that a name differing from
	 * the file's only in case reaches exfat_lookup(), which lets the
	 * rename change the case (see there).  Not if that would detach
	 * mounts: a mount point then stays the target, which the VFS
	 * refuses (EBUSY), and the case of a directory with mounts below
	 * does not change.
	 */
	if (d_really_is_positive(dentry))
		return !(flags & LOOKUP_RENAME_TARGET) ||
			exfat_has_mounts(dentry);
	if (!flags || flags & (LOOKUP_CREATE | LOOKUP_RENAME_TARGET))
		return 0;
	return inode_eq_iversion(d_inode(dentry->d_parent),
				 (u64)(unsigned long)dentry->d_fsdata);
}

const struct dentry_operations exfat_dentry_ops = {
	.d_revalidate	= exfat_d_revalidate,
	.d_hash		= exfat_d_hash,
	.d_compare	= exfat_d_cmp,
};

/*
 * Convert a name from the VFS into UTF-16 units (uni, in CPU order) and
 * its NameHash.  Returns its length in units.
 */
int exfat_dname_to_uni(struct super_block *sb, const struct qstr *qname,
		       u16 *uni, u16 *hash)
{
	const struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int len = exfat_dname_len(sbi, qname->name, qname->len);
	int n;

	if (!len)
		return -ENOENT;
	n = exfat_nls_to_utf16(sb, qname->name, len, uni, EXFAT_MAX_NAME_LEN);
	if (n <= 0)
		return n ?: -ENOENT;
	*hash = exfat_name_hash_cpu(sbi->upcase, uni, n);
	return n;
}

/* A name looked up and room for a candidate's (exfat_find()). */
struct exfat_lookup_buf {
	u16 uni[EXFAT_MAX_NAME_LEN];
	__le16 cand[EXFAT_MAX_NAME_LEN + EXFAT_NAME_PER_ENTRY];
};

/*
 * Find the entry set named uni (len units, hash its NameHash) in dir:
 * through the directory's index, or when it cannot answer, by a scan from
 * the directory's find_hint to its end, then from its start to the hint.
 * Returns its verified copy, NULL when absent, or an ERR_PTR.
 */
static struct exfat_entry_set *exfat_find(struct inode *dir,
					  struct exfat_lookup_buf *buf,
					  unsigned int len, u16 hash)
{
	const u16 *uni = buf->uni;
	__le16 *cand = buf->cand;
	struct exfat_inode_info *ei = EXFAT_I(dir);
	u32 start = min(READ_ONCE(ei->find_hint), exfat_dir_entries(dir));
	struct exfat_entry_set *es = NULL;
	struct exfat_walk_item item;
	struct exfat_walk w;
	int pass, ret = 0;

	if (!ei->start_clu)
		return NULL;
	ret = exfat_index_find(dir, uni, len, hash, cand, &es);
	if (ret != -ESTALE)
		goto out;
	ret = 0;
	for (pass = 0; pass < 2 && !ret && (!pass || start); pass++) {
		exfat_walk_init(&w, dir, pass ? 0 : start);
		if (pass)
			exfat_walk_limit(&w, start);
		while ((ret = exfat_walk_next(&w, &item)) > 0) {
			if (item.type != EXFAT_TYPE_FILE || !item.whole)
				continue;
			ret = exfat_walk_item_named(&w, &item, uni, len, hash, cand);
			if (ret > 0)
				ret = exfat_get_entry_set(&w.it, item.eidx, &es) ?: 1;
			if (ret)
				break;
		}
		exfat_walk_release(&w);
	}
out:
	if (ret < 0)
		return ERR_PTR(ret);
	if (es)
		WRITE_ONCE(ei->find_hint, es->eidx + es->nr);
	return es;
}

/*
 * A directory whose first cluster is that of the directory holding it, or
 * of an ancestor, would make the tree a loop: refuse it.
 */
static bool exfat_dir_loops(struct dentry *parent, struct inode *inode)
{
	u32 clu = EXFAT_I(inode)->start_clu;
	struct dentry *p = dget(parent), *up;
	bool loops = false;

	for (;;) {
		if (EXFAT_I(d_inode(p))->start_clu == clu) {
			loops = true;
			break;
		}
		if (IS_ROOT(p))
			break;
		up = dget_parent(p);
		dput(p);
		p = up;
	}
	dput(p);
	return loops;
}

static struct dentry *exfat_lookup(struct inode *dir, struct dentry *dentry,
				   unsigned int flags)
{
	struct super_block *sb = dir->i_sb;
	struct exfat_entry_set *es;
	struct inode *inode = NULL;
	struct exfat_lookup_buf *buf;
	bool stale = false;
	u16 hash;
	int len;

	if (unlikely(exfat_forced_shutdown(sb)))
		return ERR_PTR(-EIO);
	buf = kmalloc(sizeof(*buf), GFP_NOFS);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	len = exfat_dname_to_uni(sb, &dentry->d_name, buf->uni, &hash);
	if (len == -ENAMETOOLONG) {
		kfree(buf);
		return ERR_PTR(len);
	}
	if (len <= 0)		/* no such name can be stored */
		goto out;

	es = exfat_find(dir, buf, len, hash);
	if (IS_ERR(es)) {
		kfree(buf);
		return ERR_CAST(es);
	}
	if (es && flags & LOOKUP_RENAME_TARGET &&
	    exfat_es_name_differs(es, buf->uni, len)) {
		stale = true;
		/*
		 * "abc" renamed to "ABC": a negative target lets the VFS call
		 * ->rename, which rewrites the name in place (or, if "abc" is
		 * another file, replaces it there).
		 */
		kfree(es);
		es = NULL;
	}
	if (es) {
		inode = exfat_iget(sb, dir, es);
		kfree(es);
		if (!IS_ERR(inode) && S_ISDIR(inode->i_mode) &&
		    EXFAT_I(inode)->start_clu &&
		    exfat_dir_loops(dentry->d_parent, inode)) {
			exfat_fs_error(sb, "directory %lu: subdirectory at %u loops to an ancestor",
				       dir->i_ino, EXFAT_I(inode)->start_clu);
			iput(inode);
			inode = ERR_PTR(-EFSCORRUPTED);
		}
	}
out:
	kfree(buf);
	/* a stale negative dentry is looked up again at its next use */
	if (!inode)
		dentry->d_fsdata = stale ? (void *)ULONG_MAX :
			(void *)(unsigned long)inode_query_iversion(dir);
	return d_splice_alias(inode, dentry);
}

/*
 * A name from the VFS as a new entry may carry it: converted, checked
 * against the characters exFAT forbids, and hashed.
 */
static int exfat_new_name(struct super_block *sb, const struct qstr *q,
			  u16 *uni)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u16 hash;
	int len;

	if (sbi->opts.keep_last_dots && q->len && q->name[q->len - 1] == '.')
		return -EINVAL;
	len = exfat_dname_to_uni(sb, q, uni, &hash);
	if (len == -ENOENT)
		return -EINVAL;
	if (len < 0)
		return len;
	if (!exfat_name_valid(uni, len))
		return -EINVAL;
	return len;
}

/*
 * Write es into dir and return its inode.  On failure *kept says whether
 * the set may still be in dir, so that what it names must not be freed.
 */
static struct inode *exfat_add_set(struct inode *dir,
				   struct exfat_entry_set *es, bool *kept)
{
	struct exfat_dir_iter it;
	struct inode *inode;
	int err;

	*kept = false;
	err = exfat_alloc_slots(dir, es->nr, 0, 0, &es->eidx);
	if (err)
		return ERR_PTR(err);
	exfat_dir_iter_init(&it, dir);
	it.sync = IS_DIRSYNC(dir);
	err = exfat_put_entry_set(&it, es);
	err = exfat_dir_iter_release(&it) ?: err;
	if (err) {
		*kept = true;
		return ERR_PTR(err);
	}
	inode_inc_iversion(dir);
	inode = exfat_iget(dir->i_sb, dir, es);
	if (!IS_ERR(inode))
		return inode;

	/* no inode (memory): take the set out again */
	exfat_dir_iter_init(&it, dir);
	it.sync = IS_DIRSYNC(dir);
	err = exfat_delete_entries(&it, es->eidx, es->nr);
	*kept = exfat_dir_iter_release(&it) || err;
	return inode;
}

static void exfat_dir_changed(struct inode *dir)
{
	inode_set_mtime_to_ts(dir, inode_set_ctime_current(dir));
	inode_inc_iversion(dir);
	if (IS_DIRSYNC(dir))
		__exfat_write_inode(dir, true);
	else
		mark_inode_dirty(dir);
}

static int exfat_create_common(struct inode *dir, struct dentry *dentry,
			       bool is_dir)
{
	struct super_block *sb = dir->i_sb;
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	struct exfat_entry_set *es;
	struct timespec64 ts = current_time(dir);
	struct inode *inode;
	bool kept;
	u32 clu = 0;
	u16 *uni;
	int len, err;

	if (unlikely(exfat_forced_shutdown(sb)))
		return -EIO;
	uni = kmalloc_array(EXFAT_MAX_NAME_LEN, sizeof(*uni), GFP_NOFS);
	if (!uni)
		return -ENOMEM;
	len = exfat_new_name(sb, &dentry->d_name, uni);
	if (len < 0) {
		err = len;
		goto out_uni;
	}
	es = exfat_build_set(sb, uni, len, NULL,
			     is_dir ? EXFAT_ATTR_DIRECTORY : EXFAT_ATTR_ARCHIVE);
	if (IS_ERR(es)) {
		err = PTR_ERR(es);
		goto out_uni;
	}
	exfat_es_stamp(es, &ts);

	/* a new directory gets its first cluster, zeroed, before its entry */
	if (is_dir && !sbi->opts.zero_size_dir) {
		err = exfat_alloc_dir_cluster(sb, &clu);
		if (err)
			goto out_es;
		exfat_es_set_stream(es, clu, EXFAT_FLAG_NO_FAT_CHAIN,
				    sbi->clu_size, sbi->clu_size);
	}

	inode = exfat_add_set(dir, es, &kept);
	if (IS_ERR(inode)) {
		err = PTR_ERR(inode);
		/* a set that may have reached the disk keeps its cluster */
		if (clu && !kept)
			exfat_free_dir_cluster(sb, clu);
		goto out_es;
	}
	err = 0;
	if (is_dir)
		inc_nlink(dir);
	exfat_dir_changed(dir);
	d_instantiate(dentry, inode);
out_es:
	kfree(es);
out_uni:
	kfree(uni);
	return err;
}

static int exfat_create(struct mnt_idmap *idmap, struct inode *dir,
			struct dentry *dentry, umode_t mode, bool excl)
{
	return exfat_create_common(dir, dentry, false);
}

static int exfat_mkdir(struct mnt_idmap *idmap, struct inode *dir,
		       struct dentry *dentry, umode_t mode)
{
	return exfat_create_common(dir, dentry, true);
}

/* Does directory inode hold any file? */
static int exfat_dir_empty(struct inode *inode)
{
	u32 eidx;
	int err = exfat_dir_find_type(inode, EXFAT_TYPE_FILE, &eidx);

	if (err == -ENOENT)
		return 0;
	return err ?: -ENOTEMPTY;
}

/*
 * Remove the entry set of inode from dir; the inode keeps its clusters
 * (freed when it is evicted), what other secondaries allocate is freed.
 * *nr (if given) is how many entries the set had.
 */
static int exfat_remove_set(struct inode *dir, struct inode *inode,
			    unsigned int *nr)
{
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_entry_set *es = NULL;
	struct exfat_dir_iter it;
	int err;

	mutex_lock(&ei->pos_lock);
	exfat_dir_iter_init(&it, dir);
	it.sync = IS_DIRSYNC(dir);
	err = exfat_get_entry_set(&it, ei->eidx, &es);
	if (!err)
		err = exfat_delete_entries(&it, ei->eidx, es->nr);
	err = exfat_dir_iter_release(&it) ?: err;
	if (!err)
		exfat_es_free_allocs(dir->i_sb, es);
	if (!err && nr)
		*nr = es->nr;
	kfree(es);
	if (!err) {
		/* write_inode has nothing to write; the slots may be reused */
		ei->deleted = true;
		remove_inode_hash(inode);
	}
	mutex_unlock(&ei->pos_lock);
	return err;
}

static int exfat_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	int err;

	if (unlikely(exfat_forced_shutdown(dir->i_sb)))
		return -EIO;
	err = exfat_remove_set(dir, inode, NULL);
	if (err)
		return err;
	exfat_dir_changed(dir);
	inode_set_ctime_current(inode);
	clear_nlink(inode);
	return 0;
}

static int exfat_rmdir(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	int err;

	if (unlikely(exfat_forced_shutdown(dir->i_sb)))
		return -EIO;
	err = exfat_dir_empty(inode);
	if (err)
		return err;
	err = exfat_remove_set(dir, inode, NULL);
	if (err)
		return err;
	drop_nlink(dir);
	exfat_dir_changed(dir);
	clear_nlink(inode);
	return 0;
}

/*
 * Where new_es goes in dir: over old_es when it fits and old_es lies in
 * one sector of dir, else in that sector when it has room, so that the
 * move is one sector write (see exfat_move_set()), else in free slots
 * anywhere, never over the old set or the busy_nr slots from busy.  A set
 * that other implementations left across a sector boundary is never
 * rewritten in place: a crash between its two sectors would tear it.
 * Slots are found before any inode's pos_lock is taken since growing dir
 * writes dir's own entry set.
 */
static int exfat_place_set(struct inode *dir, struct exfat_entry_set *new_es,
			   const struct exfat_entry_set *old_es, u32 busy,
			   unsigned int busy_nr)
{
	struct super_block *sb = dir->i_sb;
	int err;

	if (old_es && new_es->nr <= old_es->nr &&
	    exfat_same_sector(sb, old_es->eidx, old_es->nr, old_es->eidx,
			      old_es->nr)) {
		new_es->eidx = old_es->eidx;
		return 0;
	}
	if (old_es) {
		err = exfat_find_slots_near(dir, new_es->nr, old_es->eidx,
					    old_es->nr, busy, busy_nr,
					    &new_es->eidx);
		if (err != -ENOSPC)
			return err;
	}
	return exfat_alloc_slots(dir, new_es->nr, busy, busy_nr,
				 &new_es->eidx);
}

/* Do the two sets share an entry? */
static bool exfat_sets_overlap(const struct exfat_entry_set *a,
			       const struct exfat_entry_set *b)
{
	return a->eidx < b->eidx + b->nr && b->eidx < a->eidx + a->nr;
}

/*
 * Write new_es at its place in dir, and remove old_es from old_dir but
 * for the slots new_es took.  The caller holds the moving inode's
 * pos_lock.
 *
 * Within one sector of one directory both changes are a single sector
 * write, left to writeback like any entry update: a crash leaves the old
 * set or the new one.  A set moving elsewhere is durable before the old
 * one is removed: left to writeback, the removal could land first, and a
 * crash between the two would leave the file without any name.  It must
 * be reachable too: finding its slots may have grown dir, so all dirty
 * metadata (the new cluster's FAT link, a subdirectory's new size) is
 * written first, then the set with a cache flush before it and FUA, then
 * at once the removal: the file has two names only between those two
 * writes (fsck.exfat reports the two as sharing clusters).
 */
static int exfat_move_set(struct inode *dir, struct exfat_entry_set *new_es,
			  struct inode *old_dir,
			  const struct exfat_entry_set *old_es)
{
	bool one_write = dir == old_dir &&
			 exfat_same_sector(dir->i_sb, new_es->eidx, new_es->nr,
					   old_es->eidx, old_es->nr);
	struct exfat_dir_iter it;
	int err;

	if (one_write) {
		exfat_dir_iter_init(&it, dir);
		it.sync = IS_DIRSYNC(dir);
		err = exfat_replace_entry_set(&it, new_es, old_es->eidx,
					      old_es->nr);
		return exfat_dir_iter_release(&it) ?: err;
	}
	/* exfat_place_set() never overlaps sets it cannot replace at once */
	if (WARN_ON_ONCE(dir == old_dir && exfat_sets_overlap(new_es, old_es)))
		return -EINVAL;

	err = exfat_meta_write_all(dir->i_sb);
	if (err)
		return err;
	exfat_dir_iter_init(&it, dir);
	it.sync = true;
	it.fua = true;
	err = exfat_put_entry_set(&it, new_es);
	err = exfat_dir_iter_release(&it) ?: err;
	if (err)
		return err;

	exfat_dir_iter_init(&it, old_dir);
	it.sync = true;
	err = exfat_delete_entries(&it, old_es->eidx, old_es->nr);
	return exfat_dir_iter_release(&it) ?: err;
}

/*
 * The verified set of inode in dir, rebuilt with dentry's name.  *old is
 * the set as read now; it gives the size and place of the new one, and
 * exfat_refresh_set() takes its contents again under the pos_lock.
 */
static struct exfat_entry_set *exfat_renamed_set(struct inode *dir,
						 struct inode *inode,
						 struct dentry *dentry,
						 struct exfat_entry_set **old)
{
	struct exfat_entry_set *es;
	struct exfat_dir_iter it;
	u16 *uni;
	int len, err;

	*old = NULL;
	uni = kmalloc_array(EXFAT_MAX_NAME_LEN, sizeof(*uni), GFP_NOFS);
	if (!uni)
		return ERR_PTR(-ENOMEM);
	len = exfat_new_name(dir->i_sb, &dentry->d_name, uni);
	exfat_dir_iter_init(&it, dir);
	err = len < 0 ? len : exfat_get_entry_set(&it, EXFAT_I(inode)->eidx, old);
	exfat_dir_iter_release(&it);
	es = err ? ERR_PTR(err) : exfat_build_set(dir->i_sb, uni, len, *old, 0);
	kfree(uni);
	if (IS_ERR(es) && !err) {
		kfree(*old);
		*old = NULL;
	}
	return es;
}

/*
 * With the moving inode's pos_lock held: read its set in dir again and
 * give new_es (built from an earlier copy, with the new name) what the
 * set says now.  A write_inode between the two reads (writeback raising
 * ValidDataLength, a directory's growth) would otherwise be undone.  The
 * fresh copy replaces *old.
 */
static int exfat_refresh_set(struct inode *dir, struct inode *inode,
			     struct exfat_entry_set *new_es,
			     struct exfat_entry_set **old)
{
	struct exfat_entry_set *es;
	struct exfat_dir_iter it;
	int err;

	lockdep_assert_held(&EXFAT_I(inode)->pos_lock);
	exfat_dir_iter_init(&it, dir);
	err = exfat_get_entry_set(&it, EXFAT_I(inode)->eidx, &es);
	exfat_dir_iter_release(&it);
	if (err)
		return err;
	/* only a rename changes the name and secondaries: i_rwsem held */
	err = es->nr != (*old)->nr ? -EINVAL :
	      exfat_es_take_contents(new_es, es);
	if (WARN_ON_ONCE(err)) {
		kfree(es);
		return err;
	}
	if (!S_ISDIR(inode->i_mode))
		/* as Windows: a renamed file needs archiving */
		exfat_es_add_attr(new_es, EXFAT_ATTR_ARCHIVE);
	kfree(*old);
	*old = es;
	return 0;
}

static void exfat_renamed(struct inode *inode, struct inode *dir, u32 eidx)
{
	remove_inode_hash(inode);
	exfat_set_position(inode, dir, eidx);
	if (!S_ISDIR(inode->i_mode))
		EXFAT_I(inode)->attr |= EXFAT_ATTR_ARCHIVE;
	inode_set_ctime_current(inode);
	mark_inode_dirty(inode);
}

/*
 * RENAME_EXCHANGE: each name keeps its slots when it can and takes the
 * other file's entries.  Both inodes then live where the other one was.
 * The two sets are written one after the other with no barrier between
 * them: unless both are in one sector write, a crash between the two
 * leaves one file without a name (write-ordering rule 5 in exfat.h).
 */
static int exfat_exchange(struct inode *adir, struct dentry *adentry,
			  struct inode *bdir, struct dentry *bdentry)
{
	struct inode *a = d_inode(adentry), *b = d_inode(bdentry);
	struct exfat_entry_set *aold = NULL, *bold = NULL, *anew, *bnew = NULL;
	int err;

	/* the set for name a describes b, and the other way round */
	anew = exfat_renamed_set(bdir, b, adentry, &bold);
	if (IS_ERR(anew))
		return PTR_ERR(anew);
	bnew = exfat_renamed_set(adir, a, bdentry, &aold);
	if (IS_ERR(bnew)) {
		err = PTR_ERR(bnew);
		bnew = NULL;
		goto out;
	}
	/*
	 * Both places are chosen before either set is written, the second
	 * around the slots the first took when both are in one directory.
	 */
	err = exfat_place_set(adir, anew, aold, 0, 0);
	if (!err)
		err = exfat_place_set(bdir, bnew, bold, anew->eidx,
				      adir == bdir ? anew->nr : 0);
	if (err)
		goto out;

	mutex_lock(&EXFAT_I(a)->pos_lock);
	mutex_lock_nested(&EXFAT_I(b)->pos_lock, SINGLE_DEPTH_NESTING);
	err = exfat_refresh_set(bdir, b, anew, &bold) ?:
	      exfat_refresh_set(adir, a, bnew, &aold);
	/* each old set is overwritten in place or removed with the move */
	if (!err)
		err = exfat_move_set(adir, anew, adir, aold);
	if (!err)
		err = exfat_move_set(bdir, bnew, bdir, bold);
	if (!err) {
		exfat_renamed(b, adir, anew->eidx);
		exfat_renamed(a, bdir, bnew->eidx);
	}
	mutex_unlock(&EXFAT_I(b)->pos_lock);
	mutex_unlock(&EXFAT_I(a)->pos_lock);
	if (err)
		goto out;

	if (adir != bdir && S_ISDIR(a->i_mode) != S_ISDIR(b->i_mode)) {
		if (S_ISDIR(a->i_mode)) {
			drop_nlink(adir);
			inc_nlink(bdir);
		} else {
			inc_nlink(adir);
			drop_nlink(bdir);
		}
	}
	exfat_dir_changed(adir);
	if (bdir != adir)
		exfat_dir_changed(bdir);
out:
	kfree(anew);
	kfree(bnew);
	kfree(aold);
	kfree(bold);
	return err;
}

/*
 * The file other than inode whose name in dir equals dentry's name but for
 * case, or NULL.
 */
static struct inode *exfat_case_variant(struct inode *dir,
					struct dentry *dentry,
					struct inode *inode)
{
	struct exfat_lookup_buf *buf;
	struct exfat_entry_set *es;
	struct inode *other;
	u16 hash;
	int len;

	buf = kmalloc(sizeof(*buf), GFP_NOFS);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	len = exfat_dname_to_uni(dir->i_sb, &dentry->d_name, buf->uni, &hash);
	es = len > 0 ? exfat_find(dir, buf, len, hash) : NULL;
	kfree(buf);
	if (IS_ERR_OR_NULL(es))
		return ERR_CAST(es);
	if (EXFAT_I(inode)->dir_clu == EXFAT_I(dir)->start_clu &&
	    EXFAT_I(inode)->eidx == es->eidx) {
		kfree(es);
		return NULL;
	}
	other = exfat_iget(dir->i_sb, dir, es);
	kfree(es);
	return other;
}

/*
 * Whether directory t is d's or one of its ancestors'.  Only for a rename
 * across directories: the VFS holds s_vfs_rename_mutex, so that the tree
 * above d cannot change.
 */
static bool exfat_is_ancestor(struct inode *t, struct dentry *d)
{
	for (; !IS_ROOT(d); d = d->d_parent)
		if (d_inode(d) == t)
			return true;
	return d_inode(d) == t;
}

/*
 * The file a rename of old (inode, in old_dir) onto dentry in dir replaces,
 * or NULL: dentry's inode, or one whose name equals dentry's but for case
 * (see exfat_lookup), which the caller puts (*put).  A directory replaced
 * must be empty, and a file found by case of the same kind as inode (the
 * VFS checked dentry's).
 */
static int exfat_rename_target(struct inode *dir, struct dentry *dentry,
			       struct inode *old_dir, struct dentry *old,
			       struct inode **target, struct inode **put,
			       bool *locked)
{
	struct inode *inode = d_inode(old);
	struct inode *t = d_inode(dentry);

	*put = NULL;
	*locked = false;
	if (!t) {
		t = exfat_case_variant(dir, dentry, inode);
		if (IS_ERR(t)) {
			*target = NULL;
			return PTR_ERR(t);
		}
		*put = t;
		*target = t;
		if (t && S_ISDIR(t->i_mode) != S_ISDIR(inode->i_mode))
			return S_ISDIR(t->i_mode) ? -EISDIR : -ENOTDIR;
		if (!t || !S_ISDIR(t->i_mode))
			return 0;
		/*
		 * The VFS does not know this target: it neither checked
		 * that it is not an ancestor of old (it is then not empty,
		 * and locked, or above a locked directory) nor locked it.
		 * Lock it as vfs_rename() would, so that no create in it
		 * runs between the check that it is empty and its removal;
		 * exfat_rename() marks it dead and unlocks it (*locked).
		 */
		if (old_dir != dir && exfat_is_ancestor(t, old->d_parent))
			return -ENOTEMPTY;
		inode_lock(t);
		*locked = true;
	}
	*target = t;
	return t && S_ISDIR(t->i_mode) ? exfat_dir_empty(t) : 0;
}

/*
 * Remove the set of target, which the rename of old_es in old_dir to
 * new_es in new_dir replaces.  If the move is then one sector write left
 * to writeback and the removal lies in another sector, the removal is
 * written first: a crash must not keep two sets of the name.
 */
static int exfat_rename_drop_target(struct inode *new_dir,
				    struct inode *target, bool by_case,
				    struct inode *old_dir,
				    const struct exfat_entry_set *new_es,
				    const struct exfat_entry_set *old_es)
{
	struct super_block *sb = new_dir->i_sb;
	u32 eidx = EXFAT_I(target)->eidx;
	unsigned int nr = 0;
	int err;

	err = exfat_remove_set(new_dir, target, &nr);
	if (err)
		return err;
	if (S_ISDIR(target->i_mode))
		drop_nlink(new_dir);
	clear_nlink(target);
	inode_set_ctime_current(target);
	if (by_case)
		d_prune_aliases(target);
	if (nr && old_dir == new_dir &&
	    exfat_same_sector(sb, new_es->eidx, new_es->nr, old_es->eidx,
			      old_es->nr) &&
	    !exfat_same_sector(sb, eidx, nr, old_es->eidx, old_es->nr))
		return exfat_sync_entry(new_dir, eidx);
	return 0;
}

/*
 * Rename: the new set's place is found first, then a replaced file's set
 * is removed (two sets of one name must never coexist on disk), then the
 * new set is written and the old one removed: the file always has a
 * name.  When all three are in one sector, they are one write.
 */
static int exfat_rename(struct mnt_idmap *idmap, struct inode *old_dir,
			struct dentry *old_dentry, struct inode *new_dir,
			struct dentry *new_dentry, unsigned int flags)
{
	struct inode *inode = d_inode(old_dentry);
	struct exfat_inode_info *ei = EXFAT_I(inode);
	struct exfat_entry_set *old_es = NULL, *new_es = NULL;
	struct inode *target, *put_target;
	bool target_locked;
	int err;

	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if (unlikely(exfat_forced_shutdown(old_dir->i_sb)))
		return -EIO;
	if (flags & RENAME_EXCHANGE)
		return exfat_exchange(old_dir, old_dentry, new_dir, new_dentry);

	err = exfat_rename_target(new_dir, new_dentry, old_dir, old_dentry,
				  &target, &put_target, &target_locked);
	if (err)
		goto out;
	if (put_target && flags & RENAME_NOREPLACE) {
		err = -EEXIST;
		goto out;
	}
	new_es = exfat_renamed_set(old_dir, inode, new_dentry, &old_es);
	if (IS_ERR(new_es)) {
		err = PTR_ERR(new_es);
		new_es = NULL;
		goto out;
	}
	/*
	 * The new set's place is found while a replaced file still has its
	 * name: a failure here (no room to grow the directory, an I/O error)
	 * leaves both files as they were.
	 */
	err = exfat_place_set(new_dir, new_es, old_dir == new_dir ? old_es : NULL,
			      0, 0);
	if (!err && target)
		err = exfat_rename_drop_target(new_dir, target, !!put_target,
					       old_dir, new_es, old_es);
	if (err)
		goto out;
	/* as vfs_rename() does: nothing is created in it any more */
	if (target_locked)
		put_target->i_flags |= S_DEAD;
	mutex_lock(&ei->pos_lock);
	err = exfat_refresh_set(old_dir, inode, new_es, &old_es);
	if (!err)
		err = exfat_move_set(new_dir, new_es, old_dir, old_es);
	if (!err)
		exfat_renamed(inode, new_dir, new_es->eidx);
	mutex_unlock(&ei->pos_lock);
	if (err)
		goto out;

	if (S_ISDIR(inode->i_mode) && old_dir != new_dir) {
		drop_nlink(old_dir);
		inc_nlink(new_dir);
	}
	exfat_dir_changed(old_dir);
	if (new_dir != old_dir)
		exfat_dir_changed(new_dir);
out:
	if (target_locked)
		inode_unlock(put_target);
	iput(put_target);
	kfree(new_es);
	kfree(old_es);
	return err;
}

const struct inode_operations exfat_dir_inode_operations = {
	.create		= exfat_create,
	.lookup		= exfat_lookup,
	.unlink		= exfat_unlink,
	.mkdir		= exfat_mkdir,
	.rmdir		= exfat_rmdir,
	.rename		= exfat_rename,
	.setattr	= exfat_setattr,
	.getattr	= exfat_getattr,
	.update_time	= exfat_update_time,
	.fileattr_get	= exfat_fileattr_get,
	.fileattr_set	= exfat_fileattr_set,
};
