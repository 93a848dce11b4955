// SPDX-License-Identifier: GPL-2.0
/*
 * Pure functions over on-disk structures: the boot sector and entry set
 * verifiers, the three checksums, the name hash, the search for free
 * clusters in the allocation bitmap, up-case table expansion and timestamp
 * conversion.  Nothing here does I/O, takes a lock or looks
 * at a super_block, so all of it is unit tested on plain buffers
 * (format_test.c).  Section numbers refer to the exFAT specification.
 */
#include <linux/bitfield.h>
#include <linux/bitops.h>
#include <linux/hash.h>
#include <linux/minmax.h>
#include <linux/string.h>
#include <linux/time.h>
#include "exfat.h"

/* §3.1.1 */
static const u8 exfat_jump_boot[] = { 0xeb, 0x76, 0x90 };

/**
 * exfat_verify_boot_sector() - check a Main or Backup Boot Sector (§3.1)
 * @bs: the sector
 * @dev_sectors: size of the device in sectors of 2^BytesPerSectorShift
 *	bytes, or 0 if unknown
 *
 * Every field an implementation depends on is checked against the ranges
 * of §3.1 and against the others, so that the geometry derived from a
 * sector that passes keeps every region inside the volume, and the volume
 * inside the device.  The boot checksum is not part of this.
 *
 * Return: NULL if the sector is usable, else the name of the first field
 * found wrong, for a message.
 */
const char *exfat_verify_boot_sector(const struct exfat_boot_sector *bs,
				     u64 dev_sectors)
{
	unsigned int sect_shift = bs->sector_shift;
	unsigned int clu_shift = bs->cluster_shift;
	u64 vol_len = le64_to_cpu(bs->vol_length);
	/*
	 * Widened once here: every sum and product below then stays far
	 * below 2^64 (at most 2^32 sectors plus 2^32 clusters of 2^16
	 * sectors), so none of them can wrap.
	 */
	u64 fat_off = le32_to_cpu(bs->fat_offset);
	u64 fat_len = le32_to_cpu(bs->fat_length);
	u64 heap_off = le32_to_cpu(bs->clu_heap_offset);
	u64 clu_count = le32_to_cpu(bs->clu_count);
	u32 root = le32_to_cpu(bs->root_cluster);

	/* §3.1.20: no other field means anything without the signature. */
	if (le16_to_cpu(bs->boot_signature) != EXFAT_BOOT_SIGNATURE)
		return "BootSignature";
	if (memcmp(bs->jump_boot, exfat_jump_boot, sizeof(exfat_jump_boot)))
		return "JumpBoot";
	if (memcmp(bs->fs_name, EXFAT_BOOT_FS_NAME, EXFAT_BOOT_FS_NAME_LEN))
		return "FileSystemName";
	/* §3.1.3: where a FAT12/16/32 volume has its BIOS parameter block. */
	if (memchr_inv(bs->must_be_zero, 0, sizeof(bs->must_be_zero)))
		return "MustBeZero";
	if (sect_shift < EXFAT_MIN_SECTOR_SHIFT ||
	    sect_shift > EXFAT_MAX_SECTOR_SHIFT)
		return "BytesPerSectorShift";
	if (clu_shift > EXFAT_MAX_CLUSTER_SHIFT - sect_shift)
		return "SectorsPerClusterShift";
	if (bs->num_fats != 1 && bs->num_fats != 2)
		return "NumberOfFats";
	/* §3.1.12: any minor revision of major 1 is ours, nothing else. */
	if (le16_to_cpu(bs->fs_revision) >> 8 != EXFAT_REVISION_MAJOR)
		return "FileSystemRevision";
	/* §3.1.13.1: the second FAT can only be active if there is one. */
	if ((le16_to_cpu(bs->vol_flags) & EXFAT_VF_ACTIVE_FAT) &&
	    bs->num_fats != 2)
		return "VolumeFlags";
	/*
	 * PercentInUse (§3.1.18) is not checked: it is advisory, outside the
	 * boot checksum, and rewritten by whoever mounts the volume next.
	 */

	/* §3.1.5: at least 1 MiB. */
	if (vol_len < (1ULL << 20) >> sect_shift)
		return "VolumeLength";
	if (fat_off < EXFAT_MIN_FAT_OFFSET)
		return "FatOffset";
	/*
	 * §3.1.9, §9.3: no more clusters than a FAT can number, and at least
	 * the root directory, the up-case table and one bitmap per FAT.
	 */
	if (clu_count > EXFAT_MAX_CLUSTER_COUNT || clu_count < 2 + bs->num_fats)
		return "ClusterCount";
	/* §3.1.7: room for FatEntry[0] to FatEntry[ClusterCount + 1]. */
	if (fat_len << sect_shift <
	    (clu_count + EXFAT_FIRST_CLUSTER) * EXFAT_FAT_ENTRY_SIZE)
		return "FatLength";
	/* §3.1.6, §3.1.8: all FATs end where the cluster heap may begin. */
	if (heap_off < fat_off + fat_len * bs->num_fats)
		return "ClusterHeapOffset";
	/* §3.1.9: the whole heap lies inside the volume. */
	if (heap_off + (clu_count << clu_shift) > vol_len)
		return "ClusterCount";
	if (root < EXFAT_FIRST_CLUSTER ||
	    root - EXFAT_FIRST_CLUSTER >= clu_count)
		return "FirstClusterOfRootDirectory";
	if (dev_sectors && vol_len > dev_sectors)
		return "VolumeLength exceeds device";
	return NULL;
}

