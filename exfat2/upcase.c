// SPDX-License-Identifier: GPL-2.0
/*
 * File names: the volume's up-case table, conversion between the on-disk
 * UTF-16 and the mount's character set, case-insensitive comparison, and
 * the rules a name must follow before it is written to disk.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "exfat.h"

/* Read len bytes of the table, which starts at cluster clu, into buf. */
static int exfat_read_upcase_data(struct super_block *sb, u32 clu, u32 len,
				  u8 *buf)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u32 sect_size = 1U << sbi->sect_shift;
	u32 clu_sects = 1U << (sbi->clu_shift - sbi->sect_shift);
	u32 pos = 0;

	/*
	 * §7.2.3: the table follows the FAT like any other chain.  Every pass
	 * reads at least one sector of a table of at most 128 KiB, so a loop
	 * in the chain cannot keep us here.
	 */
	while (pos < len) {
		u32 nr = min(clu_sects, DIV_ROUND_UP(len - pos, sect_size));
		sector_t sect;
		u32 i;
		int err;

		if (!exfat_clu_valid(sbi, clu))
			return -EFSCORRUPTED;
		sect = exfat_clu_to_sect(sbi, clu);
		exfat_readahead_sectors(sb, sect, nr);
		for (i = 0; i < nr; i++) {
			struct buffer_head *bh = exfat_read_sector(sb, sect + i);
			u32 n = min(len - pos, sect_size);

			if (IS_ERR(bh))
				return PTR_ERR(bh);
			memcpy(buf + pos, exfat_sector_data(bh), n);
			exfat_put_sector(bh);
			pos += n;
		}
		if (pos < len) {
			err = exfat_get_fat(sb, clu, &clu);
			if (err)
				return err;
		}
	}
	return 0;
}

/**
 * exfat_load_upcase() - read and check the volume's up-case table
 * @sb: the superblock being mounted; sbi->upcase must be NULL
 * @clu: FirstCluster of the Up-case Table directory entry
 * @len: its DataLength
 * @csum: its TableChecksum
 *
 * Fills sbi->upcase with all 65536 mappings.  A table that cannot be used
 * (wrong size, chain leaving the heap, bad checksum, malformed content) is
 * reported once and replaced by the built-in table, with
 * sbi->upcase_builtin set: names are then compared as the specification
 * recommends, which is what nearly every volume uses anyway.
 *
 * Return: 0, or -EIO or -ENOMEM.  The caller decides whether a volume
 * whose table could not be read may still be mounted, and how.
 */
int exfat_load_upcase(struct super_block *sb, u32 clu, u64 len, u32 csum)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	const char *why;
	u8 *buf = NULL;
	int err;

	sbi->upcase_clu = clu;
	sbi->upcase_len = len;
	sbi->upcase_clus = 0;
	if (exfat_clu_valid(sbi, clu) && len && len <= EXFAT_UPCASE_MAX_BYTES)
		sbi->upcase_clus = min_t(u64, exfat_bytes_to_clus(sbi, len),
					 sbi->clu_count -
					 (clu - EXFAT_FIRST_CLUSTER));
	sbi->upcase_builtin = false;
	sbi->upcase = kvmalloc_array(EXFAT_UPCASE_ENTRIES, sizeof(u16),
				     GFP_KERNEL);
	if (!sbi->upcase)
		return -ENOMEM;

	if (!len || len > EXFAT_UPCASE_MAX_BYTES) {
		why = "size";
		goto builtin;
	}
	buf = kvmalloc(len, GFP_KERNEL);
	if (!buf) {
		err = -ENOMEM;
		goto fail;
	}
	err = exfat_read_upcase_data(sb, clu, len, buf);
	if (err == -EIO || err == -ENOMEM)
		goto fail;
	if (err) {
		why = "cluster chain";
		goto builtin;
	}
	if (exfat_upcase_checksum(buf, len) != csum) {
		why = "checksum";
		goto builtin;
	}
	if (exfat_upcase_expand((const __le16 *)buf, len, sbi->upcase)) {
		why = "content";
		goto builtin;
	}
	kvfree(buf);
	return 0;

