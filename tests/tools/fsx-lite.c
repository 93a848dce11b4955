// SPDX-License-Identifier: GPL-2.0
/*
 * fsx-lite: a small fsx-style random file operation exerciser.
 *
 * Applies a deterministic (seeded) random sequence of operations to one
 * file and keeps an in-memory model of what the file must contain: every
 * read is checked against the model, and so is the whole file every -c
 * operations, at the end, and after every -M command (e.g. a remount).
 *
 * Operations: read, write (pread/pwrite), mapread, mapwrite (mmap, with
 * the EOF page checked for zeros past EOF), dread, dwrite (O_DIRECT),
 * truncate, falloc (mode 0), falloc_keep (KEEP_SIZE), punch (PUNCH_HOLE),
 * zero, zero_keep (ZERO_RANGE), collapse, insert (COLLAPSE/INSERT_RANGE),
 * fsync, fdatasync, reopen.  Each fallocate mode and O_DIRECT is probed
 * once on a scratch file FILE.probe; what the file system does not support
 * (EOPNOTSUPP, or EINVAL for collapse and insert) is skipped and reported
 * on the "unsupported:" line.  O_DIRECT at the -A alignment must work
 * (exit status 2 if not) unless -D allows it to be missing.  A KEEP_SIZE mode that works inside
 * the file but gives EOPNOTSUPP past its end is only used inside the file
 * (reported as "mode(past EOF: EOPNOTSUPP)").  Any other error is fatal.
 *
 * The operations depend on the seed and on which operations are enabled
 * (-x and the probe): to replay a failure, use the same seed on a file
 * system that supports the same operations.
 *
 * Exit status: 0 all good, 1 data or size mismatch, 2 unexpected error,
 * 64 usage error.  On a mismatch the seed, the place of the mismatch, the
 * last operations that touched it and the tail of the operation log are
 * printed.
 *
 * Build: gcc -O2 -Wall -Wextra -o fsx-lite fsx-lite.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>

enum {
	OP_READ, OP_WRITE, OP_MAPREAD, OP_MAPWRITE, OP_DREAD, OP_DWRITE,
	OP_TRUNCATE, OP_FALLOC, OP_FALLOC_KEEP, OP_PUNCH, OP_ZERO,
	OP_ZERO_KEEP, OP_COLLAPSE, OP_INSERT, OP_FSYNC, OP_FDATASYNC,
	OP_REOPEN, OP_NR
};

static const char *const op_name[OP_NR] = {
	"read", "write", "mapread", "mapwrite", "dread", "dwrite",
	"truncate", "falloc", "falloc_keep", "punch", "zero",
	"zero_keep", "collapse", "insert", "fsync", "fdatasync",
	"reopen",
};

static const int op_weight[OP_NR] = {
	10, 10, 4, 4, 4, 4,
	3, 2, 1, 2, 2,
	1, 1, 1, 1, 1,
	1,
};

/* fallocate mode of each fallocate op, -1 for the others */
static const int op_falloc_mode[OP_NR] = {
	-1, -1, -1, -1, -1, -1,
	-1, 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	FALLOC_FL_ZERO_RANGE,
	FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_COLLAPSE_RANGE,
	FALLOC_FL_INSERT_RANGE, -1, -1,
	-1,
};

struct logent {
	int op;
	bool skipped;
	int64_t off, len;
	int64_t size_before, size_after;
};

/* options */
static long nops = 3000;
static uint64_t seed;
static int64_t maxlen = 2 << 20;
static int64_t maxop = 128 << 10;
static long check_every = 500;
static long drop_every;
static long cmd_every;
static const char *cmd;
static int64_t dio_align = 4096;
static bool dio_optional;		/* -D */
static int verbose;
static long log_tail = 200;
static const char *save_path;