/* §3.4: VolumeFlags and PercentInUse change in use; the checksum skips them. */
static bool exfat_boot_csum_skip(size_t i)
{
	return i - EXFAT_BOOT_CSUM_SKIP_FLAGS <
		sizeof_field(struct exfat_boot_sector, vol_flags) ||
	       i == EXFAT_BOOT_CSUM_SKIP_PERCENT;
}

/**
 * exfat_boot_checksum_add() - add a buffer to a boot region checksum (§3.4)
 * @sum: the checksum so far; 0 before the first sector
 * @buf: the next bytes of the region
 * @len: how many
 * @first_sector: @buf starts the Boot Sector, whose VolumeFlags and
 *	PercentInUse bytes are left out
 *
 * Feeding sectors 0 to 10 of a boot region in order, sector 0 with
 * @first_sector set, gives the value sector 11 repeats.
 *
 * Return: the updated checksum.
 */
u32 exfat_boot_checksum_add(u32 sum, const void *buf, size_t len,
			    bool first_sector)
{
	const u8 *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (first_sector && exfat_boot_csum_skip(i))
			continue;
		sum = ror32(sum, 1) + p[i];
	}
	return sum;
}

/* §6.3.3: all entries of the set, except the checksum field itself. */
u16 exfat_set_checksum(const union exfat_dentry *set, unsigned int nr)
{
	const u8 *p = (const u8 *)set;
	size_t len = (size_t)nr * EXFAT_DENTRY_SIZE;
	u16 sum = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (i - EXFAT_SET_CSUM_OFFSET <
		    sizeof_field(struct exfat_dentry_file, set_checksum))
			continue;
		sum = ror16(sum, 1) + p[i];
	}
	return sum;
}

/* Character k of the name a File entry set holds, k < NameLength. */
static u16 exfat_set_name_char(const union exfat_dentry *set, unsigned int k)
{
	const struct exfat_dentry_name *de = &set[2 + k / EXFAT_NAME_PER_ENTRY].name;

	return le16_to_cpu(de->name[k % EXFAT_NAME_PER_ENTRY]);
}

/*
 * The name is checked only for what would break the VFS: NUL and '/'
 * cannot be returned by readdir, and "." and ".." would shadow the
 * directory links.  Other characters of Table 35 are left alone because
 * other implementations do create them.  Characters past NameLength are
 * only "should be zero" (§7.7.3) and are not looked at.
 */