builtin:
	kvfree(buf);
	exfat_warn(sb, "up-case table at cluster %u (%llu bytes) is unusable (bad %s), using the built-in one",
		   clu, len, why);
	sbi->upcase_builtin = true;
	err = exfat_upcase_expand(exfat_default_upcase,
				  exfat_default_upcase_len, sbi->upcase);
	if (!WARN_ON_ONCE(err))
		return 0;
	exfat_free_upcase(sb);
	return err;

fail:
	kvfree(buf);
	exfat_free_upcase(sb);
	return err;
}

void exfat_free_upcase(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);

	kvfree(sbi->upcase);
	sbi->upcase = NULL;
}

static bool exfat_is_surrogate(u32 c)
{
	return c >= 0xd800 && c <= 0xdfff;
}

static bool exfat_is_high_surrogate(u32 c)
{
	return c >= 0xd800 && c <= 0xdbff;
}

static bool exfat_is_low_surrogate(u32 c)
{
	return c >= 0xdc00 && c <= 0xdfff;
}

/*
 * A surrogate that is not half of a pair, in the three bytes UTF-8 would
 * give it if it were a character (the "WTF-8" convention).
 */
static int exfat_put_lone_surrogate(u32 c, u8 *out)
{
	out[0] = 0xe0 | (c >> 12);
	out[1] = 0x80 | ((c >> 6) & 0x3f);
	out[2] = 0x80 | (c & 0x3f);
	return 3;
}

static int exfat_get_lone_surrogate(const u8 *s, unsigned int len, u32 *c)
{
	/* ED A0..BF 80..BF is U+D800..U+DFFF. */
	if (len < 3 || s[0] != 0xed || (s[1] & 0xe0) != 0xa0 ||
	    (s[2] & 0xc0) != 0x80)
		return -EINVAL;
	*c = 0xd000 | ((s[1] & 0x3f) << 6) | (s[2] & 0x3f);
	return 3;
}

/*
 * One character of uni, which holds n >= 1 units, as UTF-8 into out (room
 * for 4 bytes).  Sets *used to the units it took.
 */
static int exfat_utf16_char_to_utf8(const __le16 *uni, unsigned int n,
				    unsigned int *used, u8 *out)
{
	u32 c = le16_to_cpu(uni[0]);

	*used = 1;
	if (exfat_is_high_surrogate(c) && n > 1 &&
	    exfat_is_low_surrogate(le16_to_cpu(uni[1]))) {
		c = 0x10000 + ((c - 0xd800) << 10) +
		    (le16_to_cpu(uni[1]) - 0xdc00);
		*used = 2;
	} else if (exfat_is_surrogate(c)) {
		return exfat_put_lone_surrogate(c, out);
	}
	return utf32_to_utf8(c, out, 4);
}

/*
 * One character of uni as the mount's character set.  There is no way to
 * spell a character outside the BMP, a lone surrogate or a character the
 * table lacks, so each becomes '?': it can never be part of a name on disk
 * (§7.7.3), so a lookup of what readdir returned finds nothing rather than
 * some other file.
 */
static int exfat_utf16_char_to_nls(const struct nls_table *nls,
				   const __le16 *uni, unsigned int n,
				   unsigned int *used, u8 *out)
{
	u16 c = le16_to_cpu(uni[0]);
	int ret;

	*used = 1;
	if (exfat_is_surrogate(c)) {
		if (exfat_is_high_surrogate(c) && n > 1 &&
		    exfat_is_low_surrogate(le16_to_cpu(uni[1])))
			*used = 2;
		ret = 0;
	} else {
		ret = nls->uni2char(c, out, NLS_MAX_CHARSET_SIZE);
	}
	if (ret <= 0) {
		out[0] = '?';
		ret = 1;
	}
	return ret;
}

