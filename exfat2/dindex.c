// SPDX-License-Identifier: GPL-2.0
/*
 * The in-memory index of a directory: pure data, no I/O and no locks (the
 * callers in entry.c hold the directory's i_rwsem, see struct
 * exfat_dindex).
 *
 * An exFAT directory is an unsorted array of entries with no index on
 * disk, so without one a lookup of a name that is not there reads the
 * whole directory, and so does every create, which must first find the
 * name free.  This index is built from one scan of the directory and then
 * kept up to date by every change the driver makes to it:
 *
 * - the File entry index of every whole entry set, found by the set's
 *   NameHash (§7.6.4: a hash of the up-cased name, so a case-insensitive
 *   lookup finds it) and a second hash of the up-cased name
 *   (exfat_name_xhash(): NameHash alone leaves several sets to read per
 *   lookup in a directory of similar names), in a chained hash table;
 * - two bits per entry, "in use" and "end of directory" (type 0x00),
 *   from which a run of free entries is found without reading the
 *   directory.
 *
 * Memory: 12 bytes per entry set (24 while the array has room to grow
 * into), 2 to 4 per set for the buckets, and 2 bits per entry (32 bytes
 * of the directory): 15 to 30 bytes per file, 2.4 MB measured for 100,000.
 */
#include <linux/slab.h>
#include <linux/bitmap.h>
#include <linux/hash.h>
#include <linux/overflow.h>
#include "exfat.h"

#define EXFAT_DINDEX_MIN_BITS	4
#define EXFAT_DINDEX_MAX_BITS	16	/* NameHash has 16 bits */
#define EXFAT_DINDEX_NONE	0	/* node numbers are stored + 1 */

struct exfat_dindex_node {
	u32	eidx;		/* File entry; U32_MAX when on the free list */
	u32	next;		/* next node in the bucket or free list, + 1 */
	u16	hash;		/* the set's NameHash */
	u16	xhash;		/* and exfat_name_xhash() of its name */
};

static bool exfat_dindex_bits_alloc(struct exfat_dindex *idx, u32 nr_slots)
{
	unsigned long *in_use, *eod;
	size_t longs = BITS_TO_LONGS(max(nr_slots, 1U));

	in_use = kvcalloc(longs, sizeof(long), GFP_NOFS | __GFP_NOWARN);
	eod = kvcalloc(longs, sizeof(long), GFP_NOFS | __GFP_NOWARN);
	if (!in_use || !eod) {
		kvfree(in_use);
		kvfree(eod);
		return false;
	}
	if (idx->nr_slots) {
		bitmap_copy(in_use, idx->in_use, idx->nr_slots);
		bitmap_copy(eod, idx->eod, idx->nr_slots);
	}
	kvfree(idx->in_use);
	kvfree(idx->eod);
	idx->in_use = in_use;
	idx->eod = eod;
	return true;
}

/* An index of a directory of nr_slots entries, all unused, none EOD. */
struct exfat_dindex *exfat_dindex_alloc(u32 nr_slots)
{
	struct exfat_dindex *idx = kzalloc(sizeof(*idx), GFP_NOFS);

	if (!idx)
		return NULL;
	idx->hash_bits = EXFAT_DINDEX_MIN_BITS;
	idx->heads = kcalloc(1U << idx->hash_bits, sizeof(*idx->heads),
			     GFP_NOFS);
	if (!idx->heads || !exfat_dindex_bits_alloc(idx, nr_slots)) {
		exfat_dindex_free(idx);
		return NULL;
	}
	idx->nr_slots = nr_slots;
	INIT_LIST_HEAD(&idx->lru);
	return idx;
}

void exfat_dindex_free(struct exfat_dindex *idx)
{
	if (!idx)
		return;
	kvfree(idx->in_use);
	kvfree(idx->eod);
	kvfree(idx->heads);
	kvfree(idx->nodes);
	kfree(idx);
}

/* The directory grew to nr_slots entries; the new ones are EOD entries. */
int exfat_dindex_grow(struct exfat_dindex *idx, u32 nr_slots)
{
	u32 old = idx->nr_slots;

	if (nr_slots <= old)
		return 0;
	if (BITS_TO_LONGS(nr_slots) != BITS_TO_LONGS(max(old, 1U)) &&
	    !exfat_dindex_bits_alloc(idx, nr_slots))
		return -ENOMEM;
	bitmap_clear(idx->in_use, old, nr_slots - old);
	bitmap_set(idx->eod, old, nr_slots - old);
	idx->nr_slots = nr_slots;
	return 0;
}