static bool exfat_set_name_usable(const union exfat_dentry *set,
				  unsigned int len)
{
	unsigned int k;

	for (k = 0; k < len; k++) {
		u16 c = exfat_set_name_char(set, k);

		if (c == 0 || c == '/')
			return false;
	}
	if (len <= 2 && exfat_set_name_char(set, 0) == '.' &&
	    (len == 1 || exfat_set_name_char(set, 1) == '.'))
		return false;
	return true;
}

/**
 * exfat_verify_file_set() - check a File entry set before it is used
 * @set: a copy of the set's entries
 * @nr: number of entries in @set
 *
 * Checks what the rest of the driver relies on: the entry sequence of
 * §7.4 (File, Stream Extension, the Name entries NameLength needs, then
 * only benign secondaries), SecondaryCount against @nr, SetChecksum, a
 * name the VFS can use, and the stream's sizes.  FirstCluster and
 * DataLength are not checked against the volume's geometry here.
 *
 * Return: NULL if the set may be used, else a short reason for a message.
 */
const char *exfat_verify_file_set(const union exfat_dentry *set,
				  unsigned int nr)
{
	const struct exfat_dentry_stream *stream;
	unsigned int secondaries, nr_names, i;

	if (!nr || set[0].file.type != EXFAT_TYPE_FILE)
		return "entry type sequence";
	secondaries = set[0].file.secondary_count;
	if (secondaries < EXFAT_FILE_MIN_SECONDARY || nr != secondaries + 1)
		return "SecondaryCount";
	/* §6.3.3: nothing else in the set may be used before this holds. */
	if (exfat_set_checksum(set, nr) != le16_to_cpu(set[0].file.set_checksum))
		return "SetChecksum";

	/* §7.4: the stream, then exactly the name entries, come first. */
	stream = &set[1].stream;
	if (stream->type != EXFAT_TYPE_STREAM)
		return "entry type sequence";
	if (!stream->name_len)
		return "NameLength";
	nr_names = DIV_ROUND_UP(stream->name_len, EXFAT_NAME_PER_ENTRY);
	if (1 + nr_names > secondaries)
		return "NameLength";
	for (i = 2; i < 2 + nr_names; i++)
		if (set[i].name.type != EXFAT_TYPE_NAME)
			return "entry type sequence";

	/*
	 * §6.4.1.2, §8.2: any in-use secondary may follow.  Benign ones
	 * (vendor extension and allocation among them) are ignored; a critical
	 * one we do not know makes the whole set unrecognised, and a second
	 * stream or a stray name entry is not a set we can interpret.
	 */
	for (; i < nr; i++) {
		u8 type = set[i].generic.type;

		if (!exfat_type_in_use(type) || !exfat_type_secondary(type) ||
		    type == EXFAT_TYPE_STREAM || type == EXFAT_TYPE_NAME)
			return "entry type sequence";
		if (!exfat_type_benign(type))
			return "unknown critical secondary";
	}

	if (!exfat_set_name_usable(set, stream->name_len))
		return "FileName";
	/* §7.6.5 */
	if (le64_to_cpu(stream->valid_size) > le64_to_cpu(stream->size))
		return "ValidDataLength";
	/*
	 * §6.2.3, §6.4.4: no cluster, no data; whether or not NoFatChain is
	 * set.  NoFatChain on an empty stream is not refused although §6.4.4
	 * says it should not happen, because other implementations write it.
	 */
	if (!stream->first_cluster && stream->size)
		return "FirstCluster";
	/* §7.6.7 */
	if ((le16_to_cpu(set[0].file.attr) & EXFAT_ATTR_DIRECTORY) &&
	    le64_to_cpu(stream->size) > EXFAT_MAX_DIR_SIZE)
		return "DataLength";
	return NULL;
}

