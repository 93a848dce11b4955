// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the directory index.  Included at the end of dindex.c.
 */
#include <kunit/test.h>

static struct exfat_dindex *exfat_test_dindex(struct kunit *test, u32 slots)
{
	struct exfat_dindex *idx = exfat_dindex_alloc(slots);

	KUNIT_ASSERT_NOT_NULL(test, idx);
	return idx;
}

/* The second hash the tests give a set: any fixed function of the first. */
#define XH(hash)	((u16)((hash) * 7 + 1))

/* Is eidx among the sets the index gives for hash? */
static bool exfat_test_dindex_has(const struct exfat_dindex *idx, u16 hash,
				  u32 eidx)
{
	u32 cursor = 0, e;

	while ((e = exfat_dindex_next(idx, hash, XH(hash), &cursor)) !=
	       U32_MAX)
		if (e == eidx)
			return true;
	return false;
}

static unsigned int exfat_test_dindex_count(const struct exfat_dindex *idx,
					    u16 hash)
{
	u32 cursor = 0;
	unsigned int n = 0;

	while (exfat_dindex_next(idx, hash, XH(hash), &cursor) != U32_MAX)
		n++;
	return n;
}

static void exfat_dindex_hash_test(struct kunit *test)
{
	struct exfat_dindex *idx = exfat_test_dindex(test, 64);

	KUNIT_EXPECT_EQ(test, exfat_test_dindex_count(idx, 0x1234), 0);
	KUNIT_EXPECT_EQ(test, exfat_dindex_add(idx, 10, 0x1234, XH(0x1234)), 0);
	KUNIT_EXPECT_EQ(test, exfat_dindex_add(idx, 20, 0x1234, XH(0x1234)), 0);
	/* another hash */
	KUNIT_EXPECT_EQ(test, exfat_dindex_add(idx, 30, 0x1244, XH(0x1244)), 0);
	KUNIT_EXPECT_EQ(test, exfat_test_dindex_count(idx, 0x1234), 2);
	KUNIT_EXPECT_EQ(test, exfat_test_dindex_count(idx, 0x1244), 1);
	KUNIT_EXPECT_EQ(test, exfat_test_dindex_count(idx, 0x4321), 0);
	KUNIT_EXPECT_TRUE(test, exfat_test_dindex_has(idx, 0x1234, 10));
	KUNIT_EXPECT_TRUE(test, exfat_test_dindex_has(idx, 0x1234, 20));
	KUNIT_EXPECT_FALSE(test, exfat_test_dindex_has(idx, 0x1234, 30));
	/* the same NameHash with another second hash: not a candidate */
	KUNIT_EXPECT_EQ(test, exfat_dindex_add(idx, 50, 0x1234, 0), 0);
	KUNIT_EXPECT_EQ(test, exfat_test_dindex_count(idx, 0x1234), 2);
	KUNIT_EXPECT_FALSE(test, exfat_test_dindex_has(idx, 0x1234, 50));
	KUNIT_EXPECT_TRUE(test, exfat_dindex_remove(idx, 50, 0x1234));

	KUNIT_EXPECT_TRUE(test, exfat_dindex_remove(idx, 10, 0x1234));
	KUNIT_EXPECT_FALSE(test, exfat_dindex_remove(idx, 10, 0x1234));
	KUNIT_EXPECT_FALSE(test, exfat_test_dindex_has(idx, 0x1234, 10));
	KUNIT_EXPECT_TRUE(test, exfat_test_dindex_has(idx, 0x1234, 20));
	/* hash unknown: found anyway */
	KUNIT_EXPECT_TRUE(test, exfat_dindex_remove(idx, 30, -1));
	KUNIT_EXPECT_EQ(test, idx->nr_sets, 1);
	/* a freed node is used again */
	KUNIT_EXPECT_EQ(test, exfat_dindex_add(idx, 40, 0x1244, XH(0x1244)), 0);
	KUNIT_EXPECT_EQ(test, idx->nr_nodes, 4);
	KUNIT_EXPECT_TRUE(test, exfat_test_dindex_has(idx, 0x1244, 40));
	exfat_dindex_free(idx);
}

/* Many sets: the table grows and still finds every one. */
static void exfat_dindex_rehash_test(struct kunit *test)
{
	struct exfat_dindex *idx = exfat_test_dindex(test, 30000);
	u32 i;

	for (i = 0; i < 10000; i++)
		KUNIT_ASSERT_EQ(test,
				exfat_dindex_add(idx, i * 3, (i * 40503) & 0xffff,
						 XH((i * 40503) & 0xffff)), 0);
	KUNIT_EXPECT_GT(test, idx->hash_bits, 11U);
	for (i = 0; i < 10000; i += 2) {
		bool gone = exfat_dindex_remove(idx, i * 3,
						(i * 40503) & 0xffff);

		KUNIT_ASSERT_TRUE(test, gone);
	}
	for (i = 0; i < 10000; i++)
		KUNIT_EXPECT_EQ(test,
				exfat_test_dindex_has(idx, (i * 40503) & 0xffff,
						      i * 3),
				(bool)(i & 1));
	KUNIT_EXPECT_EQ(test, idx->nr_sets, 5000);
	exfat_dindex_free(idx);
}

/*
 * NameHashes that share their low bits, as those of names differing in
 * their last characters do, still spread over the buckets.
 */
