#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Turn the exfat2/ sources of this repository into a git format-patch series
# that adds the driver under fs/exfat2/ of Debian's linux-source-6.12
# (/usr/src/linux-source-6.12.tar.xz), one topic per patch, with a cover
# letter.  Every patch builds on its own (tests/patches.sh checks that, and
# runs checkpatch.pl --strict on each).
#
# Usage: scripts/mkpatches.sh [-o OUTDIR]
#
#   -o OUTDIR   where to write 0000-cover-letter.patch, 0001-*.patch, ...
#               (default ${XDG_CACHE_HOME:-~/.cache}/exfat2-patches/series;
#               old *.patch files in OUTDIR are removed first)
#
# The tarball is extracted once into a git repository under
# ${XDG_CACHE_HOME:-~/.cache}/exfat2-patches/linux (one commit, tag
# exfat2-base; about 2 minutes the first time), which is reused as long as
# the tarball does not change.  The series is built there with plumbing
# commands on branch exfat2-series, without a checkout.  The sources are
# taken from the working tree of exfat2/ (and Documentation/filesystems/
# exfat2.rst), as they are on disk.
#
# Adaptations made for the in-tree form (the out-of-tree files are not
# changed):
#   - fs/exfat2/Makefile replaces exfat2/Kbuild; its exfat2-y list grows
#     patch by patch, in the order of exfat2/Kbuild;
#   - fs/exfat2/Kconfig is exfat2/Kconfig; until the KUnit patch it stops
#     before EXFAT2_KUNIT_TEST, until the documentation patch it lacks the
#     "See <file:Documentation/filesystems/exfat2.rst>" sentence, and the
#     KUnit help gets the usual pointer to the KUnit documentation;
#   - in *.c, the "#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)" block around
#     #include "*_test.c" is left out before the KUnit patch (out of tree,
#     exfat2/Kbuild defines that option when the kernel has KUnit);
#   - until every object is there, fs/exfat2/Makefile only compiles them
#     (always-$(CONFIG_EXFAT2_FS)) and links no module, so that a full
#     kernel build (allmodconfig too) succeeds at every patch; the patch
#     "build the driver" turns them into exfat2.o;
#   - checkpatch wants a MAINTAINERS change in each patch that adds files:
#     the MAINTAINERS entry lists the files one by one as they are added,
#     and the last patch folds them into "F: fs/exfat2/".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
src=$repo/exfat2
doc=$repo/Documentation/filesystems/exfat2.rst
tarball=/usr/src/linux-source-6.12.tar.xz
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-patches
base_git=$cache/linux
out=$cache/series

die() { echo "mkpatches.sh: $*" >&2; exit 1; }

while getopts o:h opt; do
	case $opt in
	o) out=$OPTARG ;;
	h) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "usage: $0 [-o OUTDIR]" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "usage: $0 [-o OUTDIR]"
[ -r "$tarball" ] || die "no $tarball (apt-get install linux-source-6.12)"
[ -f "$src/Kbuild" ] || die "no $src/Kbuild"

name=$(git -C "$repo" config user.name || true)
email=$(git -C "$repo" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	name='exfat2 developers' email='exfat2@example.org'
fi
ident="$name <$email>"

# ---------------------------------------------------------------- base tree
# One commit holding the tarball exactly as shipped (Debian's .gitignore
# ignores the top level, hence add -f).  Fixed identity and dates make its
# id depend only on the tarball's contents.
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
stamp="$(stat -c '%s %Y' "$tarball") $tarball"
if [ ! -f "$base_git/.git/exfat2-source" ] ||
   [ "$(cat "$base_git/.git/exfat2-source")" != "$stamp" ]; then
	echo "mkpatches.sh: extracting $tarball into $base_git (once)" >&2
	rm -rf "$base_git" "$base_git.tmp"
	mkdir -p "$base_git.tmp"
	tar -xJf "$tarball" -C "$base_git.tmp" --strip-components=1
	pkgver=$(dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null ||
		 echo unknown)
	(
		cd "$base_git.tmp"
		git init -q -b master .
		git add -A -f
		d=2000-01-01T00:00:00Z i=linux-source e=linux-source@localhost
		env GIT_AUTHOR_NAME=$i GIT_AUTHOR_EMAIL=$e GIT_AUTHOR_DATE=$d \
		    GIT_COMMITTER_NAME=$i GIT_COMMITTER_EMAIL=$e GIT_COMMITTER_DATE=$d \
			git commit -q -m "Debian linux-source-6.12 $pkgver"
		git tag exfat2-base
		git config gc.auto 0
	)
	echo "$stamp" >"$base_git.tmp/.git/exfat2-source"
	mv "$base_git.tmp" "$base_git"
fi
git() { command git -C "$base_git" "$@"; }
base=$(git rev-parse --verify -q 'exfat2-base^{commit}') || die "no exfat2-base in $base_git"

# ------------------------------------------------------------------- series
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage
export GIT_INDEX_FILE=$tmp/index
git read-tree "$base"

read -r -a kbuild_objs <<<"$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$src/Kbuild" |
	sed -n 's/^exfat2-y[[:space:]]*[:+]\{0,1\}=//p' | tr '\n' ' ')"