/* §7.6.4: over the up-cased name, low byte of each character first. */
static u16 exfat_hash_unit(const u16 *upcase, u16 hash, u16 unit)
{
	u16 c = upcase[unit];

	hash = ror16(hash, 1) + (c & 0xff);
	return ror16(hash, 1) + (c >> 8);
}

u16 exfat_name_hash(const u16 *upcase, const __le16 *name, unsigned int len)
{
	u16 hash = 0;
	unsigned int i;

	for (i = 0; i < len; i++)
		hash = exfat_hash_unit(upcase, hash, le16_to_cpu(name[i]));
	return hash;
}

/* The same for a name in CPU order (from the VFS, converted). */
u16 exfat_name_hash_cpu(const u16 *upcase, const u16 *name, unsigned int len)
{
	u16 hash = 0;
	unsigned int i;

	for (i = 0; i < len; i++)
		hash = exfat_hash_unit(upcase, hash, name[i]);
	return hash;
}

/*
 * A second hash of the up-cased name, for the in-memory directory index
 * only (it is never on disk).  NameHash adds each byte after a rotation,
 * so names that differ in their last characters share few values: 1,000
 * names file000000 to file000999 have 190 NameHashes between them, and
 * each lookup would read five sets to compare their names.  Together the
 * two give 32 bits.  Feed the name from h = 0, in one piece or several;
 * the hash is exfat_name_xhash_end() of the result.
 */
static u32 exfat_xhash_unit(const u16 *upcase, u32 h, u16 unit)
{
	return (h ^ upcase[unit]) * GOLDEN_RATIO_32;
}

u32 exfat_name_xhash(const u16 *upcase, u32 h, const __le16 *name,
		     unsigned int len)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		h = exfat_xhash_unit(upcase, h, le16_to_cpu(name[i]));
	return h;
}

/* The same for a whole name in CPU order; returns the hash itself. */
u16 exfat_name_xhash_cpu(const u16 *upcase, const u16 *name, unsigned int len)
{
	unsigned int i;
	u32 h = 0;

	for (i = 0; i < len; i++)
		h = exfat_xhash_unit(upcase, h, name[i]);
	return exfat_name_xhash_end(h);
}

/**
 * exfat_bitmap_find_free() - find a run of free clusters in a bitmap
 * @bm: the allocation bitmap
 * @from: first bit to look at
 * @limit: the run must start below this bit
 * @max: longest run wanted
 * @first: set to the first bit of the run found
 *
 * The run starts at the first clear bit in [@from, @limit) and goes on,
 * across chunks and past @limit, up to @max bits or to the first set bit
 * or the end of the bitmap.  Bits of the last chunk past @bm->nbits are
 * never looked at.
 *
 * Return: the length of the run, 0 when there is none.
 */
u32 exfat_bitmap_find_free(const struct exfat_bitmap *bm, u32 from, u32 limit,
			   u32 max, u32 *first)
{
	unsigned int per = bm->chunk_bits;
	u32 bit = from, end;

	limit = min(limit, bm->nbits);
	while (max && bit < limit) {
		unsigned int i = bit / per;
		unsigned int n = min_t(u32, per, bm->nbits - i * per);
		unsigned int b = find_next_zero_bit_le(bm->chunk(bm, i), n,
						       bit % per);

		if (b >= n) {
			bit = (i + 1) * per;
			continue;
		}
		bit = i * per + b;
		if (bit >= limit)
			break;
		/* measure the run, possibly across chunks */
		end = bit + 1;
		while (end < bm->nbits && end - bit < max) {
			unsigned int j = end / per;

			n = min_t(u32, per, bm->nbits - j * per);
			b = find_next_bit_le(bm->chunk(bm, j), n, end % per);
			end = j * per + b;
			if (b < n)
				break;
		}
		*first = bit;
		return min(end - bit, max);
	}
	return 0;
}