static void exfat_dindex_spread_test(struct kunit *test)
{
	struct exfat_dindex *idx = exfat_test_dindex(test, 1024);
	unsigned int b, len, longest = 0;
	u32 i, n;

	for (i = 0; i < 128; i++)
		KUNIT_ASSERT_EQ(test, exfat_dindex_add(idx, i * 3, i << 9,
						       XH(i << 9)), 0);
	KUNIT_EXPECT_GE(test, idx->hash_bits, 6U);
	for (b = 0; b < 1U << idx->hash_bits; b++) {
		for (len = 0, n = idx->heads[b]; n != EXFAT_DINDEX_NONE;
		     n = idx->nodes[n - 1].next)
			len++;
		longest = max(longest, len);
	}
	KUNIT_EXPECT_LE(test, longest, 8U);
	exfat_dindex_free(idx);
}

static void exfat_dindex_mark(struct exfat_dindex *idx, u32 from, u32 to,
			      u8 type)
{
	for (; from < to; from++)
		exfat_dindex_set_type(idx, from, type);
}

/*
 * The run of nr entries found from start (sectors of 16 entries), busy_nr
 * from busy not free: first (U32_MAX: none) and the first free entry.
 */
static void exfat_expect_run(struct kunit *test,
			     const struct exfat_dindex *idx, u32 start,
			     unsigned int nr, u32 busy, unsigned int busy_nr,
			     u32 want_first, u32 want_free)
{
	u32 first = U32_MAX, free;
	bool found = exfat_dindex_find_run(idx, start, nr, busy, busy_nr, 16,
					   &first, &free);

	KUNIT_EXPECT_EQ(test, found, want_first != U32_MAX);
	if (found)
		KUNIT_EXPECT_EQ(test, first, want_first);
	KUNIT_EXPECT_EQ(test, free, want_free);
}

/* Runs found as exfat_find_slots() finds them. */
static void exfat_dindex_run_test(struct kunit *test)
{
	struct exfat_dindex *idx = exfat_test_dindex(test, 64);

	exfat_dindex_mark(idx, 0, 5, EXFAT_TYPE_FILE);
	exfat_dindex_mark(idx, 5, 64, EXFAT_TYPE_FILE & ~EXFAT_TYPE_IN_USE);
	exfat_expect_run(test, idx, 0, 3, 0, 0, 5, 5);
	/* 12 entries do not fit in 5..15: the next sector */
	exfat_expect_run(test, idx, 0, 12, 0, 0, 16, 5);
	/* entries promised to another set are not free */
	exfat_expect_run(test, idx, 0, 3, 5, 2, 7, 7);
	/* more than a sector's worth: File and Stream in one sector */
	exfat_expect_run(test, idx, 0, 20, 0, 0, 5, 5);
	exfat_dindex_mark(idx, 5, 15, EXFAT_TYPE_FILE);
	exfat_expect_run(test, idx, 0, 20, 0, 0, 16, 15);
	exfat_expect_run(test, idx, 0, 2, 0, 0, 16, 15);
	exfat_dindex_mark(idx, 5, 15, EXFAT_TYPE_FILE & ~EXFAT_TYPE_IN_USE);
	/* an end of directory at 10 in mid-sector: the set starts there */
	exfat_dindex_mark(idx, 10, 64, EXFAT_TYPE_EOD);
	exfat_expect_run(test, idx, 0, 12, 0, 0, 10, 5);
	/* nothing free from 16 on */
	exfat_dindex_mark(idx, 16, 64, EXFAT_TYPE_STREAM);
	exfat_expect_run(test, idx, 16, 1, 0, 0, U32_MAX, 64);
	/* growth adds end-of-directory entries */
	KUNIT_EXPECT_EQ(test, exfat_dindex_grow(idx, 200), 0);
	KUNIT_EXPECT_EQ(test, idx->nr_slots, 200);
	exfat_expect_run(test, idx, 16, 17, 0, 0, 64, 64);
	KUNIT_EXPECT_TRUE(test, test_bit(199, idx->eod));
	KUNIT_EXPECT_TRUE(test, test_bit(20, idx->in_use));
	KUNIT_EXPECT_FALSE(test, test_bit(20, idx->eod));
	/* a hint moves back to an entry freed, not to one already free */
	exfat_dindex_set_run_hint(idx, 3, 100);
	KUNIT_EXPECT_EQ(test, exfat_dindex_run_hint(idx, 3), 100);
	exfat_dindex_set_type(idx, 70, EXFAT_TYPE_FILE & ~EXFAT_TYPE_IN_USE);
	KUNIT_EXPECT_EQ(test, exfat_dindex_run_hint(idx, 3), 100);
	exfat_dindex_set_type(idx, 30, EXFAT_TYPE_FILE & ~EXFAT_TYPE_IN_USE);
	KUNIT_EXPECT_EQ(test, exfat_dindex_run_hint(idx, 3), 30);
	KUNIT_EXPECT_EQ(test, exfat_dindex_run_hint(idx, 40), 0);
	exfat_dindex_free(idx);
}

static struct kunit_case exfat_dindex_test_cases[] = {
	KUNIT_CASE(exfat_dindex_hash_test),
	KUNIT_CASE(exfat_dindex_rehash_test),
	KUNIT_CASE(exfat_dindex_spread_test),
	KUNIT_CASE(exfat_dindex_run_test),
	{}
};

static struct kunit_suite exfat_dindex_test_suite = {
	.name = "exfat2_dindex",
	.test_cases = exfat_dindex_test_cases,
};

kunit_test_suite(exfat_dindex_test_suite);
