/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-disk format of exFAT, as described by Microsoft's "exFAT file system
 * specification" (section numbers below refer to it).  Only the byte layout
 * and the constants that go with it live here; in-core state is in exfat.h.
 *
 * All multi-byte fields are little endian.
 */
#ifndef _EXFAT2_FORMAT_H
#define _EXFAT2_FORMAT_H

#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/stddef.h>

/* §3.1: Main and Backup Boot Sector */
#define EXFAT_BOOT_FS_NAME		"EXFAT   "
#define EXFAT_BOOT_FS_NAME_LEN		8
#define EXFAT_BOOT_SIGNATURE		0xAA55
#define EXFAT_EXT_BOOT_SIGNATURE	0xAA550000
#define EXFAT_BOOT_REGION_SECTORS	12	/* §3: 12 sectors per boot region */
#define EXFAT_BACKUP_BOOT_SECTOR	12	/* first sector of the backup region */
#define EXFAT_BOOT_CHECKSUM_SECTOR	11	/* §3.4: last sector of a region */
#define EXFAT_MIN_SECTOR_SHIFT		9
#define EXFAT_MAX_SECTOR_SHIFT		12
#define EXFAT_MAX_CLUSTER_SHIFT		25	/* §3.1.15: clusters up to 32 MiB */
#define EXFAT_MIN_FAT_OFFSET		24	/* §3.1.5: after both boot regions */
#define EXFAT_REVISION_MAJOR		1

struct exfat_boot_sector {
	__u8	jump_boot[3];		/* EB 76 90 */
	__u8	fs_name[8];		/* "EXFAT   " */
	__u8	must_be_zero[53];	/* where a FAT BPB would be */
	__le64	partition_offset;	/* in sectors, informational */
	__le64	vol_length;		/* in sectors */
	__le32	fat_offset;		/* in sectors from the volume start */
	__le32	fat_length;		/* in sectors, per FAT */
	__le32	clu_heap_offset;	/* in sectors from the volume start */
	__le32	clu_count;		/* clusters in the heap */
	__le32	root_cluster;		/* first cluster of the root directory */
	__le32	vol_serial;
	__le16	fs_revision;		/* major in the high byte */
	__le16	vol_flags;		/* EXFAT_VF_* */
	__u8	sector_shift;		/* log2(bytes per sector), 9..12 */
	__u8	cluster_shift;		/* log2(sectors per cluster) */
	__u8	num_fats;		/* 1, or 2 for TexFAT */
	__u8	drive_select;
	__u8	percent_in_use;		/* 0..100, or 0xff: unknown */
	__u8	reserved[7];
	__u8	boot_code[390];
	__le16	boot_signature;		/* EXFAT_BOOT_SIGNATURE */
} __packed;

/* §3.1.13: VolumeFlags */
#define EXFAT_VF_ACTIVE_FAT		0x0001	/* 0: first FAT and bitmap */
#define EXFAT_VF_DIRTY			0x0002
#define EXFAT_VF_MEDIA_FAILURE		0x0004
#define EXFAT_VF_CLEAR_TO_ZERO		0x0008

#define EXFAT_PERCENT_UNKNOWN		0xff

/*
 * §3.4: the boot checksum covers sectors 0..10 of a region, except the
 * fields that change while the volume is in use.
 */
#define EXFAT_BOOT_CSUM_SKIP_FLAGS	offsetof(struct exfat_boot_sector, vol_flags)
#define EXFAT_BOOT_CSUM_SKIP_PERCENT	offsetof(struct exfat_boot_sector, percent_in_use)

/* §4.1: FAT entry values */
#define EXFAT_FIRST_CLUSTER		2
#define EXFAT_MAX_CLUSTER_COUNT		0xFFFFFFF5U	/* 2^32 - 11 */
#define EXFAT_FAT_BAD			0xFFFFFFF7U
#define EXFAT_FAT_EOC			0xFFFFFFFFU
#define EXFAT_FAT_MEDIA			0xFFFFFFF8U	/* FatEntry[0] */
#define EXFAT_FAT_ENTRY_SIZE		4

