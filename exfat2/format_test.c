// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the pure format functions.  This file is included at the
 * end of format.c, so the suite is part of the module and runs when the
 * module is loaded into a kernel built with KUnit.
 *
 * Expected values come from the specification's own formulas written out
 * again here, from vectors computed outside the kernel, or from the
 * specification itself (the recommended up-case table's checksum).
 */
#include <kunit/test.h>
#include <linux/sort.h>
#include <linux/unaligned.h>

#define EXFAT_TEST_VALID	"(valid)"

/* Boot sector (§3.1) */

/* What mkfs.exfat (exfatprogs 1.2.0) writes for a 64 MiB volume. */
static void exfat_test_boot_sector(struct exfat_boot_sector *bs)
{
	memset(bs, 0, sizeof(*bs));
	memcpy(bs->jump_boot, exfat_jump_boot, sizeof(bs->jump_boot));
	memcpy(bs->fs_name, EXFAT_BOOT_FS_NAME, sizeof(bs->fs_name));
	bs->vol_length = cpu_to_le64(131072);
	bs->fat_offset = cpu_to_le32(2048);
	bs->fat_length = cpu_to_le32(128);
	bs->clu_heap_offset = cpu_to_le32(4096);
	bs->clu_count = cpu_to_le32(15872);
	bs->root_cluster = cpu_to_le32(5);
	bs->vol_serial = cpu_to_le32(0x1234abcd);
	bs->fs_revision = cpu_to_le16(0x0100);
	bs->sector_shift = 9;
	bs->cluster_shift = 3;
	bs->num_fats = 1;
	bs->drive_select = 0x80;
	memset(bs->boot_code, 0xf4, sizeof(bs->boot_code));
	bs->boot_signature = cpu_to_le16(EXFAT_BOOT_SIGNATURE);
}

/* Overwrite size bytes at off with val, little endian; size 0 ends a list. */
struct exfat_test_patch {
	unsigned int	off;
	unsigned int	size;
	u64		val;
};

#define BS(field)	offsetof(struct exfat_boot_sector, field)

struct exfat_boot_case {
	const char		*desc;
	struct exfat_test_patch	patch[6];
	u64			dev_sectors;
	const char		*reason;
};

static const struct exfat_boot_case exfat_boot_cases[] = {
	{ "valid", {}, 0, NULL },
	{ "valid, device size equal", {}, 131072, NULL },
	{ "valid, device larger", {}, 1ULL << 40, NULL },
	{ "valid, two FATs, second active",
	  { { BS(num_fats), 1, 2 }, { BS(vol_flags), 2, EXFAT_VF_ACTIVE_FAT } },
	  0, NULL },
	{ "valid, revision 1.99", { { BS(fs_revision), 2, 0x0163 } }, 0, NULL },
	{ "valid, volume flags and percentage",
	  { { BS(vol_flags), 2, EXFAT_VF_DIRTY | EXFAT_VF_MEDIA_FAILURE },
	    { BS(percent_in_use), 1, 0xee } }, 0, NULL },
	{ "valid, FAT just long enough", { { BS(fat_length), 4, 125 } }, 0, NULL },
	{ "valid, root in last cluster", { { BS(root_cluster), 4, 15873 } },
	  0, NULL },
	{ "valid, heap follows the FAT", { { BS(clu_heap_offset), 4, 2176 },
	    { BS(vol_length), 8, 2176 + 15872 * 8 } }, 0, NULL },
	/* Largest everything: must not wrap anywhere. */
	{ "valid, 2^32 - 11 clusters of 32 MiB",
	  { { BS(cluster_shift), 1, 16 }, { BS(clu_count), 4, 0xfffffff5 },
	    { BS(fat_length), 4, 0x02000000 },
	    { BS(clu_heap_offset), 4, 2048 + 0x02000000 },
	    { BS(vol_length), 8, U64_MAX } }, 0, NULL },
	{ "huge volume on a small device",
	  { { BS(cluster_shift), 1, 16 }, { BS(clu_count), 4, 0xfffffff5 },
	    { BS(fat_length), 4, 0x02000000 },
	    { BS(clu_heap_offset), 4, 2048 + 0x02000000 },
	    { BS(vol_length), 8, U64_MAX } }, 131072,
	  "VolumeLength exceeds device" },
	{ "device one sector short", {}, 131071, "VolumeLength exceeds device" },
	{ "no signature", { { BS(boot_signature), 2, 0x55aa } }, 0,
	  "BootSignature" },
	{ "jump instruction", { { BS(jump_boot[0]), 1, 0xe9 } }, 0, "JumpBoot" },
	{ "lower case name", { { BS(fs_name[1]), 1, 'x' } }, 0,
	  "FileSystemName" },
	{ "FAT32 name", { { BS(fs_name[0]), 1, 'F' }, { BS(fs_name[1]), 1, 'A' },
	    { BS(fs_name[2]), 1, 'T' }, { BS(fs_name[3]), 1, '3' },
	    { BS(fs_name[4]), 1, '2' } }, 0, "FileSystemName" },
	{ "BPB byte set", { { BS(must_be_zero[52]), 1, 1 } }, 0, "MustBeZero" },
	{ "256 byte sectors", { { BS(sector_shift), 1, 8 } }, 0,
	  "BytesPerSectorShift" },
	{ "8 KiB sectors", { { BS(sector_shift), 1, 13 } }, 0,
	  "BytesPerSectorShift" },
	{ "64 MiB clusters", { { BS(cluster_shift), 1, 17 } }, 0,
	  "SectorsPerClusterShift" },
	{ "64 MiB clusters of 4 KiB sectors",
	  { { BS(sector_shift), 1, 12 }, { BS(cluster_shift), 1, 14 } }, 0,
	  "SectorsPerClusterShift" },
	{ "no FAT", { { BS(num_fats), 1, 0 } }, 0, "NumberOfFats" },
	{ "three FATs", { { BS(num_fats), 1, 3 } }, 0, "NumberOfFats" },
	{ "revision 2.00", { { BS(fs_revision), 2, 0x0200 } }, 0,
	  "FileSystemRevision" },
	{ "revision 0.99", { { BS(fs_revision), 2, 0x0063 } }, 0,
	  "FileSystemRevision" },
	{ "second FAT active, only one", { { BS(vol_flags), 2, 1 } }, 0,
	  "VolumeFlags" },
	{ "volume below 1 MiB", { { BS(vol_length), 8, 2047 } }, 0,
	  "VolumeLength" },
	{ "FAT inside the boot regions", { { BS(fat_offset), 4, 23 } }, 0,
	  "FatOffset" },
	{ "FAT one sector short", { { BS(fat_length), 4, 124 } }, 0, "FatLength" },
	{ "heap overlaps the FAT", { { BS(clu_heap_offset), 4, 2175 } }, 0,
	  "ClusterHeapOffset" },
	{ "heap overlaps the second FAT",
	  { { BS(num_fats), 1, 2 }, { BS(clu_heap_offset), 4, 2303 },
	    { BS(vol_length), 8, 2303 + 15872 * 8 } }, 0, "ClusterHeapOffset" },
	{ "heap past the volume end", { { BS(clu_count), 4, 15873 } }, 0,
	  "ClusterCount" },
	{ "2^32 - 10 clusters", { { BS(clu_count), 4, 0xfffffff6 } }, 0,
	  "ClusterCount" },
	{ "too few clusters", { { BS(clu_count), 4, 2 }, { BS(root_cluster), 4, 2 } },
	  0, "ClusterCount" },
	{ "root cluster 1", { { BS(root_cluster), 4, 1 } }, 0,
	  "FirstClusterOfRootDirectory" },
	{ "root past the heap", { { BS(root_cluster), 4, 15874 } }, 0,
	  "FirstClusterOfRootDirectory" },
};

KUNIT_ARRAY_PARAM_DESC(exfat_boot, exfat_boot_cases, desc);

static void exfat_test_apply(void *buf, const struct exfat_test_patch *p,
			     unsigned int nr)
{
	u8 *bytes = buf;
	unsigned int i;

	for (; nr && p->size; nr--, p++)
		for (i = 0; i < p->size; i++)
			bytes[p->off + i] = p->val >> (8 * i);
}

static void exfat_boot_sector_test(struct kunit *test)
{
	const struct exfat_boot_case *c = test->param_value;
	struct exfat_boot_sector bs;
	const char *reason;

	exfat_test_boot_sector(&bs);
	exfat_test_apply(&bs, c->patch, ARRAY_SIZE(c->patch));
	reason = exfat_verify_boot_sector(&bs, c->dev_sectors);
	KUNIT_EXPECT_STREQ(test, reason ?: EXFAT_TEST_VALID,
			   c->reason ?: EXFAT_TEST_VALID);
}

/* Boot checksum (§3.4) */

/* Figure 1 of the specification, over a region of 11 sectors. */
static u32 exfat_test_boot_csum_ref(const u8 *sectors, u32 bytes_per_sector)
{
	u32 sum = 0, i;

	for (i = 0; i < bytes_per_sector * 11; i++) {
		if (i == 106 || i == 107 || i == 112)
			continue;
		sum = ((sum & 1) ? 0x80000000 : 0) + (sum >> 1) + sectors[i];
	}
	return sum;
}

static u32 exfat_test_boot_csum(const u8 *region, size_t sect_size)
{
	u32 sum = 0;
	unsigned int s;

	for (s = 0; s < EXFAT_BOOT_CHECKSUM_SECTOR; s++)
		sum = exfat_boot_checksum_add(sum, region + s * sect_size,
					      sect_size, s == 0);
	return sum;
}

/* A plausible boot region: boot sector, extended boot sectors, OEM data. */
static u8 *exfat_test_boot_region(struct kunit *test, size_t sect_size)
{
	u8 *region = kunit_kzalloc(test, sect_size * EXFAT_BOOT_CHECKSUM_SECTOR,
				   GFP_KERNEL);
	unsigned int s;
	size_t i;

	KUNIT_ASSERT_NOT_NULL(test, region);
	exfat_test_boot_sector((struct exfat_boot_sector *)region);
	for (s = 1; s < EXFAT_BOOT_CHECKSUM_SECTOR; s++) {
		u8 *sect = region + s * sect_size;

		for (i = 0; i < sect_size; i++)
			sect[i] = s * 31 + i * 7;
		if (s <= 8)
			put_unaligned_le32(EXFAT_EXT_BOOT_SIGNATURE,
					   sect + sect_size - 4);
	}
	return region;
}

static void exfat_boot_checksum_test(struct kunit *test)
{
	static const size_t sizes[] = { 512, 4096 };
	unsigned int n;

	for (n = 0; n < ARRAY_SIZE(sizes); n++) {
		size_t sect_size = sizes[n];
		u8 *region = exfat_test_boot_region(test, sect_size);
		struct exfat_boot_sector *bs = (void *)region;
		u32 sum = exfat_test_boot_csum(region, sect_size);

		KUNIT_EXPECT_EQ(test, sum,
				exfat_test_boot_csum_ref(region, sect_size));

		/* The fields that change in use are not covered... */
		bs->vol_flags = cpu_to_le16(EXFAT_VF_DIRTY);
		bs->percent_in_use = 42;
		KUNIT_EXPECT_EQ(test, exfat_test_boot_csum(region, sect_size),
				sum);
		/* ...but their neighbours and the same offsets later on are. */
		bs->sector_shift++;
		KUNIT_EXPECT_NE(test, exfat_test_boot_csum(region, sect_size),
				sum);
		bs->sector_shift--;
		region[sect_size + 106]++;
		KUNIT_EXPECT_NE(test, exfat_test_boot_csum(region, sect_size),
				sum);
	}
}

/* Fixed vector: byte i of the region is i * 7, computed outside the kernel. */
static void exfat_boot_checksum_vector_test(struct kunit *test)
{
	u8 *region = kunit_kzalloc(test, 11 * 512, GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, region);
	for (i = 0; i < 11 * 512; i++)
		region[i] = i * 7;
	KUNIT_EXPECT_EQ(test, exfat_test_boot_csum(region, 512), 0x6c4fef9bU);
}

/* Entry sets (§6.3.3, §7.4, §7.6, §7.7) */

/*
 * A File entry set for a name of len characters repeating name, followed
 * by extra vendor extension entries.  Returns the number of entries.
 */
static unsigned int exfat_test_file_set(union exfat_dentry *set,
					const char *name, unsigned int len,
					unsigned int extra)
{
	unsigned int nr_names = DIV_ROUND_UP(len, EXFAT_NAME_PER_ENTRY);
	unsigned int nr = 2 + nr_names + extra;
	size_t name_chars = strlen(name);
	unsigned int k;

	memset(set, 0, nr * sizeof(*set));
	set[0].file.type = EXFAT_TYPE_FILE;
	set[0].file.secondary_count = nr - 1;
	set[0].file.attr = cpu_to_le16(EXFAT_ATTR_ARCHIVE);
	set[0].file.create_time = cpu_to_le32(0x50cf6000);
	set[0].file.modify_time = cpu_to_le32(0x50cf6421);
	set[0].file.access_time = cpu_to_le32(0x50cf6421);
	set[0].file.create_10ms = 100;
	set[0].file.modify_10ms = 5;
	set[0].file.create_tz = EXFAT_TZ_VALID;
	set[0].file.modify_tz = EXFAT_TZ_VALID;
	set[0].file.access_tz = EXFAT_TZ_VALID;
	set[1].stream.type = EXFAT_TYPE_STREAM;
	set[1].stream.flags = EXFAT_FLAG_ALLOC_POSSIBLE;
	set[1].stream.name_len = len;
	set[1].stream.valid_size = cpu_to_le64(1000);
	set[1].stream.first_cluster = cpu_to_le32(10);
	set[1].stream.size = cpu_to_le64(4096);
	for (k = 0; k < nr_names; k++)
		set[2 + k].name.type = EXFAT_TYPE_NAME;
	for (k = 0; k < len; k++)
		set[2 + k / EXFAT_NAME_PER_ENTRY].name.name[k % EXFAT_NAME_PER_ENTRY] =
			cpu_to_le16(name[k % name_chars]);
	for (k = 2 + nr_names; k < nr; k++)
		set[k].generic.type = EXFAT_TYPE_VENDOR_EXT;
	set[0].file.set_checksum = cpu_to_le16(exfat_set_checksum(set, nr));
	return nr;
}

/* Figure 2 of the specification. */
static u16 exfat_test_set_csum_ref(const union exfat_dentry *set,
				   unsigned int nr)
{
	const u8 *entries = (const u8 *)set;
	u16 sum = 0;
	unsigned int i;

	for (i = 0; i < nr * 32; i++) {
		if (i == 2 || i == 3)
			continue;
		sum = ((sum & 1) ? 0x8000 : 0) + (sum >> 1) + entries[i];
	}
	return sum;
}

static void exfat_set_checksum_test(struct kunit *test)
{
	union exfat_dentry *set = kunit_kcalloc(test, EXFAT_MAX_SET_ENTRIES,
						sizeof(*set), GFP_KERNEL);
	unsigned int nr;

	KUNIT_ASSERT_NOT_NULL(test, set);

	/* Fixed vector, computed outside the kernel. */
	nr = exfat_test_file_set(set, "hello.txt", 9, 0);
	KUNIT_EXPECT_EQ(test, nr, 3U);
	KUNIT_EXPECT_EQ(test, exfat_set_checksum(set, nr), 0xf7c1U);

	nr = exfat_test_file_set(set, "0123456789abcdefghij", 255, 0);
	KUNIT_EXPECT_EQ(test, exfat_set_checksum(set, nr),
			exfat_test_set_csum_ref(set, nr));
	nr = exfat_test_file_set(set, "x", 1, 253);
	KUNIT_EXPECT_EQ(test, nr, 256U);
	KUNIT_EXPECT_EQ(test, exfat_set_checksum(set, nr),
			exfat_test_set_csum_ref(set, nr));

	/* The checksum field itself does not count. */
	set[0].file.set_checksum = cpu_to_le16(0x1234);
	KUNIT_EXPECT_EQ(test, exfat_set_checksum(set, nr),
			exfat_test_set_csum_ref(set, nr));
}

struct exfat_set_case {
	const char	*desc;
	const char	*name;
	unsigned int	len;
	unsigned int	extra;
	/* Changes the built set; the checksum is then recomputed... */
	void		(*corrupt)(union exfat_dentry *set, unsigned int *nr);
	/* ...unless this is set. */
	bool		stale_csum;
	const char	*reason;
};

static void exfat_test_flip_name(union exfat_dentry *set, unsigned int *nr)
{
	set[2].name.name[0] ^= cpu_to_le16(0x20);
}

static void exfat_test_deleted_file(union exfat_dentry *set, unsigned int *nr)
{
	set[0].file.type &= ~EXFAT_TYPE_IN_USE;
}

static void exfat_test_one_secondary(union exfat_dentry *set, unsigned int *nr)
{
	set[0].file.secondary_count = 1;
	*nr = 2;
}

static void exfat_test_short_buffer(union exfat_dentry *set, unsigned int *nr)
{
	(*nr)--;
}

static void exfat_test_name_first(union exfat_dentry *set, unsigned int *nr)
{
	swap(set[1], set[2]);
}

static void exfat_test_name_len_31(union exfat_dentry *set, unsigned int *nr)
{
	set[1].stream.name_len = 31;
}

static void exfat_test_name_len_0(union exfat_dentry *set, unsigned int *nr)
{
	set[1].stream.name_len = 0;
}

static void exfat_test_vendor_in_name(union exfat_dentry *set,
				      unsigned int *nr)
{
	set[3].generic.type = EXFAT_TYPE_VENDOR_EXT;
}

static void exfat_test_last_type(union exfat_dentry *set, unsigned int nr,
				 u8 type)
{
	set[nr - 1].generic.type = type;
}

static void exfat_test_vendor_alloc(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, EXFAT_TYPE_VENDOR_ALLOC);
	set[*nr - 1].generic.first_cluster = cpu_to_le32(20);
	set[*nr - 1].generic.data_length = cpu_to_le64(512);
}