/* state */
static const char *path;
static int fd = -1, dfd = -1;
static unsigned char *good, *buf, *dbuf;
static int64_t fsize;		/* size of the file per the model */
static int64_t blksize;		/* st_blksize: collapse/insert alignment */
static long pagesize;
static bool enabled[OP_NR];
static bool inside_only[OP_NR];	/* KEEP_SIZE mode refused past EOF */
static char unsupported[512];
static struct logent *oplog;
static long opno = -1;	/* index of the operation being done, -1: setup */
static long counts[OP_NR], skips[OP_NR];
static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int64_t rnd_below(int64_t n)
{
	return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t rdown(int64_t x, int64_t a) { return x / a * a; }
static int64_t rup(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static void print_log(void)
{
	long first = opno - log_tail + 1, i;

	if (first < 0)
		first = 0;
	printf("operation log (ops %ld..%ld of seed %" PRIu64 "):\n",
	       first, opno, seed);
	for (i = first; i <= opno && i < nops; i++) {
		const struct logent *e = &oplog[i];

		printf("  #%ld %-11s off 0x%" PRIx64 " len 0x%" PRIx64
		       " size 0x%" PRIx64 " -> 0x%" PRIx64 "%s\n", i,
		       op_name[e->op], e->off, e->len, e->size_before,
		       e->size_after, e->skipped ? " (skipped)" : "");
	}
}

static bool op_touches(const struct logent *e, int64_t at)
{
	int64_t lo = min64(e->size_before, e->size_after);
	int64_t hi = max64(e->size_before, e->size_after);

	if (e->skipped)
		return false;
	switch (e->op) {
	case OP_READ: case OP_MAPREAD: case OP_DREAD: case OP_FSYNC:
	case OP_FDATASYNC: case OP_REOPEN: case OP_FALLOC_KEEP:
		return false;
	case OP_COLLAPSE: case OP_INSERT:
		return at >= e->off;
	case OP_TRUNCATE:
		return at >= lo && at < hi;
	default:
		return (at >= e->off && at < e->off + e->len) ||
		       (at >= lo && at < hi);
	}
}

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int status, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("fsx-lite: %s at op #%ld (%s) of seed %" PRIu64 ": ",
	       status == 1 ? "MISMATCH" : "ERROR", opno,
	       opno < 0 ? "setup" : op_name[oplog[opno].op], seed);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	print_log();
	fflush(stdout);
	exit(status);
}

static void __attribute__((noreturn)) mismatch(const char *what, int64_t base,
					       const unsigned char *got,
					       int64_t n, int64_t bad)
{
	int64_t at = base + bad, lo = rdown(bad, 16), i;
	long k, shown = 0;

	printf("fsx-lite: %s: first bad byte at file offset 0x%" PRIx64
	       " (model size 0x%" PRIx64 ")\n", what, at, fsize);
	printf("  offset       expected                         got\n");
	for (; lo < n && lo < bad + 64; lo += 16) {
		printf("  0x%08" PRIx64 "  ", base + lo);
		for (i = lo; i < lo + 16; i++)
			printf(i < n ? "%02x" : "  ", good[base + i]);
		printf("  ");
		for (i = lo; i < lo + 16; i++)
			printf(i < n ? "%02x" : "  ", got[i]);
		printf("\n");
	}
	printf("  last operations that changed offset 0x%" PRIx64 ":\n", at);
	for (k = opno; k >= 0 && shown < 5; k--) {
		if (k < nops && op_touches(&oplog[k], at)) {
			printf("    #%ld %s off 0x%" PRIx64 " len 0x%" PRIx64 "\n",
			       k, op_name[oplog[k].op], oplog[k].off,
			       oplog[k].len);
			shown++;
		}
	}
	die(1, "%s", what);
}

static void compare(const char *what, int64_t off, const unsigned char *got,
		    int64_t n)
{
	int64_t i;

	if (!memcmp(good + off, got, n))
		return;
	for (i = 0; i < n && good[off + i] == got[i]; i++)
		;
	mismatch(what, off, got, n, i);
}

static void open_file(bool trunc)
{
	int flags = O_RDWR | O_CREAT | (trunc ? O_TRUNC : 0);

	fd = open(path, flags, 0644);
	if (fd < 0)
		die(2, "open %s: %s", path, strerror(errno));
	if (enabled[OP_DREAD] || enabled[OP_DWRITE]) {
		dfd = open(path, O_RDWR | O_DIRECT);
		if (dfd < 0)
			die(2, "open %s O_DIRECT: %s", path, strerror(errno));
	}
}

static void close_file(void)
{
	if (close(fd))
		die(2, "close: %s", strerror(errno));
	if (dfd >= 0 && close(dfd))
		die(2, "close O_DIRECT fd: %s", strerror(errno));
	fd = -1;
	dfd = -1;
}

static void check_file(const char *why)
{
	struct stat st;
	int64_t off, n;
	ssize_t r;

	if (fstat(fd, &st))
		die(2, "fstat: %s", strerror(errno));
	if (st.st_size != fsize)
		die(1, "%s: file size 0x%" PRIx64 ", model 0x%" PRIx64, why,
		    (int64_t)st.st_size, fsize);
	for (off = 0; off < fsize; off += n) {
		n = min64(fsize - off, maxop);
		r = pread(fd, buf, n, off);
		if (r < 0)
			die(2, "%s: pread 0x%" PRIx64 ": %s", why, off,
			    strerror(errno));
		if (r != n)
			die(1, "%s: short read at 0x%" PRIx64 ": %zd of %" PRId64,
			    why, off, r, n);
		compare(why, off, buf, n);
	}
	r = pread(fd, buf, 1, fsize);
	if (r != 0)
		die(1, "%s: read at EOF returned %zd", why, r);
}

static void fill(unsigned char *p, int64_t off, int64_t len)
{
	int64_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(((uint64_t)(opno + 1) * 7 +
				       (uint64_t)(off + i) % 251) % 255 + 1);
}

/* A range in [0, limit): offsets and lengths biased to boundaries. */
static void pick(int64_t limit, int64_t *offp, int64_t *lenp)
{
	int64_t off, len;

	switch (rnd_below(8)) {
	case 0:
		off = rdown(rnd_below(limit), 512);
		break;
	case 1:
		off = rdown(rnd_below(limit), 4096);
		break;
	case 2:
		off = max64(0, fsize - 8192 + rnd_below(16384));
		break;
	default:
		off = rnd_below(limit);
	}
	switch (rnd_below(8)) {
	case 0:
		len = 1 + rnd_below(16);
		break;
	case 1:
		len = 512 * (1 + rnd_below(maxop / 512));
		break;
	default:
		len = 1 + rnd_below(maxop);
	}
	if (off >= limit)
		off = limit - 1;
	if (off + len > limit)
		len = limit - off;
	*offp = off;
	*lenp = len;
}

static void do_read(struct logent *e)
{
	int64_t off, len, want, done = 0;
	ssize_t r;

	if (fsize == 0 || rnd_below(16) == 0) {
		off = fsize + rnd_below(maxop);		/* at or past EOF */
		len = 1 + rnd_below(4096);
	} else {
		pick(fsize, &off, &len);
	}
	e->off = off;
	e->len = len;
	want = max64(0, min64(len, fsize - off));
	while (done < len) {
		r = pread(fd, buf + done, len - done, off + done);
		if (r < 0)
			die(2, "pread: %s", strerror(errno));
		if (r == 0)
			break;
		done += r;
	}
	if (done != want)
		die(1, "read returned %" PRId64 " bytes, want %" PRId64,
		    done, want);
	compare("read", off, buf, want);
}

static void model_write(int64_t off, int64_t len, const unsigned char *p)
{
	memcpy(good + off, p, len);
	fsize = max64(fsize, off + len);
}

static void do_write(struct logent *e)
{
	int64_t off, len, done = 0;
	ssize_t r;

	pick(maxlen, &off, &len);
	e->off = off;
	e->len = len;
	fill(buf, off, len);
	while (done < len) {
		r = pwrite(fd, buf + done, len - done, off + done);
		if (r <= 0)
			die(2, "pwrite: %s", r ? strerror(errno) : "wrote 0");
		done += r;
	}
	model_write(off, len, buf);
}

static void do_mapread(struct logent *e)
{
	int64_t off, len, pg, end, mlen, i;
	unsigned char *p;

	if (fsize == 0) {
		e->skipped = true;
		return;
	}
	pick(fsize, &off, &len);
	e->off = off;
	e->len = len;
	pg = rdown(off, pagesize);
	end = rup(off + len, pagesize);
	mlen = end - pg;
	p = mmap(NULL, mlen, PROT_READ, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		die(2, "mmap read: %s", strerror(errno));
	compare("mapread", off, p + (off - pg), len);
	/* past EOF in the EOF page: zeros */
	if (off + len == fsize) {
		for (i = fsize - pg; i < mlen; i++) {
			if (p[i]) {
				printf("fsx-lite: byte 0x%02x at 0x%" PRIx64
				       " past EOF 0x%" PRIx64 " in the mapped EOF page\n",
				       p[i], pg + i, fsize);
				die(1, "mmap past EOF not zero");
			}
		}
	}
	if (munmap(p, mlen))
		die(2, "munmap: %s", strerror(errno));
}

static void do_mapwrite(struct logent *e)
{
	int64_t off, len, pg, mlen;
	unsigned char *p;

	pick(maxlen, &off, &len);
	e->off = off;
	e->len = len;
	if (off + len > fsize) {
		if (ftruncate(fd, off + len))
			die(2, "ftruncate for mapwrite: %s", strerror(errno));
		fsize = off + len;
	}
	pg = rdown(off, pagesize);
	mlen = off + len - pg;
	p = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, pg);
	if (p == MAP_FAILED)
		die(2, "mmap write: %s", strerror(errno));
	fill(p + (off - pg), off, len);
	model_write(off, len, p + (off - pg));
	if (rnd_below(2) && msync(p, mlen, MS_SYNC))
		die(2, "msync: %s", strerror(errno));
	if (munmap(p, mlen))
		die(2, "munmap: %s", strerror(errno));
}

static void pick_direct(int64_t limit, int64_t *off, int64_t *len)
{
	pick(limit, off, len);
	*off = rdown(*off, dio_align);
	*len = rup(*len, dio_align);
	if (*off + *len > rdown(maxlen, dio_align))
		*len = rdown(maxlen, dio_align) - *off;
	if (*len <= 0) {
		*off = 0;
		*len = dio_align;
	}
}

static void do_dread(struct logent *e)
{
	int64_t off, len, want;
	ssize_t r;

	pick_direct(fsize ? fsize : maxlen, &off, &len);
	e->off = off;
	e->len = len;
	want = max64(0, min64(len, fsize - off));
	r = pread(dfd, dbuf, len, off);
	if (r < 0)
		die(2, "direct pread: %s", strerror(errno));
	if (r != want)
		die(1, "direct read returned %zd bytes, want %" PRId64, r, want);
	compare("dread", off, dbuf, want);
}

static void do_dwrite(struct logent *e)
{
	int64_t off, len;
	ssize_t r;

	pick_direct(maxlen, &off, &len);
	e->off = off;
	e->len = len;
	fill(dbuf, off, len);
	r = pwrite(dfd, dbuf, len, off);
	if (r < 0)
		die(2, "direct pwrite: %s", strerror(errno));
	if (r != len)
		die(2, "direct pwrite wrote %zd of %" PRId64, r, len);
	model_write(off, len, dbuf);
}

static void set_size(int64_t size)
{
	if (size < fsize)
		memset(good + size, 0, fsize - size);
	fsize = size;
}

static void do_truncate(struct logent *e)
{
	int64_t size;

	switch (rnd_below(8)) {
	case 0:
		size = 0;
		break;
	case 1: case 2:
		size = max64(0, min64(maxlen, fsize - 4096 + rnd_below(8192)));
		break;
	default:
		size = rnd_below(maxlen + 1);
	}
	e->off = size;
	if (ftruncate(fd, size))
		die(2, "ftruncate 0x%" PRIx64 ": %s", size, strerror(errno));
	set_size(size);
}

static void do_falloc(struct logent *e)
{
	int mode = op_falloc_mode[e->op];
	int64_t off, len, end;

	if (e->op == OP_COLLAPSE || e->op == OP_INSERT) {
		int64_t nblk = fsize / blksize;

		if (e->op == OP_COLLAPSE && nblk < 2) {
			e->skipped = true;
			return;
		}
		if (e->op == OP_INSERT && (fsize == 0 ||
					   rdown(maxlen - fsize, blksize) < blksize)) {
			e->skipped = true;
			return;
		}
		if (e->op == OP_COLLAPSE) {
			off = rnd_below(nblk - 1) * blksize;
			len = (1 + rnd_below(nblk - 1 - off / blksize)) * blksize;
		} else {
			off = rnd_below(rup(fsize, blksize) / blksize) * blksize;
			if (off >= fsize)
				off -= blksize;
			len = (1 + rnd_below(min64(rdown(maxlen - fsize, blksize),
						   maxop) / blksize)) * blksize;
			if (len < blksize)
				len = blksize;
		}
	} else if (inside_only[e->op]) {
		if (fsize == 0) {
			e->skipped = true;
			return;
		}
		pick(fsize, &off, &len);
	} else {
		pick(maxlen, &off, &len);
	}
	e->off = off;
	e->len = len;
	if (fallocate(fd, mode, off, len))
		die(2, "fallocate(mode 0x%x, 0x%" PRIx64 ", 0x%" PRIx64 "): %s",
		    mode, off, len, strerror(errno));
	end = off + len;
	switch (e->op) {
	case OP_FALLOC:
		fsize = max64(fsize, end);
		break;
	case OP_FALLOC_KEEP:
		break;
	case OP_PUNCH:
	case OP_ZERO_KEEP:
		if (off < fsize)
			memset(good + off, 0, min64(end, fsize) - off);
		break;
	case OP_ZERO:
		memset(good + off, 0, len);
		fsize = max64(fsize, end);
		break;
	case OP_COLLAPSE:
		memmove(good + off, good + end, fsize - end);
		memset(good + fsize - len, 0, len);
		fsize -= len;
		break;
	case OP_INSERT:
		memmove(good + end, good + off, fsize - off);
		memset(good + off, 0, len);
		fsize += len;
		break;
	}
}

static void run_cmd(const char *why)
{
	int st;

	close_file();
	st = system(cmd);
	if (st != 0)
		die(2, "%s: command failed (status %d): %s", why, st, cmd);
	open_file(false);
	check_file(why);
}

static void probe_direct_io(void)
{
	char *ppath;
	int pfd, op;
	ssize_t r;
	struct stat st;
	int64_t plen;

	if (asprintf(&ppath, "%s.probe", path) < 0)
		die(2, "out of memory");
	pfd = open(ppath, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (pfd < 0)
		die(2, "open %s: %s", ppath, strerror(errno));
	if (fstat(pfd, &st))
		die(2, "fstat: %s", strerror(errno));
	blksize = st.st_blksize > 0 ? st.st_blksize : 4096;
	plen = 4 * max64(blksize, dio_align);
	fill(buf, 0, min64(plen, maxop));
	for (int64_t off = 0; off < plen; off += min64(plen, maxop))
		if (pwrite(pfd, buf, min64(plen - off, maxop), off) < 0)
			die(2, "probe write: %s", strerror(errno));
	for (op = 0; op < OP_NR; op++) {
		int mode = op_falloc_mode[op];
		int64_t off = blksize, len = blksize;

		if (mode < 0 || !enabled[op])
			continue;
		if (op == OP_FALLOC || op == OP_ZERO)
			off = plen;	/* grows the file */
		if (fallocate(pfd, mode, off, len) == 0) {
			/* KEEP_SIZE modes also across the end of the file */
			if (!(mode & FALLOC_FL_KEEP_SIZE))
				continue;
			if (fstat(pfd, &st))
				die(2, "fstat: %s", strerror(errno));
			if (fallocate(pfd, mode, st.st_size - blksize / 2,
				      blksize) == 0)
				continue;
			if (errno != EOPNOTSUPP)
				die(2, "probing %s past EOF (fallocate mode 0x%x): %s",
				    op_name[op], mode, strerror(errno));
			inside_only[op] = true;
			snprintf(unsupported + strlen(unsupported),
				 sizeof(unsupported) - strlen(unsupported),
				 " %s(past EOF: EOPNOTSUPP)", op_name[op]);
			continue;
		}
		if (errno == EOPNOTSUPP ||
		    (errno == EINVAL && (op == OP_COLLAPSE || op == OP_INSERT))) {
			enabled[op] = false;
			snprintf(unsupported + strlen(unsupported),
				 sizeof(unsupported) - strlen(unsupported),
				 " %s(%s)", op_name[op],
				 errno == EOPNOTSUPP ? "EOPNOTSUPP" : "EINVAL");
			continue;
		}
		die(2, "probing %s (fallocate mode 0x%x): %s", op_name[op],
		    mode, strerror(errno));
	}
	close(pfd);
	if (enabled[OP_DREAD] || enabled[OP_DWRITE]) {
		pfd = open(ppath, O_RDWR | O_DIRECT);
		r = -1;
		if (pfd >= 0) {
			fill(dbuf, 0, dio_align);
			r = pwrite(pfd, dbuf, dio_align, dio_align);
			if (r == dio_align)
				r = pread(pfd, dbuf, dio_align, 0);
			close(pfd);
		}
		if (r != dio_align) {
			if (errno != EINVAL || !dio_optional)
				die(2, "probing O_DIRECT (alignment %" PRId64 "): %s",
				    dio_align, strerror(errno));
			enabled[OP_DREAD] = false;
			enabled[OP_DWRITE] = false;
			snprintf(unsupported + strlen(unsupported),
				 sizeof(unsupported) - strlen(unsupported),
				 " dread,dwrite(EINVAL)");
		}
	}
	if (unlink(ppath))
		die(2, "unlink %s: %s", ppath, strerror(errno));
	free(ppath);
}

static void exclude(char *list)
{
	char *tok;
	int op;

	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		for (op = 0; op < OP_NR; op++)
			if (!strcmp(tok, op_name[op]))
				break;
		if (op == OP_NR) {
			fprintf(stderr, "fsx-lite: unknown operation '%s'\n", tok);
			exit(64);
		}
		enabled[op] = false;
	}
}

static int64_t parse_size(const char *s)
{
	char *end;
	int64_t v = strtoll(s, &end, 0);

	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	}
	if (*end || v < 0) {
		fprintf(stderr, "fsx-lite: bad number '%s'\n", s);
		exit(64);
	}
	return v;
}