/* §6.2: EntryType byte */
#define EXFAT_TYPE_CODE_MASK		0x1f
#define EXFAT_TYPE_BENIGN		0x20	/* TypeImportance */
#define EXFAT_TYPE_SECONDARY		0x40	/* TypeCategory */
#define EXFAT_TYPE_IN_USE		0x80

#define EXFAT_TYPE_EOD			0x00	/* end of directory */
#define EXFAT_TYPE_BITMAP		0x81	/* §7.1 */
#define EXFAT_TYPE_UPCASE		0x82	/* §7.2 */
#define EXFAT_TYPE_LABEL		0x83	/* §7.3 */
#define EXFAT_TYPE_FILE			0x85	/* §7.4 */
#define EXFAT_TYPE_GUID			0xa0	/* §7.5 */
#define EXFAT_TYPE_PADDING		0xa1	/* TexFAT padding */
#define EXFAT_TYPE_ACL			0xa2	/* Windows CE ACL */
#define EXFAT_TYPE_STREAM		0xc0	/* §7.6 */
#define EXFAT_TYPE_NAME			0xc1	/* §7.7 */
#define EXFAT_TYPE_VENDOR_EXT		0xe0	/* §7.8 */
#define EXFAT_TYPE_VENDOR_ALLOC		0xe1	/* §7.9 */

#define EXFAT_DENTRY_SIZE		32
#define EXFAT_DENTRY_SHIFT		5

/* §6.3.4, §6.4.2: GeneralPrimaryFlags / GeneralSecondaryFlags */
#define EXFAT_FLAG_ALLOC_POSSIBLE	0x01
#define EXFAT_FLAG_NO_FAT_CHAIN		0x02

/* §7.4.4: FileAttributes */
#define EXFAT_ATTR_READONLY		0x0001
#define EXFAT_ATTR_HIDDEN		0x0002
#define EXFAT_ATTR_SYSTEM		0x0004
#define EXFAT_ATTR_VOLUME		0x0008	/* reserved in exFAT */
#define EXFAT_ATTR_DIRECTORY		0x0010
#define EXFAT_ATTR_ARCHIVE		0x0020
#define EXFAT_ATTR_RWMASK		(EXFAT_ATTR_READONLY | EXFAT_ATTR_HIDDEN | \
					 EXFAT_ATTR_SYSTEM | EXFAT_ATTR_ARCHIVE)

/* §7.4: a file set is a File entry, a Stream entry and 1..17 Name entries */
#define EXFAT_FILE_MIN_SECONDARY	2
#define EXFAT_FILE_MAX_SECONDARY	18
#define EXFAT_MAX_SET_ENTRIES		(1 + 255)	/* SecondaryCount is a byte */
#define EXFAT_NAME_PER_ENTRY		15
#define EXFAT_MAX_NAME_LEN		255	/* UTF-16 code units */
#define EXFAT_LABEL_MAX_LEN		11

/* §7.2: the up-case table maps at most every 16-bit code point */
#define EXFAT_UPCASE_MAX_BYTES		(0x10000 * 2)
#define EXFAT_UPCASE_RUN_MARK		0xFFFF	/* compressed form: run of identity */

/* §6.2.2: a directory is at most 256 MiB */
#define EXFAT_MAX_DIR_SIZE		(256U << 20)

/* §7.4.8: timestamps */
#define EXFAT_TZ_VALID			0x80
#define EXFAT_TZ_OFFSET_MASK		0x7f
#define EXFAT_MAX_10MS			199

struct exfat_dentry_bitmap {		/* 0x81 */
	__u8	type;
	__u8	flags;			/* bit 0: second bitmap (TexFAT) */
	__u8	reserved[18];
	__le32	first_cluster;
	__le64	data_length;
} __packed;

struct exfat_dentry_upcase {		/* 0x82 */
	__u8	type;
	__u8	reserved1[3];
	__le32	checksum;
	__u8	reserved2[12];
	__le32	first_cluster;
	__le64	data_length;
} __packed;

struct exfat_dentry_label {		/* 0x83 */
	__u8	type;
	__u8	char_count;
	__le16	label[EXFAT_LABEL_MAX_LEN];
	__u8	reserved[8];
} __packed;

