// SPDX-License-Identifier: GPL-2.0
/*
 * io-verify: asynchronous O_DIRECT writes that extend files, checked byte
 * by byte.  The data of every byte is a function of its offset in the file
 * (and a seed), so a block written at the wrong offset, or a read that
 * returns zeros or stale clusters, is seen; overlapping writes carry the
 * same bytes, so their order does not matter.
 *
 *   io-verify pairs FILE CLUSTER ENGINE
 *	For each start p (every 512 bytes over three clusters): create FILE,
 *	truncate it to 2 clusters + 512, submit at once two writes of two
 *	clusters, at 512 and at p, wait, and check the whole file (the
 *	fstests generic/538 pattern, with data that shows misplacement).
 *
 *   io-verify append FILE TOTAL CHUNK DEPTH ENGINE
 *	Append CHUNK-byte writes with DEPTH in flight until TOTAL bytes,
 *	while two threads read back (O_DIRECT) what has completed; then
 *	check the size and every byte (the generic/465 pattern).
 *
 *   io-verify mmap-falloc FILE SIZE
 *	Grow FILE byte by byte with fallocate(2), storing each new byte
 *	through a shared mapping, while a thread runs fdatasync in a loop;
 *	then check every byte (the generic/438 pattern).
 *
 *   io-verify mmap-write FILE TOTAL CHUNK
 *	One thread appends CHUNK-byte write(2)s up to TOTAL while another
 *	stores single bytes through a shared mapping at random offsets below
 *	the current size (the same byte values) and a third runs fdatasync
 *	in a loop, so page faults keep meeting writes in flight; then check.
 *
 *   io-verify trunc-race FILE OTHER ROUNDS
 *	One thread writes 1 MiB into FILE and truncates it to a few bytes,
 *	ROUNDS times, while another runs fdatasync on it in a loop and a
 *	third fills OTHER; OTHER is read back with O_DIRECT at the end:
 *	writeback that sent FILE's data to clusters freed by a truncate
 *	shows there.
 *
 *   io-verify mixed FILE SIZE OPS
 *	Five processes on one file, OPS operations each: buffered writes at
 *	any offset and length, O_DIRECT writes, stores through a shared
 *	mapping (the file first grown with fallocate), each in its own
 *	64 KiB stripes of the file, reads (buffered and O_DIRECT) anywhere
 *	and fdatasync with page cache drops.  Writers mark each
 *	512-byte block they covered once their write returned; a read must
 *	find the data in every block marked before it began and never a
 *	byte other than zero or the data; at the end so must the whole file,
 *	whose size covers every completed write.
 *
 * ENGINE is "aio" (io_submit) or "uring" (io_uring).  Exit status 0 when
 * every byte matched, 1 on a mismatch or an I/O error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALIGN 4096

static uint64_t seed;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static unsigned char byte_at(uint64_t off)
{
	unsigned char b = mix(seed ^ (off >> 3)) >> (8 * (off & 7));

	return b ? b : 0xa5;	/* never zero: zeros are "not written" */
}

static void fill(unsigned char *buf, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = byte_at(off + i);
}

static void *xalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, ALIGN, len ? len : ALIGN)) {
		perror("posix_memalign");
		exit(1);
	}
	return p;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* One engine: submit a write, reap completions. */
struct engine {
	int uring;
	aio_context_t ctx;
	struct io_uring ring;
};

static void engine_init(struct engine *e, const char *name, unsigned int depth)
{
	memset(e, 0, sizeof(*e));
	if (!strcmp(name, "uring")) {
		int err = io_uring_queue_init(depth, &e->ring, 0);

		if (err) {
			errno = -err;
			die("io_uring_queue_init");
		}
		e->uring = 1;
	} else if (!strcmp(name, "aio")) {
		if (syscall(SYS_io_setup, depth, &e->ctx))
			die("io_setup");
	} else {
		fprintf(stderr, "unknown engine %s\n", name);
		exit(2);
	}
}

