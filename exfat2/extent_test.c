// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the extent map (extent.c), included by extent.c.
 */
#include <kunit/test.h>

/* The extent of fclu: want_clu and want_len from it on, or none (0). */
static void exfat_expect_extent(struct kunit *test,
				const struct exfat_extent_map *map, u32 fclu,
				u32 want_clu, u32 want_len)
{
	const struct exfat_extent *ext = exfat_extent_find(map, fclu);

	if (!want_len) {
		KUNIT_EXPECT_NULL(test, ext);
		return;
	}
	KUNIT_ASSERT_NOT_NULL(test, ext);
	KUNIT_EXPECT_EQ(test, ext->clu + (fclu - ext->fclu), want_clu);
	KUNIT_EXPECT_EQ(test, ext->len - (fclu - ext->fclu), want_len);
}

static void exfat_extent_map_test(struct kunit *test)
{
	struct exfat_extent_map map = {};
	u32 i;

	exfat_expect_extent(test, &map, 0, 0, 0);
	/* runs that continue each other merge: 100..109 */
	KUNIT_ASSERT_EQ(test, exfat_extent_add(&map, 100, 4), 0);
	KUNIT_ASSERT_EQ(test, exfat_extent_add(&map, 104, 6), 0);
	KUNIT_EXPECT_EQ(test, map.nr, 1);
	KUNIT_EXPECT_EQ(test, map.fclus, 10);
	exfat_expect_extent(test, &map, 7, 107, 3);
	exfat_expect_extent(test, &map, 10, 0, 0);
	/* 20 one-cluster runs going backwards on the disk: the array grows */
	for (i = 0; i < 20; i++)
		KUNIT_ASSERT_EQ(test, exfat_extent_add(&map, 500 - 2 * i, 1), 0);
	KUNIT_EXPECT_EQ(test, map.nr, 21);
	KUNIT_EXPECT_GE(test, map.cap, 21);
	KUNIT_EXPECT_EQ(test, map.fclus, 30);
	for (i = 0; i < 20; i++)
		exfat_expect_extent(test, &map, 10 + i, 500 - 2 * i, 1);
	exfat_expect_extent(test, &map, 0, 100, 10);
	exfat_expect_extent(test, &map, 30, 0, 0);
	/* cut inside the first extent, then at an extent boundary */
	exfat_extent_truncate(&map, 12);
	KUNIT_EXPECT_EQ(test, map.nr, 3);
	KUNIT_EXPECT_EQ(test, map.fclus, 12);
	exfat_expect_extent(test, &map, 12, 0, 0);
	exfat_extent_truncate(&map, 6);
	KUNIT_EXPECT_EQ(test, map.nr, 1);
	exfat_expect_extent(test, &map, 5, 105, 1);
	exfat_expect_extent(test, &map, 6, 0, 0);
	/* growth after a cut continues from the cut */
	KUNIT_ASSERT_EQ(test, exfat_extent_add(&map, 300, 2), 0);
	exfat_expect_extent(test, &map, 6, 300, 2);
	KUNIT_EXPECT_EQ(test, map.fclus, 8);
	exfat_extent_truncate(&map, 0);
	KUNIT_EXPECT_EQ(test, map.nr, 0);
	KUNIT_EXPECT_EQ(test, map.fclus, 0);
	exfat_extent_free(&map);
	KUNIT_EXPECT_NULL(test, map.ext);
	KUNIT_EXPECT_EQ(test, map.cap, 0);
}

static struct kunit_case exfat_extent_test_cases[] = {
	KUNIT_CASE(exfat_extent_map_test),
	{}
};

static struct kunit_suite exfat_extent_test_suite = {
	.name = "exfat2_extent",
	.test_cases = exfat_extent_test_cases,
};

kunit_test_suite(exfat_extent_test_suite);