static void exfat_test_benign_ff(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, 0xff);
}

static void exfat_test_critical_c2(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, 0xc2);
}

static void exfat_test_unused_60(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, 0x60);
}

static void exfat_test_primary(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, EXFAT_TYPE_FILE);
}

static void exfat_test_benign_primary(union exfat_dentry *set,
				      unsigned int *nr)
{
	exfat_test_last_type(set, *nr, EXFAT_TYPE_GUID);
}

static void exfat_test_eod(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, EXFAT_TYPE_EOD);
}

static void exfat_test_two_streams(union exfat_dentry *set, unsigned int *nr)
{
	set[*nr - 1] = set[1];
}

static void exfat_test_extra_name(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_last_type(set, *nr, EXFAT_TYPE_NAME);
}

static void exfat_test_vdl_big(union exfat_dentry *set, unsigned int *nr)
{
	set[1].stream.valid_size = cpu_to_le64(4097);
}

static void exfat_test_vdl_full(union exfat_dentry *set, unsigned int *nr)
{
	set[1].stream.valid_size = cpu_to_le64(4096);
}

static void exfat_test_no_cluster(union exfat_dentry *set, unsigned int *nr)
{
	set[1].stream.first_cluster = 0;
}

static void exfat_test_contig_no_cluster(union exfat_dentry *set,
					 unsigned int *nr)
{
	set[1].stream.flags |= EXFAT_FLAG_NO_FAT_CHAIN;
	set[1].stream.first_cluster = 0;
}