static void engine_exit(struct engine *e)
{
	if (e->uring)
		io_uring_queue_exit(&e->ring);
	else
		syscall(SYS_io_destroy, e->ctx);
}

/* Queue (and for aio, submit) one write; data is the user tag. */
static void engine_write(struct engine *e, int fd, void *buf, size_t len,
			 uint64_t off, uint64_t tag)
{
	if (e->uring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);

		if (!sqe) {
			fprintf(stderr, "io_uring: no sqe\n");
			exit(1);
		}
		io_uring_prep_write(sqe, fd, buf, len, off);
		io_uring_sqe_set_data64(sqe, tag);
	} else {
		struct iocb cb = {
			.aio_data = tag,
			.aio_lio_opcode = IOCB_CMD_PWRITE,
			.aio_fildes = fd,
			.aio_buf = (uintptr_t)buf,
			.aio_nbytes = len,
			.aio_offset = off,
		};
		struct iocb *cbs[1] = { &cb };

		if (syscall(SYS_io_submit, e->ctx, 1, cbs) != 1)
			die("io_submit");
	}
}

static void engine_submit(struct engine *e)
{
	if (e->uring) {
		int ret = io_uring_submit(&e->ring);

		if (ret < 0) {
			errno = -ret;
			die("io_uring_submit");
		}
	}
}

/* Wait for one completion: its tag and result. */
static void engine_reap(struct engine *e, uint64_t *tag, long long *res)
{
	if (e->uring) {
		struct io_uring_cqe *cqe;
		int err = io_uring_wait_cqe(&e->ring, &cqe);

		if (err) {
			errno = -err;
			die("io_uring_wait_cqe");
		}
		*tag = io_uring_cqe_get_data64(cqe);
		*res = cqe->res;
		io_uring_cqe_seen(&e->ring, cqe);
	} else {
		struct io_event ev;

		if (syscall(SYS_io_getevents, e->ctx, 1, 1, &ev, NULL) != 1)
			die("io_getevents");
		*tag = ev.data;
		*res = ev.res;
	}
}

/* Check [0, size) of the file: expect(off) says what each byte must be. */
static int check_file(int fd, uint64_t size, int (*written)(uint64_t, void *),
		      void *arg, const char *ctx)
{
	unsigned char *buf = xalloc(65536);
	uint64_t off = 0;
	int bad = 0;

	while (off < size && !bad) {
		size_t n = size - off < 65536 ? size - off : 65536;
		ssize_t got = pread(fd, buf, n, off);
		size_t i;

		if (got != (ssize_t)n) {
			fprintf(stderr, "%s: read at %llu: %zd of %zu (%s)\n",
				ctx, (unsigned long long)off, got, n,
				got < 0 ? strerror(errno) : "short");
			bad = 1;
			break;
		}
		for (i = 0; i < n; i++) {
			unsigned char want = written(off + i, arg) ?
					     byte_at(off + i) : 0;

			if (buf[i] != want) {
				fprintf(stderr,
					"%s: byte %llu is %#x, expected %#x\n",
					ctx, (unsigned long long)(off + i),
					buf[i], want);
				bad = 1;
				break;
			}
		}
		off += n;
	}
	free(buf);
	return bad;
}

struct pair {
	uint64_t a, b, len;
};

static int pair_written(uint64_t off, void *arg)
{
	struct pair *p = arg;

	return (off >= p->a && off < p->a + p->len) ||
	       (off >= p->b && off < p->b + p->len);
}

