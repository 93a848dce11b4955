/* SPDX-License-Identifier: GPL-2.0 */
/*
 * In-core state of the exfat2 driver: superblock and inode info, the
 * entry-set handle, unit conversions, messages and cross-file prototypes.
 *
 * Layers (floors, lowest first; a file calls only its own floor and those
 * below, which scripts/callgraph.py checks):
 *
 *   format		format.c, upcase_table.c, dindex.c, extent.c,
 *			window.c: pure
 *   messages		msg.c: messages and the errors= policy
 *   sectors		meta.c: the only user of buffer heads
 *   FAT, bitmap, names	fatent.c, balloc.c, upcase.c
 *   chains		chain.c, map.c: growing and cutting chains, the
 *			allocation policy, the extent cache
 *   entry sets		entry.c: the one reader and writer of entries
 *   inodes, namespace	inode.c, file.c, dir.c, namei.c, ioctl.c, export.c
 *   super		super.c
 *
 * Locking (outermost first; each rule is repeated beside the data):
 *
 *   inode->i_rwsem		VFS; namespace changes and writes to one inode
 *   mapping->invalidate_lock	truncate against page faults
 *   ei->pos_lock		where an inode's entry set is (dir_clu, eidx)
 *   sbi->set_locks[]		entry sets of one directory (hashed by its
 *				first cluster): readers copy a set out whole
 *   ei->map_lock		an inode's cluster chain, extent cache and
 *				valid_size; a directory's is taken under a
 *				set lock to map its blocks, so no set lock
 *				is ever taken with a map_lock held
 *   sbi->alloc_lock		allocation bitmap, FAT contents, free count,
 *				allocation windows
 *   sbi->dindex_lock		the list of directory indexes (a spinlock)
 *
 * There is no volume-wide lock on the I/O path: mapping a file block takes
 * only that inode's map_lock, shared, once its extent cache covers the block.
 *
 * Write ordering (exFAT has no journal; these rules keep every crash
 * point a volume fsck.exfat accepts, at worst dirty with leaked clusters,
 * and keep what fsync returned for):
 *
 *  1. VolumeDirty is set, with FUA, before the first metadata change, and
 *     cleared only by sync_fs/unmount once everything is written.
 *  2. Data before the metadata that exposes it: ValidDataLength on disk
 *     never covers data that is not durable: it moves up over written
 *     data only once a cache flush issued after the write completed has
 *     completed (ei->data_gen, exfat_flushed_since; write_inode issues
 *     that flush when none has come yet).
 *  3. Allocation before reference: an entry set naming clusters is written
 *     only after the FAT and bitmap that allocate them (exfat_sync_alloc);
 *     a new directory cluster is zero on disk, behind a cache flush,
 *     before it is linked (the pool of exfat_alloc_dir_cluster()), and
 *     so is its end-of-chain FAT entry: growing the root, whose size is
 *     its chain, is then the one FAT write that links the cluster.
 *  4. Release after dereference: freed clusters keep their bitmap bits
 *     until the metadata that stopped referring to them is durable
 *     (exfat_commit_frees); a shrinking size is durable (written, then a
 *     flush) before the FAT entry that cuts the chain is written.
 *  5. Rename within one sector of a directory (the new set over or
 *     beside the old one, and a replaced set) is one sector write.
 *     Otherwise it writes the directory growth that may hold the new
 *     entry set, then the set with preflush + FUA, then at once the
 *     removal of the old one: a file always has a name, two only between
 *     the last two writes (exfat_move_set).  RENAME_EXCHANGE is the
 *     exception: it rewrites both sets in place, and a crash between
 *     the two writes can leave a file with no name (exfat_exchange).
 *  6. fsync: data, then the FAT and bitmap, then the file's entry set,
 *     then the rest of the metadata, then a cache flush.
 *  7. An entry set that fits in a sector is written inside one, so it
 *     reaches the disk whole or not at all (exfat_find_slots,
 *     exfat_sector_apply).  Only a set of more than a sector's worth
 *     of entries (a name over 210 characters on 512-byte sectors) spans
 *     two; its File and Stream entries share one, and only sectors that
 *     change are written, so rewriting it in place is one sector write
 *     (exfat_slots_placeable).  A long set another system placed with
 *     its Stream entry in the next sector still takes two.
 */
#ifndef _EXFAT2_H
#define _EXFAT2_H

#include <linux/fs.h>
#include <linux/ratelimit.h>
#include <linux/nls.h>
#include <linux/errno.h>
#include <linux/magic.h>
#include "exfat_format.h"

#define EXFAT_ROOT_INO		1

#ifndef EFSCORRUPTED
#define EFSCORRUPTED		EUCLEAN		/* filesystem is corrupted */
#endif

enum exfat_error_mode {
	EXFAT_ERRORS_CONT,
	EXFAT_ERRORS_PANIC,
	EXFAT_ERRORS_RO,
};

