// SPDX-License-Identifier: GPL-2.0
/*
 * Name lookup and the case-insensitive dentry operations.  Names are
 * compared in UTF-16 through the volume's up-case table, as §7.2 requires.
 */
#include <linux/slab.h>
#include <linux/nls.h>
#include "exfat.h"

/*
 * Decode the next character of a name in the mount's iocharset into a
 * code point.  Returns the bytes consumed, or -EINVAL.
 */
static int exfat_next_char(const struct exfat_sb_info *sbi, const char *s,
			   unsigned int len, unicode_t *cp)
{
	int n;

	if (!sbi->nls) {
		n = utf8_to_utf32(s, len, cp);
		return n > 0 ? n : -EINVAL;
	}
	{
		wchar_t wc;

		n = sbi->nls->char2uni(s, len, &wc);
		if (n <= 0)
			return -EINVAL;
		*cp = wc;
		return n;
	}
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

const struct dentry_operations exfat_dentry_ops = {
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
	__le16 *le;
	int n, i;

	if (!len)
		return -ENOENT;
	n = exfat_nls_to_utf16(sb, qname->name, len, uni, EXFAT_MAX_NAME_LEN);
	if (n <= 0)
		return n ?: -ENOENT;
	le = kmalloc_array(n, sizeof(*le), GFP_NOFS);
	if (!le)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		le[i] = cpu_to_le16(uni[i]);
	*hash = exfat_name_hash(sbi->upcase, le, n);
	kfree(le);
	return n;
}

/*
 * Find the entry set named uni (len units, hash its NameHash) in dir.
 * Returns its verified copy, NULL when absent, or an ERR_PTR.
 */
static struct exfat_entry_set *exfat_find(struct inode *dir, const u16 *uni,
					  unsigned int len, u16 hash)
{
	const struct exfat_sb_info *sbi = EXFAT_SB(dir->i_sb);
	struct exfat_entry_set *es = NULL;
	const union exfat_dentry *de;
	struct exfat_dir_iter it;
	u32 eidx, nr = exfat_dir_entries(dir);
	__le16 *cand;
	int err = 0;

	if (!EXFAT_I(dir)->start_clu)
		return NULL;
	cand = kmalloc_array(EXFAT_MAX_NAME_LEN + EXFAT_NAME_PER_ENTRY,
			     sizeof(*cand), GFP_NOFS);
	if (!cand)
		return ERR_PTR(-ENOMEM);

	exfat_dir_iter_init(&it, dir);
	for (eidx = 0; eidx < nr; ) {
		unsigned int sc, i, got;
		u32 primary = eidx;

		de = exfat_dir_iter_get(&it, eidx);
		if (IS_ERR(de)) {
			err = PTR_ERR(de);
			break;
		}
		if (de->generic.type == EXFAT_TYPE_EOD)
			break;
		if (de->generic.type != EXFAT_TYPE_FILE) {
			eidx++;
			continue;
		}
		sc = de->file.secondary_count;
		eidx += sc + 1;
		if (sc < EXFAT_FILE_MIN_SECONDARY)
			continue;

		de = exfat_dir_iter_get(&it, primary + 1);
		if (IS_ERR(de)) {
			err = PTR_ERR(de);
			break;
		}
		if (de->generic.type != EXFAT_TYPE_STREAM ||
		    de->stream.name_len != len ||
		    le16_to_cpu(de->stream.name_hash) != hash)
			continue;

		/* compare the raw name; the set is verified only on a match */
		for (got = 0, i = 2; got < len && i <= sc; i++, got += EXFAT_NAME_PER_ENTRY) {
			de = exfat_dir_iter_get(&it, primary + i);
			if (IS_ERR(de))
				break;
			memcpy(cand + got, de->name.name, sizeof(de->name.name));
		}
		if (IS_ERR(de)) {
			err = PTR_ERR(de);
			break;
		}
		if (got < len || exfat_name_cmp(sbi, uni, len, cand, len))
			continue;

		err = exfat_get_entry_set(&it, primary, &es);
		break;
	}
	exfat_dir_iter_release(&it);
	kfree(cand);
	return err ? ERR_PTR(err) : es;
}

static struct dentry *exfat_lookup(struct inode *dir, struct dentry *dentry,
				   unsigned int flags)
{
	struct super_block *sb = dir->i_sb;
	struct exfat_entry_set *es;
	struct inode *inode = NULL;
	u16 *uni, hash;
	int len;

	uni = kmalloc_array(EXFAT_MAX_NAME_LEN, sizeof(*uni), GFP_NOFS);
	if (!uni)
		return ERR_PTR(-ENOMEM);
	len = exfat_dname_to_uni(sb, &dentry->d_name, uni, &hash);
	if (len == -ENAMETOOLONG) {
		kfree(uni);
		return ERR_PTR(len);
	}
	if (len <= 0)		/* no such name can be stored */
		goto out;

	es = exfat_find(dir, uni, len, hash);
	if (IS_ERR(es)) {
		kfree(uni);
		return ERR_CAST(es);
	}
	if (es) {
		inode = exfat_iget(sb, dir, es);
		kfree(es);
	}
out:
	kfree(uni);
	return d_splice_alias(inode, dentry);
}

const struct inode_operations exfat_dir_inode_operations = {
	.lookup		= exfat_lookup,
	.getattr	= exfat_getattr,
};
