// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the allocation windows (window.c) on a fake bitmap,
 * included by window.c.
 */
#include <kunit/test.h>

#define EXFAT_TEST_CLUS		4096
#define EXFAT_TEST_CHUNK	512	/* bits per chunk: a 64-byte "sector" */

struct exfat_test_heap {
	unsigned long bits[BITS_TO_LONGS(EXFAT_TEST_CLUS)];
	struct exfat_bitmap bm;
	struct exfat_windows ws;
};

static const void *exfat_test_heap_chunk(const struct exfat_bitmap *bm,
					 unsigned int i)
{
	const struct exfat_test_heap *h = bm->priv;

	return (const u8 *)h->bits + i * (EXFAT_TEST_CHUNK / 8);
}

static struct exfat_test_heap *exfat_test_heap(struct kunit *test)
{
	struct exfat_test_heap *h = kunit_kzalloc(test, sizeof(*h), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, h);
	h->bm = (struct exfat_bitmap) {
		.chunk = exfat_test_heap_chunk, .priv = h,
		.chunk_bits = EXFAT_TEST_CHUNK, .nbits = EXFAT_TEST_CLUS,
	};
	exfat_windows_init(&h->ws);
	return h;
}

/* Mark clusters [clu, clu + len) used (or free) in the fake bitmap. */
static void exfat_test_heap_set(struct exfat_test_heap *h, u32 clu, u32 len,
				bool used)
{
	for (; len; len--, clu++) {
		if (used)
			__set_bit_le(clu - EXFAT_FIRST_CLUSTER, h->bits);
		else
			__clear_bit_le(clu - EXFAT_FIRST_CLUSTER, h->bits);
	}
}

/*
 * Clip [start, start + len) by the windows other than self: want_len
 * (the run kept), or when start is inside a window, 0 and want_next.
 */
static void exfat_expect_clip(struct kunit *test,
			      const struct exfat_windows *ws,
			      const struct exfat_window *self, u32 start,
			      u32 len, u32 want_len, u32 want_next)
{
	u32 next = 0;
	bool ok = exfat_windows_clip(ws, self, &start, &len, &next);

	KUNIT_EXPECT_EQ(test, ok, want_len != 0);
	if (ok)
		KUNIT_EXPECT_EQ(test, len, want_len);
	else
		KUNIT_EXPECT_EQ(test, next, want_next);
}

static void exfat_window_clip_test(struct kunit *test)
{
	struct exfat_test_heap *h = exfat_test_heap(test);
	struct exfat_window a, b;

	exfat_window_init(&a);
	exfat_window_init(&b);
	exfat_window_place(&h->ws, &a, 99, 50, EXFAT_TEST_CLUS + 2);
	exfat_window_place(&h->ws, &b, 299, 20, EXFAT_TEST_CLUS + 2);
	KUNIT_ASSERT_EQ(test, h->ws.nr, 2);
	KUNIT_EXPECT_EQ(test, a.start, 100);
	KUNIT_EXPECT_EQ(test, a.len, 50);

	/* a run reaching into a window ends where it begins */
	exfat_expect_clip(test, &h->ws, NULL, 90, 30, 10, 0);
	exfat_expect_clip(test, &h->ws, NULL, 150, 200, 150, 0);
	/* a run starting inside one: refused, go on after it */
	exfat_expect_clip(test, &h->ws, NULL, 149, 5, 0, 150);
	exfat_expect_clip(test, &h->ws, NULL, 300, 5, 0, 320);
	/* a file's own window is not in its way */
	exfat_expect_clip(test, &h->ws, &a, 120, 100, 100, 0);
	exfat_expect_clip(test, &h->ws, &a, 120, 300, 180, 0);
}

static void exfat_window_place_test(struct kunit *test)
{
	struct exfat_test_heap *h = exfat_test_heap(test);
	u32 end = EXFAT_TEST_CLUS + EXFAT_FIRST_CLUSTER;
	struct exfat_window w[EXFAT_MAX_WINDOWS + 1];
	struct exfat_window *a = &w[0], *b = &w[1];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(w); i++)
		exfat_window_init(&w[i]);
	exfat_window_place(&h->ws, a, 99, 50, end);
	/* after a cluster inside another window: none */
	exfat_window_place(&h->ws, b, 119, 50, end);
	KUNIT_EXPECT_EQ(test, b->len, 0);
	KUNIT_EXPECT_EQ(test, h->ws.nr, 1);
	/* cut where the next window begins */
	exfat_window_place(&h->ws, b, 49, 100, end);
	KUNIT_EXPECT_EQ(test, b->start, 50);
	KUNIT_EXPECT_EQ(test, b->len, 50);
	KUNIT_EXPECT_EQ(test, h->ws.nr, 2);
	/* moved: cut at the end of the heap, and now the newest */
	exfat_window_place(&h->ws, a, end - 12, 50, end);
	KUNIT_EXPECT_EQ(test, a->start, end - 11);
	KUNIT_EXPECT_EQ(test, a->len, 11);
	KUNIT_EXPECT_PTR_EQ(test, list_last_entry(&h->ws.list,
						  struct exfat_window, node), a);
	/* after the last cluster of the heap: closed */
	exfat_window_place(&h->ws, a, end - 1, 50, end);
	KUNIT_EXPECT_EQ(test, a->len, 0);
	KUNIT_EXPECT_EQ(test, h->ws.nr, 1);
	exfat_window_del(&h->ws, b);
	KUNIT_EXPECT_TRUE(test, list_empty(&h->ws.list));

	/* one more than the limit: the oldest goes */
	for (i = 0; i < ARRAY_SIZE(w); i++)
		exfat_window_place(&h->ws, &w[i], 10 * i + 1, 5, end);
	KUNIT_EXPECT_EQ(test, h->ws.nr, EXFAT_MAX_WINDOWS);
	KUNIT_EXPECT_EQ(test, w[0].len, 0);
	KUNIT_EXPECT_TRUE(test, list_empty(&w[0].node));
	KUNIT_EXPECT_EQ(test, w[1].len, 5);
	KUNIT_EXPECT_EQ(test, w[EXFAT_MAX_WINDOWS].len, 5);

	/* sizes: 4 MiB to 64 MiB, at least a cluster */
	KUNIT_EXPECT_EQ(test, exfat_window_want(0, 12), 1024);
	KUNIT_EXPECT_EQ(test, exfat_window_want(5000, 12), 5000);
	KUNIT_EXPECT_EQ(test, exfat_window_want(100000, 12), 16384);
	KUNIT_EXPECT_EQ(test, exfat_window_want(0, 25), 1);
	KUNIT_EXPECT_EQ(test, exfat_window_want(9, 25), 2);
}