struct exfat_mount_options {
	kuid_t		fs_uid;
	kgid_t		fs_gid;
	unsigned short	fs_fmask;
	unsigned short	fs_dmask;
	unsigned short	allow_utime;	/* permission bits for utime by others */
	char		*iocharset;
	enum exfat_error_mode errors;
	int		time_offset;	/* minutes east of UTC for local stamps */
	bool		utf8;		/* iocharset is utf8: no NLS table */
	bool		discard;
	bool		keep_last_dots;
	bool		sys_tz;
	bool		zero_size_dir;
};

/* sbi->state bits */
enum {
	EXFAT_STATE_SHUTDOWN,		/* FS_IOC_SHUTDOWN or device gone */
	EXFAT_STATE_DIRTY_SET,		/* we set VolumeDirty on disk */
	EXFAT_STATE_META_EIO,		/* a metadata write was lost */
};

#define EXFAT_SET_LOCKS		64
#define EXFAT_DIR_POOL_MAX	16

/* One contiguous run of clusters of a file: file cluster fclu maps to clu. */
struct exfat_extent {
	u32	fclu;
	u32	clu;
	u32	len;
};

/*
 * An allocation window (window.c): free clusters [start, start + len)
 * that other files' allocations step over; len 0: none.
 */
struct exfat_window {
	u32		start;
	u32		len;
	struct list_head node;		/* in exfat_windows.list */
};

#define EXFAT_MAX_WINDOWS	32

/* The open windows of a volume, oldest first. */
struct exfat_windows {
	struct list_head list;
	unsigned int	nr;
};

/* A chain as extents, sorted by fclu and contiguous in it (extent.c). */
struct exfat_extent_map {
	struct exfat_extent *ext;
	unsigned int	nr;
	unsigned int	cap;
	u32		fclus;		/* file clusters it covers */
};

struct exfat_sb_info {
	/* Geometry: set once at mount from the verified boot sector. */
	unsigned int	sect_shift;	/* log2 bytes per sector */
	unsigned int	clu_shift;	/* log2 bytes per cluster */
	u32		clu_size;	/* bytes per cluster */
	u64		vol_sectors;
	sector_t	fat_start;	/* first sector of the active FAT */
	sector_t	fat_sectors;	/* sectors in one FAT */
	sector_t	fat2_start;	/* the other FAT (NumberOfFats == 2) */
	sector_t	heap_start;	/* first sector of cluster 2 */
	u32		clu_count;	/* clusters in the heap */
	u32		root_clu;
	u32		serial;
	unsigned int	num_fats;
	unsigned int	active_fat;	/* 0 or 1, from VolumeFlags */
	sector_t	boot_sector;	/* 0, or 12 when mounted from backup */
	u16		vol_flags;	/* VolumeFlags as found at mount */
	u16		fs_revision;

	/*
	 * Allocation bitmap, in the buffer cache.  alloc_lock protects its
	 * contents, every FAT entry update and free_clusters.
	 */
	struct mutex	alloc_lock;
	struct buffer_head **bitmap_bh;
	unsigned int	bitmap_nr_bh;
	u32		bitmap_clu;	/* first cluster of the bitmap */
	u32		bitmap_clus;	/* its length in clusters */
	u32		free_clusters;
	u32		alloc_hint;	/* where the next search starts */
	struct exfat_windows windows;	/* allocation windows; under alloc_lock */
	struct list_head pending_frees;	/* freed, bits still set; see balloc.c */
	u32		pending_clusters;
	u64		alloc_seq;	/* bumped by every allocation */
	/*
	 * Clusters for new directories, zeroed and marked in use on disk,
	 * durably (exfat_alloc_dir_cluster); not counted in free_clusters.
	 */
	u32		dir_pool[EXFAT_DIR_POOL_MAX];
	unsigned int	dir_pool_nr;

	/* alloc_sync_lock serialises syncs of the FAT and bitmap */
	struct mutex	alloc_sync_lock;
	/*
	 * commit_lock serialises exfat_commit_frees(), so that an allocation
	 * short of space waits for a commit already under way instead of
	 * failing while its clusters are in flight; taken outside alloc_lock.
	 */
	struct mutex	commit_lock;
	u64		alloc_synced;	/* alloc_seq durable on disk */

	/* Up-case table: 65536 entries, immutable after mount. */
	u16		*upcase;
	u32		upcase_clu;
	u64		upcase_len;
	u32		upcase_clus;	/* clusters from upcase_clu it holds */
	bool		upcase_builtin;	/* on-disk table unusable */

	u8		vol_guid[16];	/* §7.5, when has_guid */
	bool		has_guid;

	/* Volume label in UTF-16, protected by label_lock. */
	struct mutex	label_lock;

	/*
	 * vol_lock serialises updates of VolumeFlags on disk; meta_dirtying
	 * and meta_gen count metadata sectors being and having been dirtied,
	 * so that VolumeDirty is never cleared under a dirty one (meta.c).
	 */
	struct mutex	vol_lock;
	atomic_t	meta_dirtying;
	atomic_t	meta_gen;
	/*
	 * Cache flushes are numbered (meta.c): flush_seq counts those
	 * started, flush_done is the number of the latest one completed.  A
	 * write that completed while flush_seq read N is durable once
	 * flush_done > N (exfat_flushed_since).
	 */
	atomic64_t	flush_seq;
	atomic64_t	flush_done;
	u16		label[EXFAT_LABEL_MAX_LEN];
	unsigned int	label_len;