static void __attribute__((noreturn)) usage(void)
{
	fputs("usage: fsx-lite [options] FILE\n"
"  -N n     operations (default 3000)\n"
"  -S seed  random seed (default: from the clock; always printed)\n"
"  -l len   maximum file size (default 2M)\n"
"  -o len   maximum length of one operation (default 128K)\n"
"  -c n     check the whole file every n operations (default 500, 0: only at the end)\n"
"  -d n     every n operations fsync and drop the file's page cache (default 0: never)\n"
"  -M cmd   every -m operations and at the end: close the file, run cmd\n"
"           (e.g. a remount), reopen it and check the whole file\n"
"  -m n     see -M (default: only at the end)\n"
"  -x ops   comma-separated operations not to do, of:\n"
"           read write mapread mapwrite dread dwrite truncate falloc\n"
"           falloc_keep punch zero zero_keep collapse insert fsync\n"
"           fdatasync reopen\n"
"  -A n     O_DIRECT alignment (default 4096)\n"
"  -D       without O_DIRECT (EINVAL), skip dread and dwrite instead of\n"
"           failing\n"
"  -L n     operations shown from the log on failure (default 200)\n"
"  -s path  at the end write the expected contents to path\n"
"  -v       print every operation\n", stderr);
	exit(64);
}