/* Entry eidx now has type byte type. */
void exfat_dindex_set_type(struct exfat_dindex *idx, u32 eidx, u8 type)
{
	unsigned int k;

	if (eidx >= idx->nr_slots)
		return;
	/* freed: a run may start there now */
	if (test_bit(eidx, idx->in_use) && !exfat_type_in_use(type))
		for (k = 0; k < EXFAT_DINDEX_RUN_HINTS; k++)
			idx->run_hint[k] = min(idx->run_hint[k], eidx);
	/* one writer at a time (struct exfat_dindex): no atomics needed */
	__assign_bit(eidx, idx->in_use, exfat_type_in_use(type));
	__assign_bit(eidx, idx->eod, type == EXFAT_TYPE_EOD);
}

/*
 * Where a search for a run of nr free entries may start: no such run
 * begins before it.  Without it, every search would start at the first
 * unused entry, and a directory of sets that leave a free entry or two at
 * the end of each sector (3-entry sets in 16-entry sectors) would be
 * searched from near its start at every create.
 */
u32 exfat_dindex_run_hint(const struct exfat_dindex *idx, unsigned int nr)
{
	return nr < EXFAT_DINDEX_RUN_HINTS ? idx->run_hint[nr] : 0;
}

/* No run of nr free entries begins before from. */
void exfat_dindex_set_run_hint(struct exfat_dindex *idx, unsigned int nr,
			       u32 from)
{
	if (nr < EXFAT_DINDEX_RUN_HINTS)
		idx->run_hint[nr] = from;
}

/*
 * NameHash's low bits are shared by many similar names (file000000 to
 * file000999 fall into 7 values of the low 9 bits): mix them first.
 */
static u32 exfat_dindex_bucket_of(const struct exfat_dindex *idx, u16 hash)
{
	return hash_32(hash, idx->hash_bits);
}

static u32 *exfat_dindex_bucket(struct exfat_dindex *idx, u16 hash)
{
	return &idx->heads[exfat_dindex_bucket_of(idx, hash)];
}

/* Spread the sets over twice as many buckets (memory: keep the old). */
static void exfat_dindex_rehash(struct exfat_dindex *idx)
{
	unsigned int bits = idx->hash_bits + 1;
	u32 *heads, *b, n;

	heads = kvcalloc(1U << bits, sizeof(*heads), GFP_NOFS | __GFP_NOWARN);
	if (!heads)
		return;
	kvfree(idx->heads);
	idx->heads = heads;
	idx->hash_bits = bits;
	for (n = 0; n < idx->nr_nodes; n++) {
		if (idx->nodes[n].eidx == U32_MAX)
			continue;
		b = exfat_dindex_bucket(idx, idx->nodes[n].hash);
		idx->nodes[n].next = *b;
		*b = n + 1;
	}
}

/*
 * Record the entry set whose File entry is eidx, NameHash hash and second
 * hash xhash.
 */
int exfat_dindex_add(struct exfat_dindex *idx, u32 eidx, u16 hash, u16 xhash)
{
	struct exfat_dindex_node *node;
	u32 n, *b;

	if (idx->free_node != EXFAT_DINDEX_NONE) {
		n = idx->free_node - 1;
		idx->free_node = idx->nodes[n].next;
	} else {
		if (idx->nr_nodes == idx->cap_nodes) {
			u32 cap = max(2 * idx->cap_nodes, 16U);
			struct exfat_dindex_node *nodes;

			nodes = kvmalloc_array(cap, sizeof(*nodes),
					       GFP_NOFS | __GFP_NOWARN);
			if (!nodes)
				return -ENOMEM;
			if (idx->nr_nodes)
				memcpy(nodes, idx->nodes,
				       idx->nr_nodes * sizeof(*nodes));
			kvfree(idx->nodes);
			idx->nodes = nodes;
			idx->cap_nodes = cap;
		}
		n = idx->nr_nodes++;
	}
	node = &idx->nodes[n];
	node->eidx = eidx;
	node->hash = hash;
	node->xhash = xhash;
	b = exfat_dindex_bucket(idx, hash);
	node->next = *b;
	*b = n + 1;
	idx->nr_sets++;
	if (idx->nr_sets > 2U << idx->hash_bits &&
	    idx->hash_bits < EXFAT_DINDEX_MAX_BITS)
		exfat_dindex_rehash(idx);
	return 0;
}