[ ${#kbuild_objs[@]} -gt 0 ] || die "no exfat2-y objects in $src/Kbuild"

# Every source file must be placed exactly once; objects in Kbuild order.
declare -A placed=()
objs=() kunit=0 withdoc=0 linked=0 maint_files=()
added_now=()

add_src() {	# add_src FILE...: fs/exfat2/FILE from exfat2/FILE
	local f
	for f in "$@"; do
		[ -f "$src/$f" ] || die "no $src/$f"
		[ -z "${placed[$f]:-}" ] || die "$f placed twice"
		placed[$f]=1
		mkdir -p "$stage/fs/exfat2"
		cp "$src/$f" "$stage/fs/exfat2/$f"
		added_now+=("fs/exfat2/$f")
		case $f in
		*.c) [[ $f == *_test.c ]] || objs+=("${f%.c}.o") ;;
		esac
	done
}

# The #include of a *_test.c: left out before the KUnit patch, then guarded
# by the Kconfig option (as ext4 does for mballoc-test.c).  Regenerated from
# exfat2/ at every patch.
fix_test_includes() {
	local f n
	for f in "${!placed[@]}"; do
		[[ $f == *.c ]] || continue
		cp "$src/$f" "$stage/fs/exfat2/$f"
		n=$(grep -c '^#include "[a-z0-9_]*_test\.c"' "$src/$f" || true)
		[ "$n" -gt 0 ] || continue
		awk -v kunit="$kunit" '
			{ line[NR] = $0 }
			END {
				n = 0
				for (i = 1; i <= NR; i++) {
					if (line[i] ~ /^#if IS_ENABLED\(CONFIG_(KUNIT|EXFAT2_KUNIT_TEST)\)$/ &&
					    line[i + 1] ~ /^#include "[a-z0-9_]*_test\.c"$/ &&
					    line[i + 2] == "#endif") {
						if (kunit) {
							out[++n] = "#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)"
							out[++n] = line[i + 1]
							out[++n] = line[i + 2]
						} else if (n > 0 && out[n] == "") {
							n--
						}
						i += 2
						done++
						continue
					}
					out[++n] = line[i]
				}
				for (i = 1; i <= n; i++)
					print out[i]
				exit done == 0
			}' "$src/$f" >"$stage/fs/exfat2/$f" ||
			die "$f: unexpected form of the *_test.c include"
		if [ "$kunit" = 1 ]; then
			[ "$(grep -c '^#if IS_ENABLED(CONFIG_EXFAT2_KUNIT_TEST)$' "$stage/fs/exfat2/$f")" = "$n" ] ||
				die "$f: could not guard every *_test.c include"
		elif grep -q '_test\.c"' "$stage/fs/exfat2/$f"; then
			die "$f: could not drop the *_test.c include"
		fi
	done
}

gen_kconfig() {
	local k=$stage/fs/exfat2/Kconfig
	if [ "$kunit" = 1 ]; then
		cp "$src/Kconfig" "$k"
		grep -q '^config EXFAT2_KUNIT_TEST' "$k" || die "no EXFAT2_KUNIT_TEST in Kconfig"
		if ! grep -q 'dev-tools/kunit' "$k"; then
			printf '\n\t  %s' \
				'For more information on KUnit and unit tests in general,' \
				'refer to the KUnit documentation in Documentation/dev-tools/kunit/.' \
				'' 'If unsure, say N.' | sed 's/^\t  $//' >>"$k"
			echo >>"$k"
		fi
	else
		awk '/^config EXFAT2_KUNIT_TEST/ { exit } { l[++n] = $0 }
		     END { while (n && l[n] == "") n--; for (i = 1; i <= n; i++) print l[i] }' \
			"$src/Kconfig" >"$k"
	fi
	if [ "$withdoc" = 0 ]; then
		sed -i 's| *See <file:Documentation/filesystems/exfat2\.rst>\.||' "$k"
		! grep -q 'exfat2\.rst' "$k" || die "Kconfig: cannot drop the documentation reference"
	fi
}

# shellcheck disable=SC2016 # $(CONFIG_EXFAT2_FS) is make syntax
gen_makefile() {
	local o start ordered=()
	for o in "${kbuild_objs[@]}"; do
		[[ " ${objs[*]} " == *" $o "* ]] && ordered+=("$o")
	done
	{
		printf '%s\n' '# SPDX-License-Identifier: GPL-2.0' '#' \
			'# Makefile for the exfat2 file system.' '#'
		if [ "$linked" = 1 ]; then
			printf '%s\n' '' 'obj-$(CONFIG_EXFAT2_FS) += exfat2.o' ''
			start='exfat2-y := '
		else
			printf '%s\n' '# Until all of its objects are here, they are compiled but no' \
				'# module is linked.' ''
			start='always-$(CONFIG_EXFAT2_FS) += '
		fi
		printf '%s\n' "${ordered[@]}" | awk -v start="$start" '
			BEGIN { line = start; w = length(line) }
			{
				if (w + length($0) > 72 && NR > 1) {
					print line "\\"
					line = "\t    "; w = 12
				}
				line = line $0 " "; w += length($0) + 1
			}
			END { sub(/ $/, "", line); print line }'
	} >"$stage/fs/exfat2/Makefile"
}

gen_maintainers() {
	local f
	{
		echo 'EXFAT2 FILE SYSTEM'
		echo "M:	$ident"
		echo 'L:	linux-fsdevel@vger.kernel.org'
		echo 'S:	Maintained'
		if [ "$withdoc" = 1 ]; then
			echo 'F:	Documentation/filesystems/exfat2.rst'
			echo 'F:	fs/exfat2/'
		else
			printf 'F:\t%s\n' "${maint_files[@]}" | LC_ALL=C sort
		fi
		echo
	} >"$tmp/entry"
	git show "$base:MAINTAINERS" | awk -v entry="$tmp/entry" '
		{ print }
		$0 == "EXFAT FILE SYSTEM" { inexfat = 1 }
		inexfat && $0 == "" {
			while ((getline l < entry) > 0) print l
			inexfat = 0; done = 1
		}
		END { exit !done }' >"$stage/MAINTAINERS" || die "MAINTAINERS: no EXFAT FILE SYSTEM entry"
}

gen_fs_files() {
	mkdir -p "$stage/fs"
	git show "$base:fs/Kconfig" | awk '
		{ print }
		$0 == "source \"fs/exfat/Kconfig\"" { print "source \"fs/exfat2/Kconfig\""; done = 1 }
		END { exit !done }' >"$stage/fs/Kconfig" || die "fs/Kconfig: no fs/exfat/Kconfig line"
	git show "$base:fs/Makefile" | awk '
		{ print }
		/^obj-\$\(CONFIG_EXFAT_FS\)/ { print "obj-$(CONFIG_EXFAT2_FS)\t\t+= exfat2/"; done = 1 }
		END { exit !done }' >"$stage/fs/Makefile" || die "fs/Makefile: no EXFAT_FS line"
	if [ "$withdoc" = 1 ]; then
		mkdir -p "$stage/Documentation/filesystems"
		cp "$doc" "$stage/Documentation/filesystems/exfat2.rst"
		git show "$base:Documentation/filesystems/index.rst" | awk '
			$0 == "   ext2" && !done { print "   exfat2"; done = 1 }
			{ print }
			END { exit !done }' >"$stage/Documentation/filesystems/index.rst" ||
			die "index.rst: no ext2 line"
	fi
}

tip=$base
date=$(command git -C "$repo" log -1 --format=%aI 2>/dev/null || date -Is)
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$date
export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE=$date
subjects=()

# commit SUBJECT BODY: stage the generated files, commit on top of $tip
commit() {
	local paths shas i
	maint_files+=("${added_now[@]}")
	gen_kconfig
	gen_makefile
	fix_test_includes
	gen_fs_files
	gen_maintainers
	mapfile -t paths < <(cd "$stage" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
	mapfile -t shas < <(printf '%s\n' "${paths[@]/#/$stage/}" | git hash-object -w --stdin-paths)
	[ ${#shas[@]} = ${#paths[@]} ] || die "git hash-object failed"
	for i in "${!paths[@]}"; do
		printf '100644 %s\t%s\n' "${shas[$i]}" "${paths[$i]}"
	done | git update-index --index-info
	printf '%s\n\n%s\n\nSigned-off-by: %s\n' "exfat2: $1" "$2" "$ident" >"$tmp/msg"
	tip=$(git commit-tree "$(git write-tree)" -p "$tip" -F "$tmp/msg")
	subjects+=("exfat2: $1")
	added_now=()
}

# Patch 1 adds Kconfig and Makefile; the MAINTAINERS entry tracks them too.
added_now+=(fs/exfat2/Kconfig fs/exfat2/Makefile)
add_src exfat_format.h exfat.h format.c upcase_table.c
commit "add on-disk format definitions and verifiers" \
"exfat2 is a new implementation of the exFAT file system (Microsoft's
published specification) built on iomap and folios for file data, with
buffer heads used only for metadata sectors.

Start with the pieces everything else builds on:

- exfat_format.h: the on-disk structures (boot sector, directory entries,
  time stamps) with static size checks;
- exfat.h: the in-memory super block and inode, and the prototypes shared
  between the files of the driver;
- format.c: pure functions over on-disk bytes, with no I/O and no locks:
  the boot sector verifier, which checks every field the driver depends
  on against the specification and against each other, the boot,
  entry-set and up-case table checksums, the name hash, the search for
  free clusters in the allocation bitmap, up-case table expansion and
  time stamp conversion;
- upcase_table.c: the up-case table the specification recommends, used
  when a volume's own table is missing or unusable.

Add the Kconfig symbol EXFAT2_FS and the Makefile.  Each patch of this
series adds its objects to the Makefile, which compiles them (with the
rest of the kernel, or alone with \"make fs/exfat2/\") but links no module
until all of them are present: a module missing some of its objects
would not link.  So every step of the series builds, with EXFAT2_FS=y or
=m."

add_src msg.c meta.c upcase.c super.c
commit "add metadata I/O, name handling and the super block" \
"Add the code that mounts a volume:

- msg.c: messages, each naming the device, the rate-limited report of
  corruption and the errors= policy that follows it;
- meta.c: reading and writing metadata sectors (boot region, FAT,
  allocation bitmap, up-case table, directories) through the block
  device's buffer cache, one file system sector per buffer.  It is the
  only user of buffer heads in the driver;
- upcase.c: loading and checking the volume's up-case table (falling back
  to the recommended one), conversion between the on-disk UTF-16 names
  and the mount's character set, case-insensitive comparison and the
  rules a new name has to follow;
- super.c: mount option parsing (the options of the in-tree exfat driver),
  boot region verification with fall back to the backup boot region,
  lookup of the allocation bitmap, up-case table, volume label and GUID
  entries in the root directory, statfs, remount, the volume dirty flag
  and the module entry points.

The file system type is registered as \"exfat\", so that existing user
space and fstab entries work unchanged."

add_src fatent.c balloc.c chain.c extent.c window.c map.c
commit "add FAT access, cluster allocation and extent mapping" \
"Add the layers between a file and its clusters:

- fatent.c: reading and writing FAT entries, each checked where it is
  used, and chain walks bounded by the size of the cluster heap, so a
  corrupted or looping chain is reported instead of followed forever;
- balloc.c: the allocation bitmap, kept in the buffer cache for the life
  of the mount, with the free cluster count, optional discard and FITRIM
  support; clusters freed by a transaction stay marked in use until the
  entries that referenced them are on disk;
- chain.c: growing and cutting a file's chain (contiguous-first, a file
  kept NoFatChain while it stays contiguous), the allocation policy and
  the pool of zeroed directory clusters;
- extent.c: the extent map, a chain as a sorted array of runs (pure
  data, no I/O);
- window.c: allocation windows that keep files written side by side
  apart (pure data, no I/O);
- map.c: the file cluster to disk cluster mapping.  A NoFatChain file is a
  single extent; a FAT-chained file is walked once and cached as a sorted
  array of extents, so lookups are a binary search under the inode's
  shared map lock and long fragmented files are never walked again."

add_src dindex.c entry.c
commit "add directory entry sets" \
"Directory entries are grouped in entry sets (a File entry, a Stream
Extension entry and File Name entries) protected by a set checksum.
Add the code that reads a file's entry set through the buffer cache,
verifies its type sequence, NameLength and SetChecksum before anything
in it is trusted, finds free runs of entries, and writes, updates and
deletes entry sets, growing directories when they are full.

exFAT has no directory index on disk.  dindex.c keeps one in memory for
each directory searched (the File entry of every set by its NameHash,
and which entries are in use), so that a lookup, a negative lookup and a
create read only the sets it names instead of the whole directory.  It
is checked against the disk at every use, and freed by a shrinker under
memory pressure."

add_src dir.c namei.c inode.c
commit "add inode, lookup and directory operations" \
"Add the VFS side of the namespace:

- inode.c: inodes built from a verified entry set and found again by the
  position of that set (first cluster of the parent directory and entry
  index), attribute and time stamp conversion, setattr, truncate and
  inode write-back;
- namei.c: name lookup through the name hash and the volume's up-case
  table, case-insensitive dentry operations, create, mkdir, unlink,
  rmdir and rename (including case-only renames);
- dir.c: readdir.  A directory position is the index of the next entry,
  which stays valid across concurrent changes since entries never move
  while they exist."

add_src file.c
commit "add the iomap based data path" \
"File data goes through iomap and the page cache: buffered and direct
I/O, readahead, mmap, splice, SEEK_DATA/SEEK_HOLE, FIEMAP and fallocate
all use one mapping function.

The range between ValidDataLength and DataLength holds no data and is
reported to iomap as an unwritten extent, which reads as zeros.  Writes
beyond ValidDataLength zero the gap first, and ValidDataLength is only
advanced once the data before it has reached the disk, so a crash never
exposes stale blocks.  Completed write-back is finished in process
context; fsync writes data, then metadata, then flushes the device."

add_src ioctl.c export.c
commit "add ioctls and NFS export" \
"Add the ioctls the in-tree exfat driver and vfat offer, so that existing
tools keep working: FAT_IOCTL_GET/SET_ATTRIBUTES, the volume label
(FS_IOC_GETFSLABEL/SETFSLABEL), FS_IOC_GETFSUUID, FITRIM, the shutdown
ioctl, and the generic file attribute interface.

Add NFS export support.  A file handle records where the file's entry
set is (the first cluster of its directory and the entry index) and the
file's first cluster, to tell a reused slot from the original, so that
handles survive cache eviction and remounts.  exFAT directories have no
\"..\" entry: get_parent searches the tree for the directory whose data
starts at the recorded cluster.

With this, every object of the module is present."

linked=1
link_no=$((${#subjects[@]} + 1))
commit "build the driver" \
"Now that every object is in place, link them into exfat2.o, built in or
as the module exfat2.ko according to EXFAT2_FS.  Until this patch the
Makefile only compiled the objects, which kept every earlier step of the
series buildable: a module missing some of its objects would not link."

kunit=1
tests=("$src"/*_test.c)
[ -f "${tests[0]}" ] || die "no $src/*_test.c"
add_src "${tests[@]##*/}"
commit "add KUnit tests" \
"Add KUnit suites for the code that can be tested without a block
device:

- format_test.c: boot sector verification (every field and their
  relations), the three checksums against the specification's formulas
  and vectors computed outside the kernel, the name hash, up-case table
  expansion (including the recommended table's checksum), time stamp
  conversion in both directions, the root directory's critical entries
  and the search for free clusters in the allocation bitmap;
- upcase_test.c: UTF-8 <-> UTF-16 conversion (surrogate pairs, lone
  surrogates, invalid sequences, lengths), case-folded comparison
  through the recommended up-case table, and the rules for new names and
  trailing dots;
- dindex_test.c: the directory index's hash table (collisions, growth,
  removal with and without the hash) and its search for free entries
  under the rules for placing entry sets;
- extent_test.c: the extent map (merging runs, growth, lookups,
  truncation);
- window_test.c: the allocation windows on a fake bitmap (clipping,
  placement, the limit on their number, searches that step over them
  and fall back into them, and two writers side by side getting a run
  each).

The test files are included at the end of format.c, upcase.c, dindex.c,
extent.c and window.c, as ext4 does for mballoc-test.c, so that they can reach static
helpers; they are built when EXFAT2_KUNIT_TEST is enabled and run when
the module loads."

withdoc=1
added_now+=(Documentation/filesystems/exfat2.rst)
commit "add documentation" \
"Describe the driver: its design, the mount options, ioctls and NFS
export, how on-disk values are checked, the order in which writes reach
the disk and what a crash can leave behind, locking, limits, and how it
is tested.

Point the Kconfig help at it, and let the MAINTAINERS entry, which so far
listed the files one by one as they were added, cover the documentation
and the whole fs/exfat2/ directory."

# Every source file of exfat2/ must be in the series.
for f in "$src"/*.c "$src"/*.h; do
	f=${f##*/}
	[[ $f == *.mod.c ]] && continue
	[ -n "${placed[$f]:-}" ] || die "exfat2/$f is in no patch: add it to $0"
done
for o in "${kbuild_objs[@]}"; do
	[[ " ${objs[*]} " == *" $o "* ]] || die "$o of Kbuild is in no patch"
done

git update-ref refs/heads/exfat2-series "$tip"

# ------------------------------------------------------------ cover letter
desc=$(command git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
pkgver=$(git log -1 --format=%s "$base" | sed 's/.* //')
nfiles=$(git diff --name-only "$base" "$tip" -- fs/exfat2 | wc -l)
nlines=$(git diff --numstat "$base" "$tip" -- fs/exfat2 | awk '{ s += $1 } END { print s }')
{
	echo "exfat2: a new exFAT driver built on iomap"
	echo
	cat <<-'EOF'
	This series adds exfat2, an implementation of the exFAT file system
	written from Microsoft's published specification.  It registers the
	file system type "exfat" and accepts the mount options and ioctls of
	the in-tree exfat driver, so it can replace it without changes to
	user space.  It is meant as an alternative to fs/exfat with a
	different design:

	- file data goes through iomap and the page cache (folios): buffered
	  and direct I/O, mmap, splice, SEEK_DATA/SEEK_HOLE, FIEMAP and
	  fallocate share one mapping function; buffer heads are used only
	  for metadata sectors, in one file (meta.c);
	- no volume-wide lock on the I/O path: mapping a block takes only the
	  inode's map lock, shared once its extent cache covers the block;
	- every on-disk value is checked where it is used, entry sets are
	  verified (type sequence, NameLength, SetChecksum) before they are
	  trusted, and corruption is reported once and returned as
	  -EFSCORRUPTED, with the errors= policy applied in one place;
	- writes are ordered so that a crash leaves a volume fsck.exfat
	  accepts, at worst marked dirty with leaked clusters, and keeps what
	  fsync returned for;
	- NFS export with handles that survive cache eviction and remounts;
	- KUnit suites for the on-disk format code and name handling.

	The series is split by topic, bottom-up.  The Kconfig symbol and
	fs/exfat2/Makefile come first and every patch adds its objects to
	the Makefile, so "make W=1 fs/exfat2/" succeeds without warnings
	after each patch.  The objects are only compiled until patch LINK_NO
	links them into the module, so that no step leaves a module that
	cannot link.  Each patch is clean under "checkpatch.pl --strict".

	Outside this series the driver is tested in QEMU with its own suites
	(reads, writes, ioctls, hostile images, crash consistency checked
	with fsck.exfat) and an fsx-style random exerciser; the KUnit suites
	run with CONFIG_EXFAT2_KUNIT_TEST.

	Both this driver and fs/exfat register "exfat"; whichever registers
	first wins, so a kernel should enable only one of them.
	EOF
	echo
	echo "Generated from exfat2 $desc against Debian's linux-source-6.12"
	echo "($pkgver); $nfiles files, $nlines lines under fs/exfat2/."
} | sed "s/LINK_NO/$link_no/" >"$tmp/cover"
git config branch.exfat2-series.description "$(cat "$tmp/cover")"

mkdir -p "$out"
rm -f "$out"/*.patch
git format-patch -q --cover-letter --cover-from-description=subject \
	--thread=shallow -o "$out" "$base..exfat2-series" >/dev/null
written=("$out"/*.patch)
echo "mkpatches.sh: wrote ${#written[@]} files to $out (base $base)" >&2
printf '%s\n' "${subjects[@]}" | nl -w2 -s'. ' >&2