struct exfat_dentry_file {		/* 0x85 */
	__u8	type;
	__u8	secondary_count;
	__le16	set_checksum;
	__le16	attr;
	__le16	reserved1;
	__le32	create_time;
	__le32	modify_time;
	__le32	access_time;
	__u8	create_10ms;
	__u8	modify_10ms;
	__u8	create_tz;
	__u8	modify_tz;
	__u8	access_tz;
	__u8	reserved2[7];
} __packed;

struct exfat_dentry_guid {		/* 0xa0 */
	__u8	type;
	__u8	secondary_count;
	__le16	set_checksum;
	__le16	flags;
	__u8	guid[16];
	__u8	reserved[10];
} __packed;

struct exfat_dentry_stream {		/* 0xc0 */
	__u8	type;
	__u8	flags;
	__u8	reserved1;
	__u8	name_len;
	__le16	name_hash;
	__le16	reserved2;
	__le64	valid_size;
	__le32	reserved3;
	__le32	first_cluster;
	__le64	size;
} __packed;

struct exfat_dentry_name {		/* 0xc1 */
	__u8	type;
	__u8	flags;
	__le16	name[EXFAT_NAME_PER_ENTRY];
} __packed;

/* §6.3, §6.4: the fields every primary and every secondary entry share */
struct exfat_dentry_generic {
	__u8	type;
	__u8	byte1;			/* SecondaryCount or secondary flags */
	__le16	set_checksum;		/* primary entries only */
	__le16	primary_flags;		/* primary entries only */
	__u8	custom[14];
	__le32	first_cluster;
	__le64	data_length;
} __packed;

union exfat_dentry {
	__u8				raw[EXFAT_DENTRY_SIZE];
	struct exfat_dentry_generic	generic;
	struct exfat_dentry_bitmap	bitmap;
	struct exfat_dentry_upcase	upcase;
	struct exfat_dentry_label	label;
	struct exfat_dentry_file	file;
	struct exfat_dentry_guid	guid;
	struct exfat_dentry_stream	stream;
	struct exfat_dentry_name	name;
} __packed;

/* §6.3.3: SetChecksum skips its own two bytes in the primary entry */
#define EXFAT_SET_CSUM_OFFSET		offsetof(struct exfat_dentry_file, set_checksum)

static_assert(sizeof(struct exfat_boot_sector) == 512);
static_assert(offsetof(struct exfat_boot_sector, partition_offset) == 64);
static_assert(offsetof(struct exfat_boot_sector, fat_offset) == 80);
static_assert(offsetof(struct exfat_boot_sector, root_cluster) == 96);
static_assert(offsetof(struct exfat_boot_sector, vol_flags) == 106);
static_assert(offsetof(struct exfat_boot_sector, sector_shift) == 108);
static_assert(offsetof(struct exfat_boot_sector, percent_in_use) == 112);
static_assert(offsetof(struct exfat_boot_sector, boot_code) == 120);
static_assert(offsetof(struct exfat_boot_sector, boot_signature) == 510);
static_assert(sizeof(struct exfat_dentry_bitmap) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_upcase) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_label) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_file) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_guid) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_stream) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_name) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(struct exfat_dentry_generic) == EXFAT_DENTRY_SIZE);
static_assert(sizeof(union exfat_dentry) == EXFAT_DENTRY_SIZE);
static_assert(offsetof(struct exfat_dentry_generic, first_cluster) == 20);
static_assert(offsetof(struct exfat_dentry_stream, first_cluster) == 20);
static_assert(offsetof(struct exfat_dentry_stream, valid_size) == 8);
static_assert(offsetof(struct exfat_dentry_stream, size) == 24);
static_assert(offsetof(struct exfat_dentry_file, create_10ms) == 20);
static_assert(offsetof(struct exfat_dentry_name, name) == 2);
static_assert(offsetof(struct exfat_dentry_upcase, checksum) == 4);

/* §6.2: EntryType bit helpers */
static inline bool exfat_type_in_use(u8 type)
{
	return type & EXFAT_TYPE_IN_USE;
}

static inline bool exfat_type_secondary(u8 type)
{
	return type & EXFAT_TYPE_SECONDARY;
}

static inline bool exfat_type_benign(u8 type)
{
	return type & EXFAT_TYPE_BENIGN;
}

#endif /* _EXFAT2_FORMAT_H */