	/*
	 * Entry sets are read and verified as a whole while another task may
	 * be rewriting them: each directory's sets are guarded by one of
	 * these, chosen by the directory's first cluster (readers shared,
	 * writers exclusive, held only while entries are copied).
	 */
	struct rw_semaphore set_locks[EXFAT_SET_LOCKS];

	struct nls_table *nls;		/* NULL for utf8 */
	struct workqueue_struct *ioend_wq;
	struct exfat_mount_options opts;
	/*
	 * Write errors of the block device's buffer cache (our metadata)
	 * since mount: a lost metadata write fails every later barrier
	 * (exfat_meta_check), so nothing that depends on it is written.
	 */
	errseq_t	meta_wb_err;
	unsigned long	state;		/* EXFAT_STATE_* bits */
	struct ratelimit_state msg_ratelimit;
	/*
	 * Directories with an index (struct exfat_dindex), oldest first,
	 * for the shrinker; dindex_lock guards the list, nr_dindex and
	 * every ei->dindex pointer change.
	 */
	spinlock_t	dindex_lock;
	struct list_head dindex_list;
	unsigned long	nr_dindex;
	struct shrinker	*dindex_shrinker;
	struct rcu_head	rcu;
};

/*
 * Where a file's entry set lives: entry index eidx of the directory whose
 * data starts at dir_clu (with dir_flags telling whether that directory is
 * contiguous).  The root directory has no entry set: eidx == EXFAT_ROOT_EIDX.
 */
#define EXFAT_ROOT_EIDX		U32_MAX

struct exfat_inode_info {
	/*
	 * pos_lock keeps the entry set where dir_clu, dir_flags and eidx say
	 * while write_inode rewrites it; rename and unlink take it to move or
	 * remove the set (then deleted is set).
	 */
	struct mutex	pos_lock;
	bool		deleted;
	u32		start_clu;	/* 0 if no cluster allocated */
	u8		flags;		/* EXFAT_FLAG_NO_FAT_CHAIN */
	u16		attr;		/* EXFAT_ATTR_* */
	u32		dir_clu;	/* parent directory's first cluster */
	u8		dir_flags;	/* parent's EXFAT_FLAG_NO_FAT_CHAIN */
	u32		eidx;		/* entry index in the parent */
	struct timespec64 btime;	/* creation time */

	/*
	 * map_lock protects the extent cache below and valid_size.  Readers
	 * take it shared; growing the cache or changing the chain takes it
	 * exclusive.
	 */
	struct rw_semaphore map_lock;
	loff_t		valid_size;	/* ValidDataLength */
	u32		vdl_seq;	/* bumped when valid_size changes */
	u32		alloc_clus;	/* clusters in the chain */
	/*
	 * Bumped when clusters leave the chain: a mapping taken before may
	 * point at freed clusters (writeback checks it per folio).
	 */
	u32		map_seq;
	u64		alloc_seq;	/* sbi->alloc_seq of its last allocation */
	/*
	 * Allocation window (window.c): free clusters after the last one
	 * that other files' allocations step over.  Under sbi->alloc_lock;
	 * win.len may be read without it, as a hint that there is one.
	 */
	struct exfat_window win;
	loff_t		disk_valid;	/* ValidDataLength last written to disk */
	/*
	 * sbi->flush_seq when a data write of this file last completed
	 * (written under ioend_lock, at writeback and direct-write completion;
	 * read with READ_ONCE): ValidDataLength on disk covers that data only
	 * after a later flush (rule 2).
	 */
	u64		data_gen;
	/*
	 * Directories: where the next lookup starts, just after the last set
	 * found, so that names looked up in directory order (ls -l, find,
	 * cp -r) cost a few entries each, not a scan from the start.  Only
	 * a hint: read and written with READ/WRITE_ONCE, checked by use.
	 */
	u32		find_hint;
	/*
	 * Directories: no unused entry lies before free_hint, so the search
	 * for free slots starts there.  Written under the directory's
	 * i_rwsem held exclusive, as every change of which entries are in
	 * use is (exfat_find_slots, __exfat_delete_entries).
	 */
	u32		free_hint;
	/*
	 * Directories: the in-memory index (dindex.c), or NULL.  Set under
	 * i_rwsem held shared or exclusive (and dindex_lock), read under
	 * i_rwsem, cleared and freed with i_rwsem held exclusive, by the
	 * shrinker or at eviction.
	 */
	struct exfat_dindex *dindex;

	/* completed writeback, handled in process context; see file.c */
	spinlock_t	ioend_lock;
	struct list_head ioend_list;
	struct work_struct ioend_work;
	/*
	 * False while the block holding ValidDataLength may hold stale bytes
	 * past it on disk (as another system left it); see file.c.
	 */
	bool		tail_clean;
	struct exfat_extent_map emap;	/* the extent cache (map.c) */

	struct inode	vfs_inode;
};