static void exfat_test_contig_empty(union exfat_dentry *set, unsigned int *nr)
{
	set[1].stream.flags |= EXFAT_FLAG_NO_FAT_CHAIN;
	set[1].stream.first_cluster = 0;
	set[1].stream.valid_size = 0;
	set[1].stream.size = 0;
}

static void exfat_test_dir(union exfat_dentry *set, unsigned int *nr,
			   u64 size)
{
	set[0].file.attr = cpu_to_le16(EXFAT_ATTR_DIRECTORY);
	set[1].stream.valid_size = cpu_to_le64(size);
	set[1].stream.size = cpu_to_le64(size);
}

static void exfat_test_dir_max(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_dir(set, nr, EXFAT_MAX_DIR_SIZE);
}

static void exfat_test_dir_big(union exfat_dentry *set, unsigned int *nr)
{
	exfat_test_dir(set, nr, EXFAT_MAX_DIR_SIZE + 4096ULL);
}

static void exfat_test_name_nul(union exfat_dentry *set, unsigned int *nr)
{
	set[2].name.name[3] = 0;
}

static void exfat_test_name_tail(union exfat_dentry *set, unsigned int *nr)
{
	set[2].name.name[14] = cpu_to_le16(0xffff);
}

static const struct exfat_set_case exfat_set_cases[] = {
	{ "valid", "hello.txt", 9, 0, NULL, false, NULL },
	{ "valid, one full name entry", "abc", 15, 0, NULL, false, NULL },
	{ "valid, 255 characters", "abcdefghij", 255, 0, NULL, false, NULL },
	{ "valid, 255 secondaries", "x", 1, 253, NULL, false, NULL },
	{ "valid, three dots", "...", 3, 0, NULL, false, NULL },
	{ "valid, forbidden but harmless characters", "a:b?c*", 6, 0,
	  NULL, false, NULL },
	{ "valid, garbage after NameLength", "hello.txt", 9, 0,
	  exfat_test_name_tail, false, NULL },
	{ "valid, vendor extension", "hello.txt", 9, 1, NULL, false, NULL },
	{ "valid, vendor allocation", "hello.txt", 9, 2,
	  exfat_test_vendor_alloc, false, NULL },
	{ "valid, unknown benign secondary", "hello.txt", 9, 1,
	  exfat_test_benign_ff, false, NULL },
	{ "valid, ValidDataLength == DataLength", "hello.txt", 9, 0,
	  exfat_test_vdl_full, false, NULL },
	{ "valid, empty with NoFatChain", "hello.txt", 9, 0,
	  exfat_test_contig_empty, false, NULL },
	{ "valid, directory of 256 MiB", "dir", 3, 0,
	  exfat_test_dir_max, false, NULL },
	{ "checksum mismatch", "hello.txt", 9, 0, exfat_test_flip_name, true,
	  "SetChecksum" },
	{ "deleted File entry", "hello.txt", 9, 0, exfat_test_deleted_file,
	  false, "entry type sequence" },
	{ "SecondaryCount 1", "hello.txt", 9, 0, exfat_test_one_secondary,
	  false, "SecondaryCount" },
	{ "set longer than the buffer", "hello.txt", 9, 0,
	  exfat_test_short_buffer, false, "SecondaryCount" },
	{ "name before stream", "hello.txt", 9, 0, exfat_test_name_first,
	  false, "entry type sequence" },
	{ "too few name entries", "0123456789abcdefghij", 20, 0,
	  exfat_test_name_len_31, false, "NameLength" },
	{ "NameLength 0", "hello.txt", 9, 0, exfat_test_name_len_0, false,
	  "NameLength" },
	{ "vendor entry between names", "0123456789abcdefghij", 20, 1,
	  exfat_test_vendor_in_name, false, "entry type sequence" },
	{ "unknown critical secondary", "hello.txt", 9, 1,
	  exfat_test_critical_c2, false, "unknown critical secondary" },
	{ "unused entry inside the set", "hello.txt", 9, 1,
	  exfat_test_unused_60, false, "entry type sequence" },
	{ "end of directory inside the set", "hello.txt", 9, 1,
	  exfat_test_eod, false, "entry type sequence" },
	{ "critical primary inside the set", "hello.txt", 9, 1,
	  exfat_test_primary, false, "entry type sequence" },
	{ "benign primary inside the set", "hello.txt", 9, 1,
	  exfat_test_benign_primary, false, "entry type sequence" },
	{ "second stream", "hello.txt", 9, 1, exfat_test_two_streams, false,
	  "entry type sequence" },
	{ "name entry past NameLength", "hello.txt", 9, 1,
	  exfat_test_extra_name, false, "entry type sequence" },
	{ "ValidDataLength > DataLength", "hello.txt", 9, 0,
	  exfat_test_vdl_big, false, "ValidDataLength" },
	{ "data without a cluster", "hello.txt", 9, 0, exfat_test_no_cluster,
	  false, "FirstCluster" },
	{ "NoFatChain data without a cluster", "hello.txt", 9, 0,
	  exfat_test_contig_no_cluster, false, "FirstCluster" },
	{ "directory over 256 MiB", "dir", 3, 0, exfat_test_dir_big, false,
	  "DataLength" },
	{ "slash in name", "a/b", 3, 0, NULL, false, "FileName" },
	{ "NUL in name", "hello.txt", 9, 0, exfat_test_name_nul, false,
	  "FileName" },
	{ "name \".\"", ".", 1, 0, NULL, false, "FileName" },
	{ "name \"..\"", "..", 2, 0, NULL, false, "FileName" },
};