static int do_pairs(const char *path, uint64_t clu, const char *eng)
{
	uint64_t len = 2 * clu, trunc = len + 512, p;
	unsigned char *b1 = xalloc(len), *b2 = xalloc(len);
	struct engine e;
	int bad = 0;

	engine_init(&e, eng, 4);
	for (p = 0; p < 512 + len + clu && !bad; p += 512) {
		struct pair pr = { 512, p, len };
		uint64_t size = trunc, tag;
		long long res;
		struct stat st;
		char ctx[64];
		int fd, rfd, i;

		seed = mix(p + 1);
		unlink(path);
		fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
		if (fd < 0 || ftruncate(fd, trunc))
			die(path);
		fill(b1, pr.a, len);
		fill(b2, pr.b, len);
		engine_write(&e, fd, b1, len, pr.a, 1);
		engine_write(&e, fd, b2, len, pr.b, 2);
		engine_submit(&e);
		for (i = 0; i < 2; i++) {
			engine_reap(&e, &tag, &res);
			if (res != (long long)len) {
				fprintf(stderr, "pairs p=%llu: write %llu: %lld\n",
					(unsigned long long)p,
					(unsigned long long)tag, res);
				bad = 1;
			}
		}
		if (pr.a + len > size)
			size = pr.a + len;
		if (pr.b + len > size)
			size = pr.b + len;
		if (fstat(fd, &st) || (uint64_t)st.st_size != size) {
			fprintf(stderr, "pairs p=%llu: size %lld, expected %llu\n",
				(unsigned long long)p, (long long)st.st_size,
				(unsigned long long)size);
			bad = 1;
		}
		snprintf(ctx, sizeof(ctx), "pairs p=%llu", (unsigned long long)p);
		bad |= check_file(fd, size, pair_written, &pr, ctx);
		rfd = open(path, O_RDONLY);
		if (rfd < 0)
			die(path);
		bad |= check_file(rfd, size, pair_written, &pr, ctx);
		close(rfd);
		close(fd);
	}
	engine_exit(&e);
	free(b1);
	free(b2);
	if (!bad)
		printf("pairs: %llu starts checked\n",
		       (unsigned long long)((512 + len + clu) / 512));
	return bad;
}

struct append {
	const char *path;
	uint64_t chunk;
	/* bytes [0, done) completed */
	_Atomic uint64_t done;
	_Atomic int stop;
	_Atomic int bad;
	_Atomic unsigned long reads;
};

static int all_written(uint64_t off, void *arg)
{
	(void)off;
	(void)arg;
	return 1;
}

static void *reader(void *arg)
{
	struct append *a = arg;
	unsigned char *buf = xalloc(a->chunk);
	unsigned int r = (unsigned int)(uintptr_t)&buf;
	int fd = open(a->path, O_RDONLY | O_DIRECT);

	if (fd < 0)
		die(a->path);
	while (!a->stop && !a->bad) {
		uint64_t done = a->done, nchunks = done / a->chunk, off;
		ssize_t got;
		size_t i;

		if (!nchunks)
			continue;
		r = r * 1103515245 + 12345;
		off = (r % nchunks) * a->chunk;
		got = pread(fd, buf, a->chunk, off);
		if (got != (ssize_t)a->chunk) {
			fprintf(stderr, "read at %llu (done %llu): %zd (%s)\n",
				(unsigned long long)off,
				(unsigned long long)done, got,
				got < 0 ? strerror(errno) : "short");
			a->bad = 1;
			break;
		}
		for (i = 0; i < a->chunk; i++) {
			if (buf[i] != byte_at(off + i)) {
				fprintf(stderr,
					"read at %llu: byte %llu is %#x, expected %#x\n",
					(unsigned long long)off,
					(unsigned long long)(off + i), buf[i],
					byte_at(off + i));
				a->bad = 1;
				break;
			}
		}
		a->reads++;
	}
	close(fd);
	free(buf);
	return NULL;
}