static inline struct exfat_sb_info *EXFAT_SB(struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct exfat_inode_info *EXFAT_I(const struct inode *inode)
{
	return container_of(inode, struct exfat_inode_info, vfs_inode);
}

/* Unit conversions.  Callers pass cluster numbers already range-checked. */
static inline bool exfat_clu_valid(const struct exfat_sb_info *sbi, u32 clu)
{
	return clu >= EXFAT_FIRST_CLUSTER &&
	       clu - EXFAT_FIRST_CLUSTER < sbi->clu_count;
}

static inline sector_t exfat_clu_to_sect(const struct exfat_sb_info *sbi,
					 u32 clu)
{
	return sbi->heap_start +
	       ((sector_t)(clu - EXFAT_FIRST_CLUSTER) <<
		(sbi->clu_shift - sbi->sect_shift));
}

/* Byte address on the device of byte pos of a file, which lies in clu */
static inline u64 exfat_disk_addr(const struct exfat_sb_info *sbi, u32 clu,
				  loff_t pos)
{
	return ((u64)exfat_clu_to_sect(sbi, clu) << sbi->sect_shift) +
	       (pos & (sbi->clu_size - 1));
}

static inline u64 exfat_clu_to_bytes(const struct exfat_sb_info *sbi,
				     u32 clu)
{
	return (u64)(clu - EXFAT_FIRST_CLUSTER) << sbi->clu_shift;
}

/* Number of clusters needed to hold size bytes. */
static inline u64 exfat_bytes_to_clus(const struct exfat_sb_info *sbi,
				      loff_t size)
{
	return ((u64)size + sbi->clu_size - 1) >> sbi->clu_shift;
}

/* Clusters of the largest directory the specification allows. */
static inline u32 exfat_max_dir_clus(const struct exfat_sb_info *sbi)
{
	return max(EXFAT_MAX_DIR_SIZE >> sbi->clu_shift, 1U);
}

static inline unsigned int exfat_dentries_per_clu(const struct exfat_sb_info *sbi)
{
	return sbi->clu_size >> EXFAT_DENTRY_SHIFT;
}

static inline bool exfat_forced_shutdown(struct super_block *sb)
{
	return test_bit(EXFAT_STATE_SHUTDOWN, &EXFAT_SB(sb)->state);
}

/* msg.c: messages (every line names the device) and the errors= policy */
__printf(2, 3) __cold
void __exfat_msg(struct super_block *sb, const char *fmt, ...);
#define exfat_err(sb, fmt, ...)						\
	__exfat_msg(sb, KERN_ERR fmt, ##__VA_ARGS__)
#define exfat_warn(sb, fmt, ...)					\
	__exfat_msg(sb, KERN_WARNING fmt, ##__VA_ARGS__)
#define exfat_info(sb, fmt, ...)					\
	__exfat_msg(sb, KERN_INFO fmt, ##__VA_ARGS__)
__printf(2, 3) __cold
void exfat_warn_ratelimited(struct super_block *sb, const char *fmt, ...);

/*
 * Report corruption found on disk: a rate-limited message, then the
 * errors= policy.  Callers return -EFSCORRUPTED.
 */
void exfat_handle_error(struct super_block *sb);
__printf(2, 3) __cold
void exfat_fs_error(struct super_block *sb, const char *fmt, ...);

/* format.c: pure functions over on-disk bytes; no I/O, no locks. */
struct exfat_time {
	__le32	stamp;
	u8	cs;		/* 10 ms increments, 0..199 */
	u8	tz;		/* UtcOffset byte */
};

const char *exfat_verify_boot_sector(const struct exfat_boot_sector *bs,
				     u64 dev_sectors);
u32 exfat_boot_checksum_add(u32 sum, const void *buf, size_t len,
			    bool first_sector);
u16 exfat_set_checksum(const union exfat_dentry *set, unsigned int nr);
const char *exfat_verify_file_set(const union exfat_dentry *set,
				  unsigned int nr);
u16 exfat_name_hash(const u16 *upcase, const __le16 *name, unsigned int len);
u16 exfat_name_hash_cpu(const u16 *upcase, const u16 *name, unsigned int len);
u32 exfat_name_xhash(const u16 *upcase, u32 h, const __le16 *name,
		     unsigned int len);
u16 exfat_name_xhash_cpu(const u16 *upcase, const u16 *name, unsigned int len);

static inline u16 exfat_name_xhash_end(u32 h)
{
	return h >> 16;
}

/*
 * An allocation bitmap (§7.1.5: bit n for cluster n + 2, least significant
 * bit first) as it is held in memory, in chunks of chunk_bits bits (the
 * sectors it was read in); chunk(bm, i) gives chunk i.
 */
struct exfat_bitmap {
	const void	*(*chunk)(const struct exfat_bitmap *bm, unsigned int i);
	const void	*priv;
	unsigned int	chunk_bits;
	u32		nbits;
};

u32 exfat_bitmap_find_free(const struct exfat_bitmap *bm, u32 from, u32 limit,
			   u32 max, u32 *first);
bool exfat_bitmap_find_run(const struct exfat_bitmap *bm, u32 hint, u32 max,
			   u32 *start, u32 *len);

/* What the root directory's critical primaries say (§7.1-7.5). */
struct exfat_root_info {
	u32	bitmap_clu;
	u64	bitmap_len;
	u32	upcase_clu;
	u64	upcase_len;
	u32	upcase_csum;
	u8	guid[16];
	u16	label[EXFAT_LABEL_MAX_LEN];
	unsigned int label_len;
	bool	have_bitmap;
	bool	have_upcase;
	bool	have_guid;
	bool	bad_guid;
};

const char *exfat_parse_root_entry(struct exfat_root_info *ri,
				   const union exfat_dentry *de,
				   unsigned int active_fat);
void exfat_make_label_entry(union exfat_dentry *de, const u16 *uni,
			    unsigned int len);
u32 exfat_upcase_checksum(const void *buf, size_t len);
#define EXFAT_UPCASE_ENTRIES	0x10000U	/* one per UTF-16 unit */
int exfat_upcase_expand(const __le16 *buf, size_t len, u16 *table);
void exfat_time_to_ts(const struct exfat_time *t, int local_offset,
		      struct timespec64 *ts);
void exfat_ts_to_time(const struct timespec64 *ts, int local_offset,
		      struct exfat_time *t);
extern const __le16 exfat_default_upcase[];
extern const size_t exfat_default_upcase_len;

/* meta.c: the only user of buffer heads. */
struct buffer_head *exfat_read_sector(struct super_block *sb, sector_t sect);
struct buffer_head *exfat_read_sector_ra(struct super_block *sb,
					 sector_t sect, unsigned int ra);
void exfat_readahead_sectors(struct super_block *sb, sector_t sect,
			     unsigned int nr);
void exfat_set_vol_dirty(struct super_block *sb);
u32 exfat_meta_gen(struct super_block *sb);
int exfat_clear_vol_dirty(struct super_block *sb, u32 gen);
void exfat_mark_meta_dirty(struct super_block *sb, struct buffer_head *bh);
void exfat_sector_lock(struct buffer_head *bh);
void exfat_sector_unlock(struct super_block *sb, struct buffer_head *bh,
			 bool changed);
int exfat_meta_check(struct super_block *sb);
int exfat_meta_barrier(struct super_block *sb);
int exfat_flush(struct super_block *sb);
u64 exfat_flush_gen(struct super_block *sb);
bool exfat_flushed_since(struct super_block *sb, u64 gen);
int exfat_meta_write_all(struct super_block *sb);
int exfat_sync_meta(struct super_block *sb, struct buffer_head *bh, bool fua);
int exfat_sync_meta_durable(struct super_block *sb, struct buffer_head *bh);
void exfat_put_sector(struct buffer_head *bh);
int exfat_zero_sectors(struct super_block *sb, sector_t sect, unsigned int nr);
void *exfat_sector_data(struct buffer_head *bh);

/* fatent.c */
struct exfat_fat_cursor {
	struct buffer_head *bh;
	sector_t	sect;
};

void exfat_fat_cursor_release(struct exfat_fat_cursor *cur);
int exfat_fat_next(struct super_block *sb, struct exfat_fat_cursor *cur,
		   u32 clu, u32 *next);
int exfat_fat_next_quiet(struct super_block *sb, struct exfat_fat_cursor *cur,
			 u32 clu, u32 *next);
int exfat_fat_set(struct super_block *sb, struct exfat_fat_cursor *cur,
		  u32 clu, u32 val);
int exfat_get_fat(struct super_block *sb, u32 clu, u32 *next);
int exfat_count_chain(struct super_block *sb, u32 start, u32 limit,
		      u32 *count);

/* balloc.c */
int exfat_load_bitmap(struct super_block *sb, u32 clu, u64 len);
void exfat_free_bitmap(struct super_block *sb);
bool exfat_clu_in_use(struct super_block *sb, u32 clu);
const char *exfat_check_run(struct super_block *sb, u32 clu, u32 len,
			    u32 *free);
const char *exfat_check_freeable(struct super_block *sb, u32 clu, u32 len);
struct exfat_bitmap exfat_bitmap_of(const struct exfat_sb_info *sbi);
bool exfat_find_free_run(struct super_block *sb, u32 hint, u32 max,
			 u32 *start, u32 *len);
void exfat_bitmap_set_range(struct super_block *sb, u32 clu, u32 len,
			    bool used);
void exfat_claim_run(struct inode *inode, u32 clu, u32 len);
void exfat_release_run(struct super_block *sb, u32 clu, u32 len);
void exfat_free_run(struct super_block *sb, u32 clu, u32 len);
int exfat_commit_frees(struct super_block *sb);
void exfat_drop_pending_frees(struct super_block *sb);
int exfat_sync_alloc(struct super_block *sb, u64 seq);
int exfat_zero_clusters_sync(struct super_block *sb, u32 clu, u32 n);
void __exfat_dir_pool_drain(struct super_block *sb);
void exfat_dir_pool_drain(struct super_block *sb);
void exfat_free_secondary_alloc(struct super_block *sb, u8 type, u32 clu,
				u64 len, bool nofat);
void exfat_free_dir_cluster(struct super_block *sb, u32 clu);
int exfat_trim(struct super_block *sb, u64 start, u64 len, u64 minlen,
	       u64 *trimmed);

/* chain.c */
int exfat_alloc_clusters(struct inode *inode, u32 want);
void exfat_window_drop(struct inode *inode);
int exfat_append_dir_cluster(struct inode *dir);
int exfat_free_clusters(struct inode *inode, u32 keep);
int exfat_alloc_dir_cluster(struct super_block *sb, u32 *clu);

/* upcase.c */
int exfat_load_upcase(struct super_block *sb, u32 clu, u64 len, u32 csum);
void exfat_free_upcase(struct super_block *sb);
static inline u16 exfat_toupper(const struct exfat_sb_info *sbi, u16 c)
{
	return sbi->upcase[c];
}

/* Room for any name of EXFAT_MAX_NAME_LEN units in any iocharset, and NUL */
#define EXFAT_MAX_NLS_NAME	(EXFAT_MAX_NAME_LEN * NLS_MAX_CHARSET_SIZE + 1)
int exfat_utf16_to_nls(struct super_block *sb, const __le16 *uni,
		       unsigned int len, char *buf, unsigned int buflen);
int exfat_nls_to_utf16(struct super_block *sb, const char *name,
		       unsigned int len, u16 *uni, unsigned int maxlen);
int exfat_name_cmp(const struct exfat_sb_info *sbi, const u16 *a,
		   unsigned int alen, const __le16 *b, unsigned int blen);
bool exfat_name_valid(const u16 *uni, unsigned int len);
int exfat_utf8_to_char(const u8 *s, unsigned int len, u32 *c);
unsigned int exfat_strip_trailing_dots(const char *name, unsigned int len);

/* dindex.c */
struct exfat_dindex *exfat_dindex_alloc(u32 nr_slots);
void exfat_dindex_free(struct exfat_dindex *idx);
int exfat_dindex_grow(struct exfat_dindex *idx, u32 nr_slots);
void exfat_dindex_set_type(struct exfat_dindex *idx, u32 eidx, u8 type);
int exfat_dindex_add(struct exfat_dindex *idx, u32 eidx, u16 hash,
		     u16 xhash);
bool exfat_dindex_remove(struct exfat_dindex *idx, u32 eidx, int hash);
u32 exfat_dindex_run_hint(const struct exfat_dindex *idx, unsigned int nr);
void exfat_dindex_set_run_hint(struct exfat_dindex *idx, unsigned int nr,
			       u32 from);
u32 exfat_dindex_next(const struct exfat_dindex *idx, u16 hash, u16 xhash,
		      u32 *cursor);
bool exfat_dindex_find_run(const struct exfat_dindex *idx, u32 start,
			   unsigned int nr, u32 busy, unsigned int busy_nr,
			   u32 per_sect, u32 *first, u32 *free);

/*
 * Whether nr free entries from first may take an entry set (write-ordering
 * rule 7), per_sect entries to a sector: a set that fits in a sector only
 * inside one; a longer one only with its File and Stream entries in one
 * sector, so that what write_inode rewrites (times, attributes, sizes,
 * SetChecksum) is still one sector write.  From the end of directory eod
 * (in mid-sector, as other systems leave it) on, anywhere: entries after
 * the first end-of-directory entry would be out of the directory.
 */
static inline bool exfat_slots_placeable(u32 first, unsigned int nr, u32 eod,
					 u32 per_sect)
{
	u32 off = first & (per_sect - 1);

	if (first >= eod)
		return true;
	if (nr > per_sect)
		return off + 2 <= per_sect;
	return off + nr <= per_sect;
}

/* extent.c: pure, the caller holds the inode's map_lock */
const struct exfat_extent *exfat_extent_find(const struct exfat_extent_map *map,
					     u32 fclu);
int exfat_extent_add(struct exfat_extent_map *map, u32 clu, u32 len);
void exfat_extent_truncate(struct exfat_extent_map *map, u32 keep);
void exfat_extent_free(struct exfat_extent_map *map);

/* window.c: pure, the caller holds sbi->alloc_lock */
void exfat_windows_init(struct exfat_windows *ws);
void exfat_window_init(struct exfat_window *w);
void exfat_window_del(struct exfat_windows *ws, struct exfat_window *w);
bool exfat_windows_clip(const struct exfat_windows *ws,
			const struct exfat_window *self, u32 *start, u32 *len,
			u32 *next);
u32 exfat_window_want(u32 alloc_clus, unsigned int clu_shift);
void exfat_window_place(struct exfat_windows *ws, struct exfat_window *w,
			u32 last, u32 want, u32 end);
bool exfat_windows_find(const struct exfat_windows *ws,
			const struct exfat_window *self,
			const struct exfat_bitmap *bm, u32 hint, u32 max,
			u32 *start, u32 *len);

/* map.c */
int exfat_check_chain_run(struct inode *inode, u32 clu, u32 len);
int exfat_map_prefill(struct inode *inode, u32 fclu);
int exfat_map_cluster(struct inode *inode, u32 fclu, u32 *clu, u32 *len);
int exfat_map_cluster_locked(struct inode *inode, u32 fclu, u32 *clu,
			     u32 *len);
u32 exfat_map_cached(struct inode *inode, u32 fclu);
int exfat_fill_all_extents(struct inode *inode);
int exfat_extents_from_contiguous(struct inode *inode);
int exfat_extents_append(struct inode *inode, u32 clu, u32 len);
void exfat_extents_truncate(struct inode *inode, u32 keep);
void exfat_drop_extents(struct inode *inode);

/* entry.c */
struct exfat_dir_iter {
	struct super_block *sb;
	struct inode	*dir;		/* NULL: walk from start_clu */
	u32		start_clu;
	u8		flags;		/* EXFAT_FLAG_NO_FAT_CHAIN */
	bool		quiet;		/* from a file handle: -ESTALE */
	bool		sync;		/* write modified sectors at once */
	bool		fua;		/* ... durable (preflush + FUA) */
	bool		dirty;		/* bh was modified */
	int		err;		/* first write error */
	u32		walk_fclu;	/* FAT walk position: file cluster */
	u32		walk_clu;	/* ... and its disk cluster */
	u32		run_fclu;	/* with dir: last run mapped, */
	u32		run_clu;	/* its first disk cluster */
	u32		run_len;	/* and length (0: none) */
	struct buffer_head *bh;		/* sector last returned from */
	sector_t	sect;
};

/*
 * The in-memory index of a directory (dindex.c).  Its contents change
 * only with the directory's i_rwsem held exclusive, and are read with it
 * held shared at least; bad may be set by a reader (then the index is no
 * longer used, and is dropped by the next writer).
 */
#define EXFAT_DINDEX_RUN_HINTS	32
struct exfat_dindex {
	struct list_head lru;		/* sbi->dindex_list */
	struct inode	*dir;
	bool		bad;		/* found out of date: not to be used */
	u32		nr_slots;	/* entries covered */
	unsigned long	*in_use;	/* a bit per entry */
	unsigned long	*eod;		/* a bit per entry of type 0x00 */
	u32		*heads;		/* buckets: node number + 1, or 0 */
	unsigned int	hash_bits;	/* log2 of the number of buckets */
	struct exfat_dindex_node *nodes;
	u32		nr_nodes;	/* used, the free list included */
	u32		cap_nodes;
	u32		free_node;	/* free list: node number + 1, or 0 */
	u32		nr_sets;
	/* per run length: no run of free entries that long starts before */
	u32		run_hint[EXFAT_DINDEX_RUN_HINTS];
};

struct exfat_entry_set {
	u32		eidx;		/* index of the File entry */
	unsigned int	nr;		/* entries in the set */
	union exfat_dentry de[];	/* verified copy */
};

static inline const struct exfat_dentry_stream *
exfat_es_stream(const struct exfat_entry_set *es)
{
	return &es->de[1].stream;
}

struct exfat_walk {
	struct exfat_dir_iter it;
	u32		pos;		/* next entry to look at */
	u32		end;		/* entries the walk covers */
};

struct exfat_walk_item {
	const union exfat_dentry *de;	/* the primary entry */
	u32		eidx;		/* its index */
	unsigned int	nr;		/* it and its secondaries found */
	u8		type;		/* its EntryType */
	bool		whole;		/* all SecondaryCount ones found */
};

void exfat_walk_init(struct exfat_walk *w, struct inode *dir, u32 start);
void exfat_walk_init_pos(struct exfat_walk *w, struct super_block *sb,
			 u32 start_clu, u8 flags, u64 size);
void exfat_walk_limit(struct exfat_walk *w, u32 end);
int exfat_walk_next(struct exfat_walk *w, struct exfat_walk_item *item);
const union exfat_dentry *exfat_walk_entry(struct exfat_walk *w, u32 eidx);
int exfat_walk_release(struct exfat_walk *w);
bool exfat_walk_item_is_dir(const struct exfat_walk_item *item);
int exfat_walk_item_data(struct exfat_walk *w,
			 const struct exfat_walk_item *item, u32 *clu,
			 u8 *flags, u64 *size);
int exfat_walk_item_named(struct exfat_walk *w,
			  const struct exfat_walk_item *item,
			  const u16 *uni, unsigned int len, u16 hash,
			  __le16 *cand);
void exfat_dir_iter_init(struct exfat_dir_iter *it, struct inode *dir);
void exfat_dir_iter_init_pos(struct exfat_dir_iter *it, struct super_block *sb,
			     u32 start_clu, u8 flags);
int exfat_dir_iter_release(struct exfat_dir_iter *it);
int exfat_dir_put_entry(struct exfat_dir_iter *it, u32 eidx,
			const union exfat_dentry *de);
int exfat_put_entry_set(struct exfat_dir_iter *it, struct exfat_entry_set *es);
int exfat_replace_entry_set(struct exfat_dir_iter *it,
			    struct exfat_entry_set *es, u32 old_eidx,
			    unsigned int old_nr);
bool exfat_same_sector(struct super_block *sb, u32 eidx, unsigned int nr,
		       u32 old_eidx, unsigned int old_nr);
int exfat_grow_dir(struct inode *dir);
int exfat_find_slots(struct inode *dir, unsigned int nr, u32 busy,
		     unsigned int busy_nr, u32 *eidx);
int exfat_find_slots_near(struct inode *dir, unsigned int nr, u32 old_eidx,
			  unsigned int old_nr, u32 busy, unsigned int busy_nr,
			  u32 *eidx);
int exfat_dir_find_type(struct inode *dir, u8 type, u32 *eidx);
int exfat_index_find(struct inode *dir, const u16 *uni, unsigned int len,
		     u16 hash, __le16 *cand, struct exfat_entry_set **esp);
void exfat_dir_index_drop(struct inode *dir);
int exfat_dindex_shrinker_init(struct super_block *sb);
void exfat_dindex_shrinker_free(struct super_block *sb);
int exfat_delete_entries(struct exfat_dir_iter *it, u32 eidx, unsigned int nr);
unsigned int exfat_es_get_name(const struct exfat_entry_set *es, __le16 *name);
bool exfat_es_name_differs(const struct exfat_entry_set *es, const u16 *uni,
			   unsigned int len);
u16 exfat_es_attr(const struct exfat_entry_set *es);
void exfat_es_add_attr(struct exfat_entry_set *es, u16 attr);
void exfat_es_stamp(struct exfat_entry_set *es, const struct timespec64 *ts);
void exfat_es_set_stream(struct exfat_entry_set *es, u32 clu, u8 flags,
			 u64 size, u64 valid);
int exfat_es_take_contents(struct exfat_entry_set *new_es,
			   const struct exfat_entry_set *src);
void exfat_es_free_allocs(struct super_block *sb,
			  const struct exfat_entry_set *es);
struct exfat_entry_set *exfat_build_set(struct super_block *sb,
					const u16 *uni, unsigned int len,
					const struct exfat_entry_set *tmpl,
					u16 attr);
const union exfat_dentry *exfat_dir_iter_get(struct exfat_dir_iter *it,
					     u32 eidx);
u32 exfat_dir_entries(struct inode *dir);
int exfat_sync_entry(struct inode *dir, u32 eidx);
int exfat_get_entry_set(struct exfat_dir_iter *it, u32 eidx,
			struct exfat_entry_set **esp);

/* inode.c */
extern const struct inode_operations exfat_file_inode_operations;
struct inode *exfat_iget(struct super_block *sb, struct inode *dir,
			 const struct exfat_entry_set *es);
struct inode *exfat_iget_pos(struct super_block *sb, u32 dir_clu, u8 dir_flags,
			     const struct exfat_entry_set *es);
struct inode *exfat_ilookup(struct super_block *sb, struct inode *dir,
			    u32 eidx);
umode_t exfat_make_mode(struct exfat_sb_info *sbi, u16 attr);
int exfat_write_inode(struct inode *inode, struct writeback_control *wbc);
void exfat_set_position(struct inode *inode, struct inode *dir, u32 eidx);
int exfat_alloc_slots(struct inode *dir, unsigned int nr, u32 busy,
		      unsigned int busy_nr, u32 *eidx);
int __exfat_write_inode(struct inode *inode, bool sync);
int exfat_sync_valid_sizes(struct super_block *sb);
int exfat_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
		  struct iattr *attr);
int exfat_update_time(struct inode *inode, int flags);
int exfat_getattr(struct mnt_idmap *idmap, const struct path *path,
		  struct kstat *stat, u32 request_mask, unsigned int flags);
int exfat_local_offset(struct super_block *sb);

/* file.c */
extern const struct file_operations exfat_file_operations;
extern const struct address_space_operations exfat_aops;
int exfat_truncate(struct inode *inode, loff_t size);
int exfat_file_fsync(struct file *file, loff_t start, loff_t end, int datasync);
void exfat_ioend_work(struct work_struct *work);
int exfat_fiemap(struct inode *inode, struct fiemap_extent_info *fieinfo,
		 u64 start, u64 len);

/* dir.c */
extern const struct file_operations exfat_dir_operations;
int exfat_count_subdirs(struct inode *dir);

/* namei.c */
extern const struct inode_operations exfat_dir_inode_operations;
extern const struct dentry_operations exfat_dentry_ops;
int exfat_dname_to_uni(struct super_block *sb, const struct qstr *qname,
		       u16 *uni, u16 *hash);

/* ioctl.c */
int exfat_shutdown(struct super_block *sb, u32 flags);
u16 exfat_inode_attr(struct inode *inode);
long exfat_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long exfat_compat_ioctl(struct file *file, unsigned int cmd,
			unsigned long arg);
struct fileattr;
int exfat_fileattr_get(struct dentry *dentry, struct fileattr *fa);
int exfat_fileattr_set(struct mnt_idmap *idmap, struct dentry *dentry,
		       struct fileattr *fa);

/* export.c */
extern const struct export_operations exfat_export_ops;

#endif /* _EXFAT2_H */