/*
 * Two files allocating 8 clusters in turns, 20 times each, as chain.c
 * does (a file goes on after its last cluster, a new one at the volume's
 * hint).  Returns the number of runs of file 0's chain.
 */
static unsigned int exfat_test_two_writers(struct kunit *test,
					   bool use_windows)
{
	struct exfat_test_heap *h = exfat_test_heap(test);
	u32 last[2] = {}, alloc[2] = {}, hint = EXFAT_FIRST_CLUSTER;
	struct exfat_window w[2];
	unsigned int runs = 0;
	int round, f;

	exfat_window_init(&w[0]);
	exfat_window_init(&w[1]);
	for (round = 0; round < 20; round++) {
		for (f = 0; f < 2; f++) {
			u32 start, len;

			KUNIT_ASSERT_TRUE(test,
					  exfat_windows_find(&h->ws, &w[f], &h->bm,
							     last[f] ? last[f] + 1 : hint,
							     8, &start, &len));
			KUNIT_ASSERT_EQ(test, len, 8);
			exfat_test_heap_set(h, start, len, true);
			if (f == 0 && start != last[0] + 1)
				runs++;
			last[f] = start + len - 1;
			alloc[f] += len;
			hint = last[f] + 1;
			if (use_windows)
				exfat_window_place(&h->ws, &w[f], last[f],
						   exfat_window_want(alloc[f], 12),
						   EXFAT_TEST_CLUS + 2);
		}
	}
	return runs;
}

static void exfat_windows_find_test(struct kunit *test)
{
	struct exfat_test_heap *h = exfat_test_heap(test);
	struct exfat_window a;
	u32 start, len;

	/* writers side by side: one run each, not one per write */
	KUNIT_EXPECT_EQ(test, exfat_test_two_writers(test, true), 1);
	/* the check above can fail: without windows they interleave */
	KUNIT_EXPECT_EQ(test, exfat_test_two_writers(test, false), 20);

	/* full but for [500, 520), inside a's window */
	exfat_test_heap_set(h, EXFAT_FIRST_CLUSTER, EXFAT_TEST_CLUS, true);
	exfat_test_heap_set(h, 500, 20, false);
	exfat_window_init(&a);
	exfat_window_place(&h->ws, &a, 499, 50, EXFAT_TEST_CLUS + 2);
	/* nothing outside: others take space inside the window */
	KUNIT_EXPECT_TRUE(test, exfat_windows_find(&h->ws, NULL, &h->bm, 2, 64,
						   &start, &len));
	KUNIT_EXPECT_EQ(test, start, 500);
	KUNIT_EXPECT_EQ(test, len, 20);
	/* found by wrapping around, from a hint past it or off the heap */
	KUNIT_EXPECT_TRUE(test, exfat_windows_find(&h->ws, &a, &h->bm, 600, 64,
						   &start, &len));
	KUNIT_EXPECT_EQ(test, start, 500);
	KUNIT_EXPECT_TRUE(test, exfat_windows_find(&h->ws, &a, &h->bm, 1, 4,
						   &start, &len));
	KUNIT_EXPECT_EQ(test, start, 500);
	KUNIT_EXPECT_EQ(test, len, 4);
	/* free space outside the window is taken first */
	exfat_test_heap_set(h, 3000, 3, false);
	KUNIT_EXPECT_TRUE(test, exfat_windows_find(&h->ws, NULL, &h->bm, 2, 64,
						   &start, &len));
	KUNIT_EXPECT_EQ(test, start, 3000);
	KUNIT_EXPECT_EQ(test, len, 3);
	/* and a run before the window is cut where it begins */
	exfat_test_heap_set(h, 495, 5, false);
	KUNIT_EXPECT_TRUE(test, exfat_windows_find(&h->ws, NULL, &h->bm, 2, 64,
						   &start, &len));
	KUNIT_EXPECT_EQ(test, start, 495);
	KUNIT_EXPECT_EQ(test, len, 5);
	/* nothing free at all */
	exfat_test_heap_set(h, EXFAT_FIRST_CLUSTER, EXFAT_TEST_CLUS, true);
	KUNIT_EXPECT_FALSE(test, exfat_windows_find(&h->ws, NULL, &h->bm, 2, 64,
						    &start, &len));
}

static struct kunit_case exfat_window_test_cases[] = {
	KUNIT_CASE(exfat_window_clip_test),
	KUNIT_CASE(exfat_window_place_test),
	KUNIT_CASE(exfat_windows_find_test),
	{}
};

static struct kunit_suite exfat_window_test_suite = {
	.name = "exfat2_window",
	.test_cases = exfat_window_test_cases,
};

kunit_test_suite(exfat_window_test_suite);