/**
 * exfat_utf16_to_nls() - convert a name from disk for the VFS
 * @sb: the superblock, for its character set
 * @uni: the name as on disk, @len units; it ends early at a U+0000
 * @len: length of @uni in UTF-16 units
 * @buf: where the NUL-terminated result goes
 * @buflen: size of @buf; EXFAT_MAX_NLS_NAME always suffices
 *
 * With UTF-8 (sbi->nls == NULL) every name converts without loss and
 * converts back to the same units: surrogate pairs become four-byte
 * sequences, and a surrogate that is not half of a pair, which Windows
 * allows, becomes its three-byte form.  That form is not valid UTF-8, but
 * it keeps such files reachable by name and distinct from each other;
 * exfat_nls_to_utf16() accepts it back.  With any other character set,
 * what the set cannot express becomes '?'.
 *
 * Return: length of the result without its NUL, or -ENAMETOOLONG if it
 * does not fit in @buflen.
 */
int exfat_utf16_to_nls(struct super_block *sb, const __le16 *uni,
		       unsigned int len, char *buf, unsigned int buflen)
{
	const struct nls_table *nls = EXFAT_SB(sb)->nls;
	unsigned int i = 0, pos = 0;

	while (i < len && uni[i]) {
		u8 tmp[NLS_MAX_CHARSET_SIZE];
		unsigned int used;
		int n;

		if (nls)
			n = exfat_utf16_char_to_nls(nls, uni + i, len - i,
						    &used, tmp);
		else
			n = exfat_utf16_char_to_utf8(uni + i, len - i, &used,
						     tmp);
		if (WARN_ON_ONCE(n <= 0))
			return -EINVAL;
		if (n >= buflen - pos)
			return -ENAMETOOLONG;
		memcpy(buf + pos, tmp, n);
		pos += n;
		i += used;
	}
	if (pos >= buflen)
		return -ENAMETOOLONG;
	buf[pos] = '\0';
	return pos;
}

/*
 * Decode one UTF-8 character; also the lone surrogates we hand out (see
 * exfat_put_lone_surrogate()).  Returns the bytes used, or -EINVAL.
 */
int exfat_utf8_to_char(const u8 *s, unsigned int len, u32 *c)
{
	unicode_t u;
	int n;

	n = utf8_to_utf32(s, len, &u);
	if (n > 0) {
		*c = u;
		return n;
	}
	return exfat_get_lone_surrogate(s, len, c);
}

static int exfat_utf8_to_utf16(const u8 *s, unsigned int len, u16 *uni,
			       unsigned int maxlen)
{
	unsigned int i = 0, n = 0;

	while (i < len) {
		u32 c;
		int used = exfat_utf8_to_char(s + i, len - i, &c);

		if (used < 0)
			return -EINVAL;
		/*
		 * A lone high surrogate followed by a lone low one would be
		 * a pair spelled with six bytes instead of four: two
		 * spellings of one name would break dentry hashing.
		 */
		if (exfat_is_low_surrogate(c) && n &&
		    exfat_is_high_surrogate(uni[n - 1]))
			return -EINVAL;
		if (c >= 0x10000) {
			if (maxlen - n < 2)
				return -ENAMETOOLONG;
			c -= 0x10000;
			uni[n++] = 0xd800 | (c >> 10);
			uni[n++] = 0xdc00 | (c & 0x3ff);
		} else {
			if (n == maxlen)
				return -ENAMETOOLONG;
			uni[n++] = c;
		}
		i += used;
	}
	return n;
}

static int exfat_nls_chars_to_utf16(const struct nls_table *nls,
				    const u8 *s, unsigned int len, u16 *uni,
				    unsigned int maxlen)
{
	unsigned int i = 0, n = 0;

	while (i < len) {
		wchar_t wc;
		int used = nls->char2uni(s + i, len - i, &wc);

		if (used <= 0)
			return -EINVAL;
		if (n == maxlen)
			return -ENAMETOOLONG;
		uni[n++] = wc;
		i += used;
	}
	return n;
}