static int do_append(const char *path, uint64_t total, uint64_t chunk,
		     unsigned int depth, const char *eng)
{
	struct append a = { .path = path, .chunk = chunk };
	unsigned char **bufs = calloc(depth, sizeof(*bufs));
	uint64_t next = 0, *offs = calloc(depth, sizeof(*offs));
	unsigned char *finished;
	unsigned int i, inflight = 0, nchunks = total / chunk;
	pthread_t th[2];
	struct engine e;
	struct stat st;
	int fd, bad;

	total = (uint64_t)nchunks * chunk;
	finished = calloc(nchunks + 1, 1);
	seed = mix(total ^ chunk);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (fd < 0)
		die(path);
	for (i = 0; i < depth; i++)
		bufs[i] = xalloc(chunk);
	engine_init(&e, eng, depth);
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, reader, &a);

	/* slot i of bufs is free when offs[i] == UINT64_MAX */
	for (i = 0; i < depth; i++)
		offs[i] = UINT64_MAX;
	while ((next < total || inflight) && !a.bad) {
		uint64_t tag;
		long long res;

		for (i = 0; i < depth && next < total; i++) {
			if (offs[i] != UINT64_MAX)
				continue;
			offs[i] = next;
			fill(bufs[i], next, chunk);
			engine_write(&e, fd, bufs[i], chunk, next, i);
			next += chunk;
			inflight++;
		}
		engine_submit(&e);
		engine_reap(&e, &tag, &res);
		inflight--;
		if (res != (long long)chunk) {
			fprintf(stderr, "append at %llu: %lld\n",
				(unsigned long long)offs[tag], res);
			a.bad = 1;
		}
		finished[offs[tag] / chunk] = 1;
		offs[tag] = UINT64_MAX;
		while (a.done < total && finished[a.done / chunk])
			a.done += chunk;
	}
	a.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	engine_exit(&e);
	bad = a.bad;
	if (fstat(fd, &st) || (uint64_t)st.st_size != total) {
		fprintf(stderr, "append: size %lld, expected %llu\n",
			(long long)st.st_size, (unsigned long long)total);
		bad = 1;
	}
	if (!bad)
		bad = check_file(fd, total, all_written, NULL, "append");
	close(fd);
	if (!bad)
		printf("append: %llu bytes, %lu reads while writing\n",
		       (unsigned long long)total, (unsigned long)a.reads);
	for (i = 0; i < depth; i++)
		free(bufs[i]);
	free(bufs);
	free(offs);
	free(finished);
	return bad;
}

struct bg {
	int fd;
	_Atomic int stop;
	_Atomic unsigned long rounds;
};

static void *syncer(void *arg)
{
	struct bg *b = arg;

	while (!b->stop) {
		fdatasync(b->fd);
		b->rounds++;
	}
	return NULL;
}

static int do_mmap_falloc(const char *path, uint64_t size)
{
	struct bg b = { 0 };
	unsigned char *map;
	pthread_t th;
	uint64_t i;
	int fd, bad = 0;

	seed = mix(size);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		die(path);
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap");
	b.fd = fd;
	pthread_create(&th, NULL, syncer, &b);
	for (i = 0; i < size && !bad; i++) {
		int err = posix_fallocate(fd, i, 1);

		if (err) {
			errno = err;
			die("posix_fallocate");
		}
		map[i] = byte_at(i);
		if (i && map[i - 1] != byte_at(i - 1)) {
			fprintf(stderr,
				"mmap-falloc: byte %llu is %#x, expected %#x\n",
				(unsigned long long)(i - 1), map[i - 1],
				byte_at(i - 1));
			bad = 1;
		}
	}
	b.stop = 1;
	pthread_join(th, NULL);
	munmap(map, size);
	if (!bad)
		bad = check_file(fd, size, all_written, NULL, "mmap-falloc");
	close(fd);
	if (!bad)
		printf("mmap-falloc: %llu bytes, %lu syncs\n",
		       (unsigned long long)size, b.rounds);
	return bad;
}

struct mapper {
	int fd;
	unsigned char *map;
	_Atomic int stop;
	_Atomic unsigned long stores;
};