/* Unlink the node *link points to from its bucket; put it on the free list. */
static void exfat_dindex_unlink(struct exfat_dindex *idx, u32 *link)
{
	u32 n = *link - 1;

	*link = idx->nodes[n].next;
	idx->nodes[n].eidx = U32_MAX;
	idx->nodes[n].next = idx->free_node;
	idx->free_node = n + 1;
	idx->nr_sets--;
}

static u32 *exfat_dindex_link_of(struct exfat_dindex *idx, u32 *link,
				 u32 eidx)
{
	for (; *link != EXFAT_DINDEX_NONE; link = &idx->nodes[*link - 1].next)
		if (idx->nodes[*link - 1].eidx == eidx)
			return link;
	return NULL;
}

/*
 * Forget the set whose File entry is eidx; hash is its NameHash, or -1
 * when it is not known (then every bucket is searched).  Returns whether
 * the index held it.
 */
bool exfat_dindex_remove(struct exfat_dindex *idx, u32 eidx, int hash)
{
	u32 *link = NULL, b;

	if (hash >= 0)
		link = exfat_dindex_link_of(idx, exfat_dindex_bucket(idx, hash),
					    eidx);
	for (b = 0; !link && hash < 0 && b < 1U << idx->hash_bits; b++)
		link = exfat_dindex_link_of(idx, &idx->heads[b], eidx);
	if (!link)
		return false;
	exfat_dindex_unlink(idx, link);
	return true;
}

/*
 * The sets whose NameHash is hash and second hash xhash, one per call:
 * *cursor starts at 0; returns a File entry index, or U32_MAX after the
 * last.
 */
u32 exfat_dindex_next(const struct exfat_dindex *idx, u16 hash, u16 xhash,
		      u32 *cursor)
{
	const struct exfat_dindex_node *node;
	u32 n = *cursor ? *cursor :
		idx->heads[exfat_dindex_bucket_of(idx, hash)];

	if (n == U32_MAX)
		return U32_MAX;
	for (; n != EXFAT_DINDEX_NONE; n = node->next) {
		node = &idx->nodes[n - 1];
		if (node->hash == hash && node->xhash == xhash) {
			*cursor = node->next ?: U32_MAX;
			return node->eidx;
		}
	}
	*cursor = U32_MAX;
	return U32_MAX;
}

/**
 * exfat_dindex_find_run - find free entries for a set, from the index
 * @idx: the directory's index
 * @start: first entry to consider (the start of a sector)
 * @nr: entries wanted
 * @busy: first of @busy_nr entries promised to another set: not free
 * @busy_nr: their number
 * @per_sect: entries in a sector
 * @first: set to the first entry of the run found
 * @free: set to the first free entry from @start (@idx->nr_slots if none)
 *
 * The rules of exfat_find_slots(): exfat_slots_placeable().
 *
 * Returns whether a run was found.
 */
bool exfat_dindex_find_run(const struct exfat_dindex *idx, u32 start,
			   unsigned int nr, u32 busy, unsigned int busy_nr,
			   u32 per_sect, u32 *first, u32 *free)
{
	u32 total = idx->nr_slots, i = start, run = 0, eod = total;

	*free = total;
	while (i < total) {
		if (test_bit(i, idx->in_use)) {
			run = 0;
			i = find_next_zero_bit(idx->in_use, total, i + 1);
			continue;
		}
		if (i - busy < busy_nr) {
			run = 0;
			i++;
			continue;
		}
		if (*free == total)
			*free = i;
		if (eod == total && test_bit(i, idx->eod))
			eod = i;
		if (++run >= nr) {
			*first = i + 1 - nr;
			if (exfat_slots_placeable(*first, nr, eod, per_sect))
				return true;
		}
		i++;
	}
	return false;
}

#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)
#include "dindex_test.c"
#endif