KUNIT_ARRAY_PARAM_DESC(exfat_set, exfat_set_cases, desc);

static void exfat_verify_file_set_test(struct kunit *test)
{
	const struct exfat_set_case *c = test->param_value;
	union exfat_dentry *set = kunit_kcalloc(test, EXFAT_MAX_SET_ENTRIES + 1,
						sizeof(*set), GFP_KERNEL);
	unsigned int nr;
	const char *reason;

	KUNIT_ASSERT_NOT_NULL(test, set);
	nr = exfat_test_file_set(set, c->name, c->len, c->extra);
	if (c->corrupt) {
		c->corrupt(set, &nr);
		if (!c->stale_csum)
			set[0].file.set_checksum =
				cpu_to_le16(exfat_set_checksum(set, nr));
	}
	reason = exfat_verify_file_set(set, nr);
	KUNIT_EXPECT_STREQ(test, reason ?: EXFAT_TEST_VALID,
			   c->reason ?: EXFAT_TEST_VALID);
}

/* Up-case table (§7.2) and NameHash (§7.6.4) */

static u16 *exfat_test_default_table(struct kunit *test)
{
	u16 *table = kunit_kmalloc_array(test, EXFAT_UPCASE_ENTRIES,
					 sizeof(*table), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, table);
	KUNIT_ASSERT_EQ(test, exfat_upcase_expand(exfat_default_upcase,
						  exfat_default_upcase_len,
						  table), 0);
	return table;
}