/**
 * exfat_nls_to_utf16() - convert a name from the VFS for disk
 * @sb: the superblock, for its character set
 * @name: the name, without NUL
 * @len: its length in bytes
 * @uni: where the UTF-16 units go, in CPU order
 * @maxlen: room in @uni, in units
 *
 * The inverse of exfat_utf16_to_nls(), lone surrogates included.  The
 * result is not checked against the rules for new names: that is
 * exfat_name_valid(), for the callers that create names.
 *
 * Return: number of units, -EINVAL if @name is not valid in the mount's
 * character set, or -ENAMETOOLONG if it needs more than @maxlen units.
 */
int exfat_nls_to_utf16(struct super_block *sb, const char *name,
		       unsigned int len, u16 *uni, unsigned int maxlen)
{
	const struct nls_table *nls = EXFAT_SB(sb)->nls;

	if (nls)
		return exfat_nls_chars_to_utf16(nls, name, len, uni, maxlen);
	return exfat_utf8_to_utf16(name, len, uni, maxlen);
}

/**
 * exfat_name_cmp() - compare two names the way the volume does
 * @sbi: the mount, for its up-case table
 * @a: a name in CPU order, @alen units
 * @alen: length of @a
 * @b: a name as on disk, @blen units
 * @blen: length of @b
 *
 * Names are equal when their up-cased units are (§7.7).  Surrogates are
 * compared as they are: the table only has meaning for BMP characters.
 *
 * Return: 0 if the names are equal, 1 otherwise.
 */
int exfat_name_cmp(const struct exfat_sb_info *sbi, const u16 *a,
		   unsigned int alen, const __le16 *b, unsigned int blen)
{
	unsigned int i;

	if (alen != blen)
		return 1;
	for (i = 0; i < alen; i++) {
		u16 ca = a[i], cb = le16_to_cpu(b[i]);

		if (ca == cb)
			continue;
		if (exfat_is_surrogate(ca) || exfat_is_surrogate(cb) ||
		    exfat_toupper(sbi, ca) != exfat_toupper(sbi, cb))
			return 1;
	}
	return 0;
}

/**
 * exfat_name_valid() - may this name be written to disk?
 * @uni: the name, in CPU order
 * @len: its length in units
 *
 * §7.7.3: no control characters nor any of " * / : < > ? \ |, and neither
 * "." nor "..".  Their full-width forms are allowed, as Windows does.
 *
 * Return: true if a new entry may carry this name.
 */
bool exfat_name_valid(const u16 *uni, unsigned int len)
{
	unsigned int i;

	if (!len || len > EXFAT_MAX_NAME_LEN)
		return false;
	for (i = 0; i < len; i++) {
		u16 c = uni[i];

		/* c < 0x20 first: strchr() would match c == 0 at the end. */
		if (c < 0x20 || (c < 0x80 && strchr("\"*/:<>?\\|", c)))
			return false;
	}
	if (uni[0] == '.' && (len == 1 || (len == 2 && uni[1] == '.')))
		return false;
	return true;
}

/**
 * exfat_strip_trailing_dots() - length of a name without its trailing dots
 * @name: a name from the VFS
 * @len: its length in bytes
 *
 * Windows drops trailing dots from names it is given, so "foo." and "foo"
 * are one file there.  Unless the keep_last_dots option is set, names from
 * the VFS are cut with this before they are hashed, compared, looked up or
 * created, so that Linux sees the same files.  With keep_last_dots, names
 * are used whole, but creating one that ends in a dot is refused with
 * -EINVAL because Windows could not open it.  A name that is all dots
 * comes back as 0, which callers refuse.
 *
 * Return: @len less the number of trailing '.' bytes.
 */
unsigned int exfat_strip_trailing_dots(const char *name, unsigned int len)
{
	while (len && name[len - 1] == '.')
		len--;
	return len;
}

#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)
#include "upcase_test.c"
#endif
