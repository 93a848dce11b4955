// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation windows.  Files written at the same time allocate in turns,
 * and without more each would get the clusters after the other's last
 * ones: their chains interleave, a run per write.  So a file that
 * allocates keeps a window on the free clusters after its last one, in
 * memory only (exFAT cannot record clusters past DataLength), and other
 * files' allocations step over it.  A window is a hint, never an
 * allocation: the bitmap is the only record of what is in use, nothing is
 * counted as used, and when the free space outside the windows is not
 * found, allocations take it inside them.  A window grows with its file
 * (from 4 MiB up to 64 MiB) and goes when the file is closed by a writer,
 * truncated or evicted; the EXFAT_MAX_WINDOWS newest are kept.
 *
 * Pure data: no I/O and no locks (chain.c, the one user, holds the
 * volume's alloc_lock); unit tested in window_test.c on a fake bitmap.
 */
#include <linux/minmax.h>
#include <linux/sizes.h>
#include "exfat.h"

void exfat_windows_init(struct exfat_windows *ws)
{
	INIT_LIST_HEAD(&ws->list);
	ws->nr = 0;
}

void exfat_window_init(struct exfat_window *w)
{
	INIT_LIST_HEAD(&w->node);
	w->start = 0;
	w->len = 0;
}

/* Remove window w, which is open (w->len != 0). */
void exfat_window_del(struct exfat_windows *ws, struct exfat_window *w)
{
	list_del_init(&w->node);
	WRITE_ONCE(w->len, 0);
	ws->nr--;
}

/*
 * Clip the free run [*start, *start + *len) to what lies outside the
 * windows other than self (NULL: all of them).  Returns false when
 * *start is inside one; then *next is the cluster after that window.
 */
bool exfat_windows_clip(const struct exfat_windows *ws,
			const struct exfat_window *self, u32 *start, u32 *len,
			u32 *next)
{
	const struct exfat_window *w;

	list_for_each_entry(w, &ws->list, node) {
		if (w == self)
			continue;
		if (*start - w->start < w->len) {
			*next = w->start + w->len;
			return false;
		}
		if (w->start - *start < *len)
			*len = w->start - *start;
	}
	return true;
}

/* How long a window should be for a file of alloc_clus clusters. */
u32 exfat_window_want(u32 alloc_clus, unsigned int clu_shift)
{
	return clamp_t(u32, alloc_clus, max(SZ_4M >> clu_shift, 1),
		       max(SZ_64M >> clu_shift, 1));
}

/*
 * After an allocation whose last cluster is last: open or move w to
 * [last + 1, last + 1 + want), cut at end (the first cluster past the
 * heap) and where another window begins; w is closed when last + 1 is
 * past the heap or inside another window.  When EXFAT_MAX_WINDOWS are
 * open, the oldest makes room.
 */
void exfat_window_place(struct exfat_windows *ws, struct exfat_window *w,
			u32 last, u32 want, u32 end)
{
	u32 start = last + 1, len, next;

	len = min(want, start < end ? end - start : 0);
	if (!len || !exfat_windows_clip(ws, w, &start, &len, &next)) {
		if (w->len)
			exfat_window_del(ws, w);
		return;
	}
	if (!w->len) {
		if (ws->nr == EXFAT_MAX_WINDOWS)
			exfat_window_del(ws, list_first_entry(&ws->list,
							      struct exfat_window,
							      node));
		ws->nr++;
	}
	list_move_tail(&w->node, &ws->list);
	w->start = start;
	WRITE_ONCE(w->len, len);
}

/*
 * exfat_bitmap_find_run() stepping over the windows other than self;
 * inside them only when nothing is found outside.
 */
bool exfat_windows_find(const struct exfat_windows *ws,
			const struct exfat_window *self,
			const struct exfat_bitmap *bm, u32 hint, u32 max,
			u32 *start, u32 *len)
{
	u32 h = hint, tries;

	/* each try steps over a window; twice as many: the search wraps */
	for (tries = 0; tries <= 2 * ws->nr + 1; tries++) {
		if (!exfat_bitmap_find_run(bm, h, max, start, len))
			return false;
		if (exfat_windows_clip(ws, self, start, len, &h))
			return true;
	}
	return exfat_bitmap_find_run(bm, hint, max, start, len);
}

#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)
#include "window_test.c"
#endif