static void exfat_upcase_checksum_test(struct kunit *test)
{
	static const u8 two[] = { 1, 2 };

	KUNIT_EXPECT_EQ(test, exfat_upcase_checksum(two, sizeof(two)),
			0x80000002U);
	KUNIT_EXPECT_EQ(test, exfat_upcase_checksum(two, 0), 0U);
	/* §7.2.5.1 gives the recommended table's checksum. */
	KUNIT_EXPECT_EQ(test, exfat_upcase_checksum(exfat_default_upcase,
						    exfat_default_upcase_len),
			0xe619d30dU);
}

static void exfat_default_upcase_test(struct kunit *test)
{
	u16 *table = exfat_test_default_table(test);

	KUNIT_EXPECT_EQ(test, table[0], 0);
	KUNIT_EXPECT_EQ(test, table['a'], 'A');
	KUNIT_EXPECT_EQ(test, table['z'], 'Z');
	KUNIT_EXPECT_EQ(test, table['A'], 'A');
	KUNIT_EXPECT_EQ(test, table['{'], '{');
	KUNIT_EXPECT_EQ(test, table[0x00e9], 0x00c9);	/* e acute */
	KUNIT_EXPECT_EQ(test, table[0x00ff], 0x0178);	/* y diaeresis */
	KUNIT_EXPECT_EQ(test, table[0x03c9], 0x03a9);	/* omega */
	KUNIT_EXPECT_EQ(test, table[0x0444], 0x0424);	/* ef */
	KUNIT_EXPECT_EQ(test, table[0x4e00], 0x4e00);	/* CJK, in a run */
	KUNIT_EXPECT_EQ(test, table[0xd800], 0xd800);	/* surrogate */
	KUNIT_EXPECT_EQ(test, table[0xff41], 0xff21);	/* fullwidth a */
	KUNIT_EXPECT_EQ(test, table[0xffff], 0xffff);
}

/* Builds a table into buf (room for 0x10002 entries); returns its bytes. */
typedef size_t (*exfat_test_table_fn)(__le16 *buf);

static size_t exfat_test_ascii(__le16 *buf)
{
	unsigned int c;

	for (c = 0; c < 0x80; c++)
		buf[c] = cpu_to_le16(exfat_mandatory_upcase(c));
	return 0x80 * 2;
}

/* The example of §7.2.5, completed to cover a..z. */
static size_t exfat_test_spec_example(__le16 *buf)
{
	unsigned int n = 0, c;

	buf[n++] = cpu_to_le16(0xffff);
	buf[n++] = cpu_to_le16(0x61);
	for (c = 'A'; c <= 'Z'; c++)
		buf[n++] = cpu_to_le16(c);
	return n * 2;
}

static size_t exfat_test_leading_empty_run(__le16 *buf)
{
	buf[0] = cpu_to_le16(0xffff);
	buf[1] = 0;
	return 4 + exfat_test_ascii(buf + 2);
}

static size_t exfat_test_uncompressed(__le16 *buf)
{
	unsigned int c;

	for (c = 0; c < EXFAT_UPCASE_ENTRIES; c++)
		buf[c] = cpu_to_le16(c < 0x80 ? exfat_mandatory_upcase(c) : c);
	buf[0xe9] = cpu_to_le16(0xc9);
	return EXFAT_UPCASE_ENTRIES * 2;
}

static size_t exfat_test_too_long(__le16 *buf)
{
	return exfat_test_uncompressed(buf) + 2;
}

static size_t exfat_test_odd(__le16 *buf)
{
	return exfat_test_ascii(buf) + 1;
}

static size_t exfat_test_run_to_end(__le16 *buf)
{
	size_t len = exfat_test_ascii(buf);

	buf[0x80] = cpu_to_le16(0xffff);
	buf[0x81] = cpu_to_le16(0x10000 - 0x80);
	return len + 4;
}

static size_t exfat_test_run_past_end(__le16 *buf)
{
	size_t len = exfat_test_run_to_end(buf);

	buf[0x81] = cpu_to_le16(0x10000 - 0x80 + 1);
	return len;
}

static size_t exfat_test_trailing(__le16 *buf)
{
	size_t len = exfat_test_run_to_end(buf);

	buf[0x82] = cpu_to_le16(0x1234);
	buf[0x83] = cpu_to_le16(0xffff);
	return len + 4;
}

static size_t exfat_test_truncated_run(__le16 *buf)
{
	size_t len = exfat_test_ascii(buf);

	buf[0x80] = cpu_to_le16(0xffff);
	return len + 2;
}

/* §7.2.5: a table that gets the first 128 characters wrong is invalid */
static size_t exfat_test_bad_ascii(__le16 *buf)
{
	size_t len = exfat_test_ascii(buf);

	buf['q'] = cpu_to_le16('q');
	return len;
}

static size_t exfat_test_empty(__le16 *buf)
{
	return 0;
}

struct exfat_upcase_case {
	const char		*desc;
	exfat_test_table_fn	build;
	int			err;
	u16			probe;		/* a code point to look up */
	u16			expect;		/* and what it should map to */
};

static const struct exfat_upcase_case exfat_upcase_cases[] = {
	{ "mandatory part only", exfat_test_ascii, 0, 0xe9, 0xe9 },
	{ "specification's example", exfat_test_spec_example, 0, 'z', 'Z' },
	{ "empty run first", exfat_test_leading_empty_run, 0, 'b', 'B' },
	{ "uncompressed, 65536 entries", exfat_test_uncompressed, 0,
	  0xe9, 0xc9 },
	{ "run to the end", exfat_test_run_to_end, 0, 0xfffe, 0xfffe },
	{ "data past the end", exfat_test_trailing, 0, 0x1234, 0x1234 },
	{ "65537 entries", exfat_test_too_long, -EFSCORRUPTED },
	{ "odd length", exfat_test_odd, -EFSCORRUPTED },
	{ "run past the end", exfat_test_run_past_end, -EFSCORRUPTED },
	{ "run marker without count", exfat_test_truncated_run,
	  -EFSCORRUPTED },
	{ "wrong mandatory mapping", exfat_test_bad_ascii, -EFSCORRUPTED },
	{ "empty", exfat_test_empty, -EFSCORRUPTED },
};

KUNIT_ARRAY_PARAM_DESC(exfat_upcase, exfat_upcase_cases, desc);