static void *map_storer(void *arg)
{
	struct mapper *m = arg;
	unsigned int r = 12345;

	while (!m->stop) {
		struct stat st;
		uint64_t off;

		if (fstat(m->fd, &st) || st.st_size < 2)
			continue;
		r = r * 1103515245 + 12345;
		off = ((uint64_t)r << 7 ^ r) % (uint64_t)st.st_size;
		m->map[off] = byte_at(off);
		m->stores++;
	}
	return NULL;
}

static int do_mmap_write(const char *path, uint64_t total, uint64_t chunk)
{
	struct mapper m = { 0 };
	struct bg b = { 0 };
	unsigned char *buf = xalloc(chunk);
	pthread_t th[2];
	uint64_t off;
	int fd, bad = 0;

	total -= total % chunk;
	seed = mix(total + chunk);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		die(path);
	m.fd = fd;
	b.fd = fd;
	m.map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m.map == MAP_FAILED)
		die("mmap");
	pthread_create(&th[0], NULL, map_storer, &m);
	pthread_create(&th[1], NULL, syncer, &b);
	for (off = 0; off < total; off += chunk) {
		fill(buf, off, chunk);
		if (pwrite(fd, buf, chunk, off) != (ssize_t)chunk)
			die("pwrite");
	}
	m.stop = 1;
	b.stop = 1;
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	munmap(m.map, total);
	bad = check_file(fd, total, all_written, NULL, "mmap-write");
	close(fd);
	free(buf);
	if (!bad)
		printf("mmap-write: %llu bytes, %lu stores, %lu syncs\n",
		       (unsigned long long)total, m.stores, b.rounds);
	return bad;
}

static int do_trunc_race(const char *path, const char *other,
			 unsigned int rounds)
{
	uint64_t len = 1 << 20, olen = 0;
	unsigned char *buf = xalloc(len), *obuf = xalloc(65536);
	struct bg b = { 0 };
	pthread_t th;
	unsigned int i;
	int fd, ofd, bad;

	unlink(path);
	unlink(other);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	ofd = open(other, O_RDWR | O_CREAT, 0644);
	if (fd < 0 || ofd < 0)
		die(path);
	b.fd = fd;
	pthread_create(&th, NULL, syncer, &b);
	for (i = 0; i < rounds; i++) {
		memset(buf, 0x5a ^ i, len);
		if (pwrite(fd, buf, len, 0) != (ssize_t)len)
			die("pwrite");
		if (ftruncate(fd, 3))
			die("ftruncate");
		/* OTHER takes the clusters the truncate freed */
		seed = 7;
		fill(obuf, olen, 65536);
		if (pwrite(ofd, obuf, 65536, olen) != 65536)
			die("pwrite other");
		olen += 65536;
	}
	b.stop = 1;
	pthread_join(th, NULL);
	if (fsync(fd) || fsync(ofd))
		die("fsync");
	close(ofd);
	ofd = open(other, O_RDONLY | O_DIRECT);
	if (ofd < 0)
		die(other);
	seed = 7;
	bad = check_file(ofd, olen, all_written, NULL, "trunc-race other");
	close(ofd);
	close(fd);
	free(buf);
	free(obuf);
	if (!bad)
		printf("trunc-race: %u rounds, %lu syncs\n", rounds, b.rounds);
	return bad;
}

/* What the processes of "mixed" share (a shared anonymous mapping). */
struct mixed {
	uint64_t size;
	_Atomic uint64_t end;		/* highest end of a completed write */
	_Atomic int bad;
	unsigned char done[];		/* per 512-byte block: written */
};

static uint64_t rnd(uint64_t *r, uint64_t n)
{
	*r = mix(*r);
	return n ? *r % n : 0;
}

/*
 * The writers of "mixed" keep to their own 64 KiB stripes of the file:
 * page cache and O_DIRECT writes to one page at once have no defined
 * result in Linux (a direct write cannot always invalidate a page being
 * dirtied), but clusters, the size and ValidDataLength are shared.
 */
