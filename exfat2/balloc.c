// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation bitmap (§7.1): one bit per cluster of the heap, kept in the
 * buffer cache for the life of the mount.
 */
#include <linux/slab.h>
#include <linux/bitops.h>
#include <linux/unaligned.h>
#include "exfat.h"

static unsigned int exfat_bitmap_bits_per_bh(const struct exfat_sb_info *sbi)
{
	return 8U << sbi->sect_shift;
}

/* Set bits among the first nbits of a little-endian bitmap. */
static u32 exfat_weight_le(const u8 *map, unsigned int nbits)
{
	unsigned int i, nbytes = nbits / 8;
	u32 w = 0;

	/* a population count does not depend on the bit order of a word */
	for (i = 0; i + sizeof(long) <= nbytes; i += sizeof(long))
		w += hweight_long(get_unaligned((const unsigned long *)(map + i)));
	for (; i < nbytes; i++)
		w += hweight8(map[i]);
	if (nbits % 8)
		w += hweight8(map[nbytes] & ((1U << (nbits % 8)) - 1));
	return w;
}

static u32 exfat_count_free(struct exfat_sb_info *sbi)
{
	unsigned int per_bh = exfat_bitmap_bits_per_bh(sbi);
	u32 used = 0, left = sbi->clu_count;
	unsigned int i;

	for (i = 0; i < sbi->bitmap_nr_bh && left; i++) {
		unsigned int n = min(left, per_bh);

		used += exfat_weight_le(exfat_sector_data(sbi->bitmap_bh[i]), n);
		left -= n;
	}
	return sbi->clu_count - used;
}

int exfat_load_bitmap(struct super_block *sb, u32 clu, u64 len)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	u64 need = DIV_ROUND_UP((u64)sbi->clu_count, 8);
	u32 nr_clu, i, c;
	sector_t sect;
	int err;

	if (len < need || len > need + sbi->clu_size) {
		exfat_err(sb, "allocation bitmap is %llu bytes, %llu expected",
			  len, need);
		return -EFSCORRUPTED;
	}
	nr_clu = exfat_bytes_to_clus(sbi, len);
	if (!exfat_clu_valid(sbi, clu) || nr_clu > sbi->clu_count ||
	    clu - EXFAT_FIRST_CLUSTER > sbi->clu_count - nr_clu) {
		exfat_err(sb, "allocation bitmap at invalid cluster %u", clu);
		return -EFSCORRUPTED;
	}

	/* §7.1: the bitmap is contiguous (mkfs and every writer make it so) */
	sbi->bitmap_nr_bh = DIV_ROUND_UP(need, 1U << sbi->sect_shift);
	sbi->bitmap_bh = kvcalloc(sbi->bitmap_nr_bh, sizeof(*sbi->bitmap_bh),
				  GFP_KERNEL);
	if (!sbi->bitmap_bh)
		return -ENOMEM;
	sect = exfat_clu_to_sect(sbi, clu);
	exfat_readahead_sectors(sb, sect, sbi->bitmap_nr_bh);
	for (i = 0; i < sbi->bitmap_nr_bh; i++) {
		struct buffer_head *bh = exfat_read_sector(sb, sect + i);

		if (IS_ERR(bh)) {
			err = PTR_ERR(bh);
			goto fail;
		}
		sbi->bitmap_bh[i] = bh;
	}
	sbi->bitmap_clu = clu;

	/* The bitmap's own clusters must be marked in use (CVE-2025-40307). */
	for (c = clu; c < clu + nr_clu; c++) {
		if (!exfat_clu_in_use(sb, c)) {
			exfat_err(sb, "allocation bitmap does not mark its own cluster %u in use",
				  c);
			err = -EFSCORRUPTED;
			goto fail;
		}
	}
	sbi->free_clusters = exfat_count_free(sbi);
	return 0;
fail:
	exfat_free_bitmap(sb);
	return err;
}

void exfat_free_bitmap(struct super_block *sb)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int i;

	if (!sbi->bitmap_bh)
		return;
	for (i = 0; i < sbi->bitmap_nr_bh; i++)
		if (sbi->bitmap_bh[i])
			exfat_put_sector(sbi->bitmap_bh[i]);
	kvfree(sbi->bitmap_bh);
	sbi->bitmap_bh = NULL;
	sbi->bitmap_nr_bh = 0;
}

bool exfat_clu_in_use(struct super_block *sb, u32 clu)
{
	struct exfat_sb_info *sbi = EXFAT_SB(sb);
	unsigned int per_bh = exfat_bitmap_bits_per_bh(sbi);
	u32 bit = clu - EXFAT_FIRST_CLUSTER;

	return test_bit_le(bit % per_bh,
			   exfat_sector_data(sbi->bitmap_bh[bit / per_bh]));
}