static void exfat_upcase_expand_test(struct kunit *test)
{
	const struct exfat_upcase_case *c = test->param_value;
	__le16 *buf = kunit_kcalloc(test, EXFAT_UPCASE_ENTRIES + 2,
				    sizeof(*buf), GFP_KERNEL);
	u16 *table = kunit_kmalloc_array(test, EXFAT_UPCASE_ENTRIES,
					 sizeof(*table), GFP_KERNEL);
	int err;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, table);
	err = exfat_upcase_expand(buf, c->build(buf), table);
	KUNIT_EXPECT_EQ(test, err, c->err);
	if (err)
		return;
	KUNIT_EXPECT_EQ(test, table['a'], 'A');
	KUNIT_EXPECT_EQ(test, table['~'], '~');
	KUNIT_EXPECT_EQ(test, table[c->probe], c->expect);
}

static void exfat_name_hash_test(struct kunit *test)
{
	static const __le16 a[] = { cpu_to_le16('a') };
	static const __le16 abc[] = {
		cpu_to_le16('a'), cpu_to_le16('b'), cpu_to_le16('c')
	};
	static const __le16 abc_upper[] = {
		cpu_to_le16('A'), cpu_to_le16('B'), cpu_to_le16('C')
	};
	static const __le16 abc_mixed[] = {
		cpu_to_le16('A'), cpu_to_le16('b'), cpu_to_le16('C')
	};
	static const __le16 hello[] = {
		cpu_to_le16('h'), cpu_to_le16('e'), cpu_to_le16('l'),
		cpu_to_le16('l'), cpu_to_le16('o'), cpu_to_le16('.'),
		cpu_to_le16('t'), cpu_to_le16('x'), cpu_to_le16('t')
	};
	static const __le16 ete[] = {	/* "été" and "ÉTÉ" */
		cpu_to_le16(0xe9), cpu_to_le16('t'), cpu_to_le16(0xe9)
	};
	static const __le16 ete_upper[] = {
		cpu_to_le16(0xc9), cpu_to_le16('T'), cpu_to_le16(0xc9)
	};
	static const __le16 file_ru[] = {	/* "файл" */
		cpu_to_le16(0x0444), cpu_to_le16(0x0430),
		cpu_to_le16(0x0439), cpu_to_le16(0x043b)
	};
	static const u16 hello_cpu[] = {
		'h', 'e', 'l', 'l', 'o', '.', 't', 'x', 't'
	};
	static const u16 ru_cpu[] = { 0x0444, 0x0430, 0x0439, 0x043b };
	u16 *table = exfat_test_default_table(test);

	/* Vectors computed outside the kernel from Figure 4. */
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, a, 1), 0x8020);
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, abc, 3), 0xc82b);
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, hello, 9), 0x3046);
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, ete, 3), 0x4875);
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, file_ru, 4), 0xb816);
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, ete, 1), 0x8064);
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, abc, 0), 0);

	/* Names equal but for case hash alike. */
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, abc_upper, 3),
			exfat_name_hash(table, abc, 3));
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, abc_mixed, 3),
			exfat_name_hash(table, abc, 3));
	KUNIT_EXPECT_EQ(test, exfat_name_hash(table, ete_upper, 3),
			exfat_name_hash(table, ete, 3));
	KUNIT_EXPECT_NE(test, exfat_name_hash(table, abc, 2),
			exfat_name_hash(table, abc, 3));

	/* The CPU-order variant (names from the VFS) gives the same. */
	KUNIT_EXPECT_EQ(test, exfat_name_hash_cpu(table, hello_cpu, 9), 0x3046);
	KUNIT_EXPECT_EQ(test, exfat_name_hash_cpu(table, ru_cpu, 4), 0xb816);

	/* The second hash: case-blind too, and in pieces the same. */
	KUNIT_EXPECT_EQ(test, exfat_name_xhash_cpu(table, hello_cpu, 9), 0xa021);
	KUNIT_EXPECT_EQ(test,
			exfat_name_xhash_end(exfat_name_xhash(table, 0, hello, 9)),
			0xa021);
	KUNIT_EXPECT_EQ(test,
			exfat_name_xhash(table, exfat_name_xhash(table, 0, hello, 4),
					 hello + 4, 5),
			exfat_name_xhash(table, 0, hello, 9));
	KUNIT_EXPECT_EQ(test, exfat_name_xhash(table, 0, abc_mixed, 3),
			exfat_name_xhash(table, 0, abc, 3));
	KUNIT_EXPECT_EQ(test, exfat_name_xhash(table, 0, ete_upper, 3),
			exfat_name_xhash(table, 0, ete, 3));
}

static int exfat_test_cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Names that differ only in their last digits: NameHash gives 1,000 of
 * them 190 values; with the second hash every one is apart.
 */
static void exfat_name_xhash_spread_test(struct kunit *test)
{
	u16 *table = exfat_test_default_table(test);
	unsigned long *seen;
	unsigned int i, nhash = 0, both = 0;
	u16 name[10] = { 'f', 'i', 'l', 'e', '0', '0' };
	u32 *keys;

	seen = kunit_kcalloc(test, BITS_TO_LONGS(1 << 16), sizeof(long),
			     GFP_KERNEL);
	keys = kunit_kcalloc(test, 1000, sizeof(*keys), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, seen);
	KUNIT_ASSERT_NOT_NULL(test, keys);
	for (i = 0; i < 1000; i++) {
		name[6] = '0' + i / 1000 % 10;
		name[7] = '0' + i / 100 % 10;
		name[8] = '0' + i / 10 % 10;
		name[9] = '0' + i % 10;
		keys[i] = exfat_name_hash_cpu(table, name, 10) |
			  exfat_name_xhash_cpu(table, name, 10) << 16;
		if (!__test_and_set_bit(keys[i] & 0xffff, seen))
			nhash++;
	}
	sort(keys, 1000, sizeof(*keys), exfat_test_cmp_u32, NULL);
	for (i = 0; i < 1000; i++)
		both += !i || keys[i] != keys[i - 1];
	KUNIT_EXPECT_EQ(test, nhash, 190);
	KUNIT_EXPECT_EQ(test, both, 1000);
}

/* Timestamps (§7.4.8 - §7.4.10) */

/* A Timestamp from its fields; out-of-range values are kept as given. */
#define EXFAT_TEST_STAMP(y, mo, d, h, mi, s)				\
	((((y) - 1980U) << 25) | ((mo) << 21) | ((d) << 16) |		\
	 ((h) << 11) | ((mi) << 5) | ((s) / 2))

struct exfat_decode_case {
	const char	*desc;
	u32		stamp;
	u8		cs;
	u8		tz;
	int		local_offset;
	time64_t	sec;
	long		nsec;
};