int main(int argc, char **argv)
{
	long total = 0;
	bool seeded = false;
	int c, op;

	for (op = 0; op < OP_NR; op++)
		enabled[op] = true;
	while ((c = getopt(argc, argv, "N:S:l:o:c:d:M:m:x:A:DL:s:v")) != -1) {
		switch (c) {
		case 'N':
			nops = parse_size(optarg);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'l':
			maxlen = parse_size(optarg);
			break;
		case 'o':
			maxop = parse_size(optarg);
			break;
		case 'c':
			check_every = parse_size(optarg);
			break;
		case 'd':
			drop_every = parse_size(optarg);
			break;
		case 'M':
			cmd = optarg;
			break;
		case 'm':
			cmd_every = parse_size(optarg);
			break;
		case 'x':
			exclude(optarg);
			break;
		case 'D':
			dio_optional = true;
			break;
		case 'A':
			dio_align = parse_size(optarg);
			break;
		case 'L':
			log_tail = parse_size(optarg);
			break;
		case 's':
			save_path = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || maxlen < 4096 || maxop < 1 || dio_align < 512 ||
	    (dio_align & (dio_align - 1)))
		usage();
	path = argv[optind];
	if (!seeded)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	rng = seed;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pagesize = sysconf(_SC_PAGESIZE);
	maxop = min64(maxop, maxlen);
	oplog = calloc(nops + 1, sizeof(*oplog));
	good = calloc(maxlen + maxop, 1);
	buf = malloc(maxlen + maxop);
	if (!oplog || !good || !buf ||
	    posix_memalign((void **)&dbuf, dio_align, rup(maxop, dio_align) +
			   4 * max64(dio_align, 65536)))
		die(2, "out of memory");

	probe_direct_io();
	for (op = 0; op < OP_NR; op++)
		if (enabled[op])
			total += op_weight[op];
	if (!total)
		die(2, "no operation left to do");
	printf("fsx-lite: seed %" PRIu64 ", %ld ops on %s, max size %" PRId64
	       ", max op %" PRId64 ", block %" PRId64 "\n", seed, nops, path,
	       maxlen, maxop, blksize);
	printf("unsupported:%s\n", unsupported[0] ? unsupported : " none");
	/* same seed and same enabled operations: same sequence */
	rng = seed;

	open_file(true);
	fsize = 0;
	for (opno = 0; opno < nops; opno++) {
		struct logent *e = &oplog[opno];
		int64_t r = rnd_below(total);

		for (op = 0; op < OP_NR; op++) {
			if (!enabled[op])
				continue;
			if (r < op_weight[op])
				break;
			r -= op_weight[op];
		}
		e->op = op;
		e->size_before = fsize;
		e->size_after = fsize;
		switch (op) {
		case OP_READ:
			do_read(e);
			break;
		case OP_WRITE:
			do_write(e);
			break;
		case OP_MAPREAD:
			do_mapread(e);
			break;
		case OP_MAPWRITE:
			do_mapwrite(e);
			break;
		case OP_DREAD:
			do_dread(e);
			break;
		case OP_DWRITE:
			do_dwrite(e);
			break;
		case OP_TRUNCATE:
			do_truncate(e);
			break;
		case OP_FSYNC:
			if (fsync(fd))
				die(2, "fsync: %s", strerror(errno));
			break;
		case OP_FDATASYNC:
			if (fdatasync(fd))
				die(2, "fdatasync: %s", strerror(errno));
			break;
		case OP_REOPEN:
			close_file();
			open_file(false);
			break;
		default:
			do_falloc(e);
			break;
		}
		e->size_after = fsize;
		if (e->skipped)
			skips[op]++;
		else
			counts[op]++;
		if (verbose)
			printf("#%ld %s off 0x%" PRIx64 " len 0x%" PRIx64
			       " size 0x%" PRIx64 "%s\n", opno, op_name[op],
			       e->off, e->len, fsize, e->skipped ? " (skipped)" : "");
		if (drop_every && (opno + 1) % drop_every == 0) {
			if (fsync(fd))
				die(2, "fsync: %s", strerror(errno));
			if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
				die(2, "posix_fadvise DONTNEED failed");
		}
		if (check_every && (opno + 1) % check_every == 0)
			check_file("periodic check");
		if (cmd && cmd_every && (opno + 1) % cmd_every == 0 &&
		    opno + 1 < nops)
			run_cmd("check after -M command");
	}
	opno = nops - 1;
	check_file("final check");
	if (cmd)
		run_cmd("final check after -M command");
	close_file();
	if (save_path) {
		FILE *f = fopen(save_path, "wb");

		if (!f || fwrite(good, 1, fsize, f) != (size_t)fsize || fclose(f))
			die(2, "saving the model to %s: %s", save_path,
			    strerror(errno));
	}
	printf("fsx-lite: seed %" PRIu64 ": %ld ops, no mismatch, final size %"
	       PRId64 "\n  done:", seed, nops, fsize);
	for (op = 0; op < OP_NR; op++)
		if (counts[op])
			printf(" %s=%ld", op_name[op], counts[op]);
	printf("\n  skipped (nothing to do):");
	for (op = 0; op < OP_NR; op++)
		if (skips[op])
			printf(" %s=%ld", op_name[op], skips[op]);
	printf("\n");
	return 0;
}