#define STRIPE 65536

/* A random offset in one of the stripes of writer role (of 3). */
static uint64_t stripe(uint64_t *r, uint64_t max, int role)
{
	uint64_t n = max / STRIPE / 3;

	return (3 * rnd(r, n) + role) * STRIPE + rnd(r, STRIPE);
}

static void mark(struct mixed *m, uint64_t off, uint64_t len)
{
	uint64_t b = (off + 511) / 512, e = (off + len) / 512;
	uint64_t end = off + len, cur = m->end;

	for (; b < e; b++)
		m->done[b] = 1;
	while (cur < end && !atomic_compare_exchange_weak(&m->end, &cur, end))
		;
}

/* Check buf (len bytes read at off) against blocks done before the read. */
static int mixed_check(struct mixed *m, const unsigned char *done,
		       const unsigned char *buf, uint64_t off, uint64_t len,
		       const char *how)
{
	uint64_t i;

	for (i = 0; i < len; i++) {
		uint64_t o = off + i;
		unsigned char want = byte_at(o);

		if (buf[i] == want)
			continue;
		if (buf[i] || (done && done[o / 512])) {
			const char *why = done && done[o / 512] ?
					  " (written before the read)" :
					  " or 0";

			fprintf(stderr,
				"mixed (%s): byte %llu is %#x, expected %#x%s\n",
				how, (unsigned long long)o, buf[i], want, why);
			m->bad = 1;
			return 1;
		}
	}
	return 0;
}

static void mixed_child(struct mixed *m, const char *path, int role,
			uint64_t ops)
{
	uint64_t r = mix(role + 1), off, len, i, max = m->size;
	unsigned char *buf = xalloc(16 * 4096), *snap = NULL;
	unsigned char *map = NULL;
	int fd, dfd;

	fd = open(path, O_RDWR);
	dfd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0 || dfd < 0)
		die(path);
	if (role == 2) {
		map = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			die("mmap");
	}
	if (role == 3)
		snap = malloc(max / 512);
	for (i = 0; i < ops && !m->bad; i++) {
		switch (role) {
		case 0:		/* buffered, any offset and length */
			off = stripe(&r, max, 0);
			len = 1 + rnd(&r, STRIPE - off % STRIPE);
			fill(buf, off, len);
			/* the judge's self-test: one byte goes wrong */
			if (i == ops - 1 && getenv("IO_VERIFY_SELFTEST"))
				buf[len / 2] ^= 0x10;
			if (pwrite(fd, buf, len, off) != (ssize_t)len)
				die("mixed pwrite");
			mark(m, off, len);
			break;
		case 1:		/* O_DIRECT, 4 KiB aligned */
			off = stripe(&r, max, 1) & ~4095ULL;
			len = 4096 * (1 + rnd(&r, (STRIPE - off % STRIPE) /
						   4096));
			fill(buf, off, len);
			if (pwrite(dfd, buf, len, off) != (ssize_t)len)
				die("mixed direct pwrite");
			mark(m, off, len);
			break;
		case 2:		/* stores through the mapping */
			off = stripe(&r, max, 2);
			len = 1 + rnd(&r, STRIPE - off % STRIPE);
			if (posix_fallocate(fd, off, len))
				die("mixed fallocate");
			fill(map + off, off, len);
			mark(m, off, len);
			break;
		case 3: {	/* reads, buffered and O_DIRECT */
			int direct = rnd(&r, 2);
			uint64_t b;
			ssize_t got;

			memcpy(snap, m->done, max / 512);
			len = direct ? 4096 * (1 + rnd(&r, 16)) :
				       1 + rnd(&r, 16 * 4096);
			off = direct ? 4096 * rnd(&r, max / 4096) :
				       rnd(&r, max);
			if (off + len > max)
				len = max - off;
			got = pread(direct ? dfd : fd, buf, len, off);
			if (got < 0)
				die("mixed pread");
			if (mixed_check(m, snap, buf, off, got,
					direct ? "direct read" : "read"))
				break;
			/* blocks done before the read lie below the size */
			for (b = (off + got + 511) / 512;
			     b < (off + len) / 512; b++) {
				if (snap[b]) {
					fprintf(stderr,
						"mixed: short read at %llu, over data\n",
						(unsigned long long)(off + got));
					m->bad = 1;
					break;
				}
			}
			break;
		}
		default:	/* fdatasync, and drop the cache */
			if (fdatasync(fd))
				die("mixed fdatasync");
			if (rnd(&r, 4) == 0 &&
			    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
				die("mixed fadvise");
			break;
		}
	}
	exit(m->bad);
}