static const struct exfat_decode_case exfat_decode_cases[] = {
	{ "1980-01-01 00:00:00 UTC", EXFAT_TEST_STAMP(1980, 1, 1, 0, 0, 0),
	  0, 0x80, 0, 315532800, 0 },
	{ "2107-12-31 23:59:59.99 UTC",
	  EXFAT_TEST_STAMP(2107, 12, 31, 23, 59, 58), 199, 0x80, 0,
	  4354819199LL, 990000000 },
	{ "10 ms", EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 1, 0x80, 0,
	  1582979696, 10000000 },
	{ "1.50 s", EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 150, 0x80, 0,
	  1582979697, 500000000 },
	{ "UTC-4 (offset 0x70)", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0), 0,
	  0x80 | 0x70, 0, 1592236800, 0 },
	{ "UTC+9 (offset 0x24)", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0), 0,
	  0x80 | 0x24, 0, 1592190000, 0 },
	{ "UTC+5:45 (offset 0x17)", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0),
	  0, 0x80 | 0x17, 0, 1592201700, 0 },
	{ "UTC-16 (offset 0x40)", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0), 0,
	  0x80 | 0x40, 0, 1592280000, 0 },
	{ "UTC+15:45 (offset 0x3f)", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0),
	  0, 0x80 | 0x3f, 0, 1592165700, 0 },
	{ "no offset, local UTC+2", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0),
	  0, 0x00, 120, 1592215200, 0 },
	{ "no offset, local UTC-5", EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0),
	  0, 0x00, -300, 1592240400, 0 },
	{ "offset bits without OffsetValid",
	  EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0), 0, 0x24, 0, 1592222400, 0 },
	{ "OffsetValid overrides the local offset",
	  EXFAT_TEST_STAMP(2020, 6, 15, 12, 0, 0), 0, 0x80, 120, 1592222400,
	  0 },
	{ "month 0", EXFAT_TEST_STAMP(2020, 0, 15, 12, 0, 0), 0, 0x80, 0,
	  1579089600, 0 },
	{ "month 15", EXFAT_TEST_STAMP(2020, 15, 15, 12, 0, 0), 0, 0x80, 0,
	  1608033600, 0 },
	{ "day 0", EXFAT_TEST_STAMP(2020, 6, 0, 12, 0, 0), 0, 0x80, 0,
	  1591012800, 0 },
	{ "February 31", EXFAT_TEST_STAMP(2021, 2, 31, 12, 0, 0), 0, 0x80, 0,
	  1614513600, 0 },
	{ "February 29, 2100", EXFAT_TEST_STAMP(2100, 2, 29, 12, 0, 0), 0,
	  0x80, 0, 4107499200LL, 0 },
	{ "February 29, 2000", EXFAT_TEST_STAMP(2000, 2, 29, 12, 0, 0), 0,
	  0x80, 0, 951825600, 0 },
	{ "hour 31, minute 63, second 62",
	  EXFAT_TEST_STAMP(2020, 6, 15, 31, 63, 62), 0, 0x80, 0,
	  1592265598, 0 },
	{ "10 ms count 255", EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 255,
	  0x80, 0, 1582979697, 990000000 },
	{ "all ones", 0xffffffff, 0xff, 0xff, 0, 4354820099LL, 990000000 },
	{ "all zeros", 0, 0, 0, 0, 315532800, 0 },
};

KUNIT_ARRAY_PARAM_DESC(exfat_decode, exfat_decode_cases, desc);

static void exfat_time_decode_test(struct kunit *test)
{
	const struct exfat_decode_case *c = test->param_value;
	struct exfat_time t = {
		.stamp = cpu_to_le32(c->stamp),
		.cs = c->cs,
		.tz = c->tz,
	};
	struct timespec64 ts;

	exfat_time_to_ts(&t, c->local_offset, &ts);
	KUNIT_EXPECT_EQ(test, ts.tv_sec, c->sec);
	KUNIT_EXPECT_EQ(test, ts.tv_nsec, c->nsec);
}

struct exfat_encode_case {
	const char	*desc;
	time64_t	sec;
	long		nsec;
	int		local_offset;
	u32		stamp;
	u8		cs;
};

static const struct exfat_encode_case exfat_encode_cases[] = {
	{ "1980-01-01 00:00:00", 315532800, 0, 0,
	  EXFAT_TEST_STAMP(1980, 1, 1, 0, 0, 0), 0 },
	{ "1970 clamps to 1980", 0, 500000000, 0,
	  EXFAT_TEST_STAMP(1980, 1, 1, 0, 0, 0), 0 },
	{ "before 1970 clamps to 1980", -1, 0, 0,
	  EXFAT_TEST_STAMP(1980, 1, 1, 0, 0, 0), 0 },
	{ "2107-12-31 23:59:59.999999999", 4354819199LL, 999999999, 0,
	  EXFAT_TEST_STAMP(2107, 12, 31, 23, 59, 58), 199 },
	{ "2108 clamps to 2107", 4354819200LL, 0, 0,
	  EXFAT_TEST_STAMP(2107, 12, 31, 23, 59, 58), 199 },
	{ "the end of time clamps to 2107", S64_MAX, 0, 0,
	  EXFAT_TEST_STAMP(2107, 12, 31, 23, 59, 58), 199 },
	{ "2038-01-19 03:14:08", 2147483648LL, 0, 0,
	  EXFAT_TEST_STAMP(2038, 1, 19, 3, 14, 8), 0 },
	{ "odd second and 10 ms", 1582979697, 123456789, 0,
	  EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 112 },
	{ "local offset does not matter", 1582979697, 123456789, 120,
	  EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 112 },
	{ "negative nanoseconds", 1582979697, -5, 0,
	  EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 100 },
	{ "nanoseconds past a second", 1582979696, NSEC_PER_SEC + 5, 0,
	  EXFAT_TEST_STAMP(2020, 2, 29, 12, 34, 56), 99 },
};

KUNIT_ARRAY_PARAM_DESC(exfat_encode, exfat_encode_cases, desc);

static void exfat_time_encode_test(struct kunit *test)
{
	const struct exfat_encode_case *c = test->param_value;
	struct timespec64 ts = { .tv_sec = c->sec, .tv_nsec = c->nsec };
	struct exfat_time t;

	exfat_ts_to_time(&ts, c->local_offset, &t);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(t.stamp), c->stamp);
	KUNIT_EXPECT_EQ(test, t.cs, c->cs);
	KUNIT_EXPECT_EQ(test, t.tz, EXFAT_TZ_VALID);
}

/* Every stamp in range, to 10 ms, survives encoding and decoding. */
static void exfat_time_round_trip_test(struct kunit *test)
{
	time64_t sec;
	long nsec = 0;

	for (sec = 315532800; sec <= 4354819199LL; sec += 3600 * 997 + 1) {
		struct timespec64 in = { .tv_sec = sec, .tv_nsec = nsec };
		struct timespec64 out;
		struct exfat_time t;

		exfat_ts_to_time(&in, 0, &t);
		exfat_time_to_ts(&t, -600, &out);
		KUNIT_EXPECT_EQ(test, out.tv_sec, in.tv_sec);
		KUNIT_EXPECT_EQ(test, out.tv_nsec, in.tv_nsec);
		nsec = (nsec + 170000000) % NSEC_PER_SEC;
	}
}