/**
 * exfat_bitmap_find_run() - find a run of free clusters, wrapping around
 * @bm: the allocation bitmap
 * @hint: cluster to start at (one outside the heap: its first cluster)
 * @max: longest run wanted
 * @start: set to the first cluster of the run found
 * @len: set to its length
 *
 * The run starts at the first free cluster at or after @hint, or failing
 * that, at the first free one before it.
 *
 * Return: true when a run was found.
 */
bool exfat_bitmap_find_run(const struct exfat_bitmap *bm, u32 hint, u32 max,
			   u32 *start, u32 *len)
{
	u32 bit = hint - EXFAT_FIRST_CLUSTER, first = 0;

	if (hint < EXFAT_FIRST_CLUSTER || bit >= bm->nbits)
		bit = 0;
	*len = exfat_bitmap_find_free(bm, bit, bm->nbits, max, &first);
	if (!*len)
		*len = exfat_bitmap_find_free(bm, 0, bit, max, &first);
	*start = first + EXFAT_FIRST_CLUSTER;
	return *len;
}

/* §7.2.2: the same rotate-and-add as the boot checksum, with no gaps */
u32 exfat_upcase_checksum(const void *buf, size_t len)
{
	return exfat_boot_checksum_add(0, buf, len, false);
}

/* §7.2.5, Table 24: mappings every valid table has for U+0000..U+007F */
static u16 exfat_mandatory_upcase(unsigned int c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/**
 * exfat_upcase_expand() - turn an up-case table as stored into a lookup table
 * @buf: the table as on disk, compressed or not (§7.2.5)
 * @len: its size in bytes
 * @table: EXFAT_UPCASE_ENTRIES entries to fill
 *
 * Code points the table does not reach map to themselves.
 *
 * Return: 0, or -EFSCORRUPTED if @len is odd or over 128 KiB, a run of
 * identity mappings is cut off or goes past U+FFFF, or the mandatory
 * mappings of the first 128 code points (Table 24) are wrong.  @table is
 * then partly filled.
 */
int exfat_upcase_expand(const __le16 *buf, size_t len, u16 *table)
{
	size_t nr = len / sizeof(*buf);
	u32 idx = 0;
	size_t i;
	u32 c;

	if (len % sizeof(*buf) || len > EXFAT_UPCASE_MAX_BYTES)
		return -EFSCORRUPTED;
	/* A table may stop early: everything it does not map maps to itself. */
	for (c = 0; c < EXFAT_UPCASE_ENTRIES; c++)
		table[c] = c;

	/*
	 * Data after the last code point is ignored, as it would be in a
	 * table that was padded.
	 */
	for (i = 0; i < nr && idx < EXFAT_UPCASE_ENTRIES; i++) {
		u16 val = le16_to_cpu(buf[i]);
		u16 run;

		/*
		 * FFFFh at index FFFFh is U+FFFF mapped to itself, the last
		 * entry of any table that spells out the end of the range;
		 * anywhere else it starts a run of identity mappings (§7.2.5).
		 */
		if (val != EXFAT_UPCASE_RUN_MARK || idx == U16_MAX) {
			table[idx++] = val;
			continue;
		}
		if (++i == nr)
			return -EFSCORRUPTED;
		run = le16_to_cpu(buf[i]);
		if (run > EXFAT_UPCASE_ENTRIES - idx)
			return -EFSCORRUPTED;
		idx += run;
	}

	for (c = 0; c < 0x80; c++)
		if (table[c] != exfat_mandatory_upcase(c))
			return -EFSCORRUPTED;
	return 0;
}

/* §7.4.8, Table 29: the fields of a Timestamp */
#define EXFAT_TS_2SEC		GENMASK(4, 0)
#define EXFAT_TS_MINUTE		GENMASK(10, 5)
#define EXFAT_TS_HOUR		GENMASK(15, 11)
#define EXFAT_TS_DAY		GENMASK(20, 16)
#define EXFAT_TS_MONTH		GENMASK(24, 21)
#define EXFAT_TS_YEAR		GENMASK(31, 25)
#define EXFAT_EPOCH_YEAR	1980

/* 1980-01-01 00:00:00 and 2107-12-31 23:59:59 UTC, the range of a Timestamp */
#define EXFAT_MIN_TIME		315532800LL
#define EXFAT_MAX_TIME		4354819199LL

/* §7.4.10.1: OffsetFromUtc is a signed count of 15 minute steps. */
#define EXFAT_TZ_SIGN_BIT	6
#define EXFAT_TZ_STEP_SECS	(15 * 60)

static unsigned int exfat_month_days(unsigned int year, unsigned int month)
{
	static const u8 days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return days[month - 1] + (month == 2 && leap);
}

/**
 * exfat_time_to_ts() - decode a timestamp (§7.4.8 - §7.4.10)
 * @t: Timestamp, 10msIncrement (0 for access times) and UtcOffset
 * @local_offset: minutes east of UTC of the zone a stamp without a valid
 *	UtcOffset is taken to be in
 * @ts: the time in UTC
 */
void exfat_time_to_ts(const struct exfat_time *t, int local_offset,
		      struct timespec64 *ts)
{
	u32 stamp = le32_to_cpu(t->stamp);
	unsigned int year = EXFAT_EPOCH_YEAR + FIELD_GET(EXFAT_TS_YEAR, stamp);
	unsigned int month, day, hour, minute, sec, cs;
	time64_t secs;

	/*
	 * Out-of-range fields come from other implementations' bugs or from
	 * corruption; each is pulled to the nearest valid value so that the
	 * result stays a date in the right month and never wraps.
	 */
	month = clamp_t(unsigned int, FIELD_GET(EXFAT_TS_MONTH, stamp), 1, 12);
	day = clamp_t(unsigned int, FIELD_GET(EXFAT_TS_DAY, stamp), 1,
		      exfat_month_days(year, month));
	hour = min_t(unsigned int, FIELD_GET(EXFAT_TS_HOUR, stamp), 23);
	minute = min_t(unsigned int, FIELD_GET(EXFAT_TS_MINUTE, stamp), 59);
	sec = min_t(unsigned int, FIELD_GET(EXFAT_TS_2SEC, stamp) * 2, 58);
	cs = min_t(unsigned int, t->cs, EXFAT_MAX_10MS);

	secs = mktime64(year, month, day, hour, minute, sec) + cs / 100;
	/*
	 * §7.4.10.2: without OffsetValid the stamp is in the zone the mount
	 * says local time is in.
	 */
	if (t->tz & EXFAT_TZ_VALID)
		secs -= (time64_t)sign_extend32(t->tz & EXFAT_TZ_OFFSET_MASK,
						EXFAT_TZ_SIGN_BIT) *
			EXFAT_TZ_STEP_SECS;
	else
		secs -= (time64_t)local_offset * 60;

	ts->tv_sec = secs;
	ts->tv_nsec = (cs % 100) * 10 * NSEC_PER_MSEC;
}

/**
 * exfat_ts_to_time() - encode a timestamp (§7.4.8 - §7.4.10)
 * @ts: the time in UTC
 * @local_offset: unused, see below
 * @t: the result; the caller drops cs for access times
 *
 * Stamps are always written in UTC with OffsetValid set and an offset of
 * zero, as the in-tree driver does: the kernel has no reliable idea of the
 * local zone, and §7.4.10.1 allows exactly this when local time is not
 * known.  @local_offset is taken for symmetry with exfat_time_to_ts().
 * Times outside 1980-01-01 00:00:00 to 2107-12-31 23:59:59.99 are clamped
 * to that range.
 */
void exfat_ts_to_time(const struct timespec64 *ts, int local_offset,
		      struct exfat_time *t)
{
	time64_t secs = ts->tv_sec;
	long nsec = clamp_t(long, ts->tv_nsec, 0, NSEC_PER_SEC - 1);
	struct tm tm;

	if (secs < EXFAT_MIN_TIME) {
		secs = EXFAT_MIN_TIME;
		nsec = 0;
	} else if (secs > EXFAT_MAX_TIME) {
		secs = EXFAT_MAX_TIME;
		nsec = NSEC_PER_SEC - 1;
	}
	time64_to_tm(secs, 0, &tm);

	t->stamp = cpu_to_le32(FIELD_PREP(EXFAT_TS_YEAR,
					  tm.tm_year + 1900 - EXFAT_EPOCH_YEAR) |
			       FIELD_PREP(EXFAT_TS_MONTH, tm.tm_mon + 1) |
			       FIELD_PREP(EXFAT_TS_DAY, tm.tm_mday) |
			       FIELD_PREP(EXFAT_TS_HOUR, tm.tm_hour) |
			       FIELD_PREP(EXFAT_TS_MINUTE, tm.tm_min) |
			       FIELD_PREP(EXFAT_TS_2SEC, tm.tm_sec / 2));
	/* §7.4.9: the odd second and the hundredths go in 10msIncrement. */
	t->cs = (tm.tm_sec & 1) * 100 + nsec / (10 * NSEC_PER_MSEC);
	t->tz = EXFAT_TZ_VALID;
}

/**
 * exfat_parse_root_entry - take a primary entry of the root directory
 * @ri: what the scan found so far
 * @de: the entry
 * @active_fat: VolumeFlags' ActiveFat (0 or 1)
 *
 * The critical primaries of the root (§7.1-7.3) and the volume GUID
 * (§7.5): the allocation bitmap ActiveFat selects, the first up-case
 * table, the label and the GUID.  Other entries are ignored.  Returns
 * NULL, or why the volume cannot be mounted.
 */
const char *exfat_parse_root_entry(struct exfat_root_info *ri,
				   const union exfat_dentry *de,
				   unsigned int active_fat)
{
	unsigned int i;

	switch (de->generic.type) {
	case EXFAT_TYPE_BITMAP:
		if ((de->bitmap.flags & 1) != active_fat)
			break;
		if (ri->have_bitmap)
			return "more than one allocation bitmap";
		ri->have_bitmap = true;
		ri->bitmap_clu = le32_to_cpu(de->bitmap.first_cluster);
		ri->bitmap_len = le64_to_cpu(de->bitmap.data_length);
		break;
	case EXFAT_TYPE_UPCASE:
		if (ri->have_upcase)
			break;
		ri->have_upcase = true;
		ri->upcase_clu = le32_to_cpu(de->upcase.first_cluster);
		ri->upcase_len = le64_to_cpu(de->upcase.data_length);
		ri->upcase_csum = le32_to_cpu(de->upcase.checksum);
		break;
	case EXFAT_TYPE_GUID:
		/* a primary with no secondaries, checksummed */
		if (de->guid.secondary_count ||
		    le16_to_cpu(de->guid.set_checksum) !=
		    exfat_set_checksum(de, 1)) {
			ri->bad_guid = true;
			break;
		}
		memcpy(ri->guid, de->guid.guid, sizeof(ri->guid));
		ri->have_guid = true;
		break;
	case EXFAT_TYPE_LABEL:
		ri->label_len = min_t(unsigned int, de->label.char_count,
				      EXFAT_LABEL_MAX_LEN);
		for (i = 0; i < ri->label_len; i++)
			ri->label[i] = le16_to_cpu(de->label.label[i]);
		break;
	default:
		break;
	}
	return NULL;
}

/* A Volume Label entry (§7.3) holding the len units of uni. */
void exfat_make_label_entry(union exfat_dentry *de, const u16 *uni,
			    unsigned int len)
{
	unsigned int i;

	memset(de, 0, sizeof(*de));
	de->label.type = EXFAT_TYPE_LABEL;
	de->label.char_count = min_t(unsigned int, len, EXFAT_LABEL_MAX_LEN);
	for (i = 0; i < de->label.char_count; i++)
		de->label.label[i] = cpu_to_le16(uni[i]);
}

#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)
#include "format_test.c"
#endif
