// SPDX-License-Identifier: GPL-2.0
/*
 * The extent map of a cluster chain: runs of clusters consecutive both in
 * the file and on the disk, sorted by file cluster, covering the chain
 * from its start up to map->fclus file clusters.  Pure data: no I/O and no
 * locks (map.c, the one user, holds the inode's map_lock); unit tested in
 * extent_test.c.
 */
#include <linux/minmax.h>
#include <linux/slab.h>
#include "exfat.h"

/* The extent holding file cluster fclu, or NULL (a binary search). */
const struct exfat_extent *exfat_extent_find(const struct exfat_extent_map *map,
					     u32 fclu)
{
	unsigned int lo = 0, hi = map->nr;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct exfat_extent *ext = &map->ext[mid];

		if (fclu < ext->fclu)
			hi = mid;
		else if (fclu - ext->fclu >= ext->len)
			lo = mid + 1;
		else
			return ext;
	}
	return NULL;
}

/*
 * Append the run [clu, clu + len) of disk clusters as the map's next file
 * clusters, merged into the last extent when it continues it.
 */
int exfat_extent_add(struct exfat_extent_map *map, u32 clu, u32 len)
{
	struct exfat_extent *last = map->nr ? &map->ext[map->nr - 1] : NULL;

	if (last && last->clu + last->len == clu) {
		last->len += len;
	} else {
		if (map->nr == map->cap) {
			unsigned int cap = max(8U, map->cap * 2);
			struct exfat_extent *ext;

			ext = kvrealloc(map->ext, cap * sizeof(*ext), GFP_NOFS);
			if (!ext)
				return -ENOMEM;
			map->ext = ext;
			map->cap = cap;
		}
		map->ext[map->nr++] = (struct exfat_extent) {
			.fclu = map->fclus, .clu = clu, .len = len,
		};
	}
	map->fclus += len;
	return 0;
}

/* Forget the file clusters from keep on. */
void exfat_extent_truncate(struct exfat_extent_map *map, u32 keep)
{
	while (map->nr && map->ext[map->nr - 1].fclu >= keep)
		map->nr--;
	if (map->nr) {
		struct exfat_extent *last = &map->ext[map->nr - 1];

		if (last->fclu + last->len > keep)
			last->len = keep - last->fclu;
	}
	map->fclus = min(map->fclus, keep);
}

/* Free the map's memory; it is then empty. */
void exfat_extent_free(struct exfat_extent_map *map)
{
	kvfree(map->ext);
	*map = (struct exfat_extent_map) {};
}

#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)
#include "extent_test.c"
#endif