/* The root scan: which bitmap, which up-case table, GUID and label. */
static void exfat_parse_root_test(struct kunit *test)
{
	struct exfat_root_info *ri = kunit_kzalloc(test, sizeof(*ri),
						   GFP_KERNEL);
	static const u16 name[] = { 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H',
				    'I', 'J', 'K', 'L', 'M' };
	union exfat_dentry de = {};

	KUNIT_ASSERT_NOT_NULL(test, ri);

	/* the bitmap of the other FAT is not ours */
	de.bitmap.type = EXFAT_TYPE_BITMAP;
	de.bitmap.flags = 1;
	de.bitmap.first_cluster = cpu_to_le32(9);
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 0));
	KUNIT_EXPECT_FALSE(test, ri->have_bitmap);
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	KUNIT_EXPECT_TRUE(test, ri->have_bitmap);
	KUNIT_EXPECT_EQ(test, ri->bitmap_clu, 9U);
	/* a second one for the same FAT is refused */
	KUNIT_EXPECT_NOT_NULL(test, exfat_parse_root_entry(ri, &de, 1));

	/* the first up-case table counts */
	memset(&de, 0, sizeof(de));
	de.upcase.type = EXFAT_TYPE_UPCASE;
	de.upcase.first_cluster = cpu_to_le32(3);
	de.upcase.checksum = cpu_to_le32(0xe619d30d);
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	de.upcase.first_cluster = cpu_to_le32(4);
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	KUNIT_EXPECT_EQ(test, ri->upcase_clu, 3U);
	KUNIT_EXPECT_EQ(test, ri->upcase_csum, 0xe619d30dU);

	/* a GUID entry counts only with its checksum and no secondaries */
	memset(&de, 0, sizeof(de));
	de.guid.type = EXFAT_TYPE_GUID;
	de.guid.guid[0] = 0x42;
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	KUNIT_EXPECT_TRUE(test, ri->bad_guid);
	KUNIT_EXPECT_FALSE(test, ri->have_guid);
	de.guid.set_checksum = cpu_to_le16(exfat_set_checksum(&de, 1));
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	KUNIT_EXPECT_TRUE(test, ri->have_guid);
	KUNIT_EXPECT_EQ(test, ri->guid[0], 0x42);

	/* a label: at most 11 units, whatever CharacterCount says */
	exfat_make_label_entry(&de, name, ARRAY_SIZE(name));
	KUNIT_EXPECT_EQ(test, de.label.char_count, EXFAT_LABEL_MAX_LEN);
	de.label.char_count = 200;
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	KUNIT_EXPECT_EQ(test, ri->label_len, EXFAT_LABEL_MAX_LEN);
	KUNIT_EXPECT_EQ(test, ri->label[10], 'K');

	/* files and unknown benign primaries are not the scan's business */
	memset(&de, 0, sizeof(de));
	de.generic.type = EXFAT_TYPE_PADDING;
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
	de.generic.type = EXFAT_TYPE_FILE;
	KUNIT_EXPECT_NULL(test, exfat_parse_root_entry(ri, &de, 1));
}

/* A bitmap of 150 bits in three chunks of 64, for exfat_bitmap_find_free(). */
static const void *exfat_test_chunk(const struct exfat_bitmap *bm,
				    unsigned int i)
{
	return (const u8 *)bm->priv + i * 8;
}

static void exfat_test_bits(u8 *map, u32 from, u32 to, bool set)
{
	for (; from < to; from++) {
		if (set)
			map[from / 8] |= 1 << (from % 8);
		else
			map[from / 8] &= ~(1 << (from % 8));
	}
}

static void exfat_bitmap_find_free_test(struct kunit *test)
{
	u8 map[24];
	struct exfat_bitmap bm = {
		.chunk = exfat_test_chunk, .priv = map,
		.chunk_bits = 64, .nbits = 150,
	};
	u32 first = U32_MAX;

	memset(map, 0xff, sizeof(map));
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 0, 150, 100, &first),
			0);
	/* a run across the first chunk boundary */
	exfat_test_bits(map, 60, 71, false);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 0, 150, 100, &first),
			11);
	KUNIT_EXPECT_EQ(test, first, 60);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 0, 150, 5, &first),
			5);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 63, 150, 100, &first),
			8);
	KUNIT_EXPECT_EQ(test, first, 63);
	/* the run must start below limit, and may go past it */
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 0, 60, 100, &first),
			0);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 0, 61, 100, &first),
			11);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 71, 150, 100, &first),
			0);
	/* bits past nbits in the last chunk do not count */
	exfat_test_bits(map, 150, 192, false);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 71, 192, 100, &first),
			0);
	/* a run up to the end of the bitmap, across two chunks */
	exfat_test_bits(map, 120, 150, false);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 71, 150, 100, &first),
			30);
	KUNIT_EXPECT_EQ(test, first, 120);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 149, 150, 1, &first),
			1);
	KUNIT_EXPECT_EQ(test, first, 149);
	KUNIT_EXPECT_EQ(test, exfat_bitmap_find_free(&bm, 0, 150, 0, &first),
			0);
}

static struct kunit_case exfat_format_test_cases[] = {
	KUNIT_CASE_PARAM(exfat_boot_sector_test, exfat_boot_gen_params),
	KUNIT_CASE(exfat_boot_checksum_test),
	KUNIT_CASE(exfat_boot_checksum_vector_test),
	KUNIT_CASE(exfat_set_checksum_test),
	KUNIT_CASE_PARAM(exfat_verify_file_set_test, exfat_set_gen_params),
	KUNIT_CASE(exfat_upcase_checksum_test),
	KUNIT_CASE(exfat_default_upcase_test),
	KUNIT_CASE_PARAM(exfat_upcase_expand_test, exfat_upcase_gen_params),
	KUNIT_CASE(exfat_name_hash_test),
	KUNIT_CASE(exfat_name_xhash_spread_test),
	KUNIT_CASE_PARAM(exfat_time_decode_test, exfat_decode_gen_params),
	KUNIT_CASE_PARAM(exfat_time_encode_test, exfat_encode_gen_params),
	KUNIT_CASE(exfat_time_round_trip_test),
	KUNIT_CASE(exfat_parse_root_test),
	KUNIT_CASE(exfat_bitmap_find_free_test),
	{}
};

static struct kunit_suite exfat_format_test_suite = {
	.name = "exfat2_format",
	.test_cases = exfat_format_test_cases,
};

kunit_test_suite(exfat_format_test_suite);