static int do_mixed(const char *path, uint64_t size, uint64_t ops)
{
	size_t msize = sizeof(struct mixed) + size / 512;
	struct mixed *m;
	unsigned char *buf;
	struct stat st;
	int fd, role, status, bad = 0;
	uint64_t off;

	size -= size % (3 * STRIPE);
	if (!size)
		size = 3 * STRIPE;
	seed = mix(size ^ ops);
	m = mmap(NULL, msize, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap");
	m->size = size;
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT, 0644);
	if (fd < 0)
		die(path);
	for (role = 0; role < 5; role++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (pid == 0)
			mixed_child(m, path, role, role == 4 ? ops / 8 : ops);
	}
	for (role = 0; role < 5; role++) {
		if (wait(&status) < 0)
			die("wait");
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	}
	if (fsync(fd) || fstat(fd, &st))
		die("fsync");
	if (!bad && ((uint64_t)st.st_size < m->end ||
		     (uint64_t)st.st_size > size)) {
		fprintf(stderr, "mixed: size %llu, writes ended at %llu\n",
			(unsigned long long)st.st_size,
			(unsigned long long)m->end);
		bad = 1;
	}
	buf = xalloc(65536);
	for (off = 0; !bad && off < (uint64_t)st.st_size; off += 65536) {
		uint64_t n = st.st_size - off < 65536 ? st.st_size - off : 65536;

		if (pread(fd, buf, n, off) != (ssize_t)n)
			die("mixed final read");
		bad = mixed_check(m, m->done, buf, off, n, "at the end");
	}
	if (!bad)
		printf("mixed: %llu bytes, %llu operations per process\n",
		       (unsigned long long)st.st_size,
		       (unsigned long long)ops);
	free(buf);
	close(fd);
	munmap(m, msize);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "mixed"))
		return do_mixed(argv[2], strtoull(argv[3], NULL, 0),
				strtoull(argv[4], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "mmap-falloc"))
		return do_mmap_falloc(argv[2], strtoull(argv[3], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "mmap-write"))
		return do_mmap_write(argv[2], strtoull(argv[3], NULL, 0),
				     strtoull(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "trunc-race"))
		return do_trunc_race(argv[2], argv[3], strtoul(argv[4], NULL, 0));
	if (argc == 5 && !strcmp(argv[1], "pairs"))
		return do_pairs(argv[2], strtoull(argv[3], NULL, 0), argv[4]);
	if (argc == 7 && !strcmp(argv[1], "append"))
		return do_append(argv[2], strtoull(argv[3], NULL, 0),
				 strtoull(argv[4], NULL, 0),
				 strtoul(argv[5], NULL, 0), argv[6]);
	fprintf(stderr,
		"usage: io-verify pairs FILE CLUSTER aio|uring\n"
		"       io-verify append FILE TOTAL CHUNK DEPTH aio|uring\n"
		"       io-verify mmap-falloc FILE SIZE\n"
		"       io-verify mmap-write FILE TOTAL CHUNK\n"
		"       io-verify trunc-race FILE OTHER ROUNDS\n"
		"       io-verify mixed FILE SIZE OPS\n");
	return 2;
}
