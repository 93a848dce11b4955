#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) a debug kernel for the tests: KASAN, UBSAN, KFENCE, lockdep,
# kmemleak, KUnit, fault injection; no debug info.  Built from Debian's
# /usr/src/linux-source-6.12.tar.xz outside the repo and cached; a second
# run only prints where it is.
#
# Usage: scripts/debug-kernel.sh [--module [--src DIR]]
#                                [--base allnoconfig|defconfig]
#
#   --module     also build exfat2/exfat2.ko (W=1, warnings fail) against
#                the debug tree, in a copy of the sources under the cache
#                (the objects of the packaged-kernel build in exfat2/ are
#                left alone)
#   --src DIR    the module sources to copy (default: exfat2/ of this
#                checkout)
#   --base B     the config the fragment is applied to (default allnoconfig;
#                defconfig = x86_64_defconfig, bigger and slower to build)
#
# Prints shell assignments on stdout (progress goes to stderr):
#   KERNEL=.../bzImage           for tools/vm/vm.sh --kernel
#   MODULES_DIR=.../lib/modules/RELEASE   for vm.sh --modules-dir
#   KDIR=.../build               kernel build tree, for make -C KDIR M=...
#   EXFAT2_KO=.../exfat2.ko      with --module
# so that   eval "$(scripts/debug-kernel.sh --module)"   sets them.
#
# Config: BASE, then the kernel's kvm_guest.config, then
# scripts/debug-kernel.config; every option of that fragment is checked in
# the final .config (the build fails naming any option Kconfig dropped).
# Cache: ${XDG_CACHE_HOME:-~/.cache}/exfat2-debug-kernel/KEY/, KEY = hash of
# the linux-source-6.12 package version, the compiler version, the fragment
# and the build recipe below.  JOBS (default: nproc) sets make -j.
# Build log and timings: KEY/build.log, KEY/times.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
frag=$here/debug-kernel.config
tarball=/usr/src/linux-source-6.12.tar.xz
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-debug-kernel

die() { echo "debug-kernel: $*" >&2; exit 1; }
log() { echo "debug-kernel: $*" >&2; }

module=0 base=allnoconfig modsrc=$repo/exfat2
while [ $# -gt 0 ]; do
	case "$1" in
	--module) module=1; shift ;;
	--src) modsrc=$(cd "$2" && pwd) || die "no directory $2"; shift 2 ;;
	--base) base=$2; shift 2 ;;
	-h|--help) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done
case "$base" in allnoconfig|defconfig) ;; *) die "--base: allnoconfig or defconfig" ;; esac

[ -r "$tarball" ] || die "no $tarball (run scripts/setup.sh)"
[ -r "$frag" ] || die "no $frag"
pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
	die "package linux-source-6.12 is not installed (run scripts/setup.sh)"
ccver=$(gcc --version | head -n1)

# Only the lines between the two markers feed the cache key: editing the
# rest of this script (usage, output, --module) does not force a rebuild.
recipe() { sed -n '/^# >>> build recipe/,/^# <<< build recipe/p' "$0"; }
key=$(cat <(echo "$pkgver" "$ccver" "$base") "$frag" <(recipe) | sha256sum | cut -c1-16)
dir=$cache/$key

print_paths() {
	local rel
	rel=$(cat "$dir/release")
	echo "KERNEL=$dir/bzImage"
	echo "MODULES_DIR=$dir/modules/lib/modules/$rel"
	echo "KDIR=$dir/build"
}

built() {
	[ -f "$dir/done" ] && [ -f "$dir/bzImage" ] && [ -f "$dir/release" ] &&
		[ -f "$dir/modules/lib/modules/$(cat "$dir/release")/modules.dep" ] &&
		[ -f "$dir/build/Module.symvers" ]
}

# Check that every option of the fragment is in .config as written.
validate_config() {	# validate_config FRAGMENT CONFIG
	local line sym got bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*)
			sym=${line%%=*}
			got=$(grep -E "^($sym=|# $sym is not set)" "$2" || echo '(absent)')
			if [ "$got" != "$line" ]; then
				echo "debug-kernel: Kconfig dropped '$line' (.config has '$got')" >&2
				bad=1
			fi ;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }
			sym=${sym%% *}
			if got=$(grep -E "^$sym=" "$2"); then
				echo "debug-kernel: Kconfig kept '$got' (wanted '$line')" >&2
				bad=1
			fi ;;
		esac
	done <"$1"
	return $bad
}

# >>> build recipe (hashed into the cache key)
build_kernel() {
	local jobs=${JOBS:-$(nproc)} src=$cache/src/${pkgver//[^A-Za-z0-9.+-]/_}
	local t0 t1 t2 t3 t4 t5 mk

	# 1. Debian's source, extracted once per package version.
	t0=$(date +%s)
	mkdir -p "$cache/src"
	exec 8>"$cache/src/lock"
	flock 8
	if [ ! -f "$src/Makefile" ]; then
		echo "extracting $tarball ($pkgver)"
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp"
		tar -xJf "$tarball" -C "$src.tmp" --strip-components=1
		mv "$src.tmp" "$src"
	fi
	flock -u 8
	t1=$(date +%s)

	# 2. Configure in a separate output tree (O=), which is the KDIR.  It
	# is built in place (its files and the modules' "build" link name
	# it); an interrupted build resumes where it stopped.
	mkdir -p "$dir/build"
	mk=(make -C "$src" O="$dir/build" -j"$jobs")
	cat "$src/kernel/configs/kvm_guest.config" "$frag" >"$dir/fragment.config"
	if [ "$base" = allnoconfig ]; then
		# Everything not named is off; options made visible by the
		# fragment take "n" too, so nothing unasked for sneaks in.
		"${mk[@]}" KCONFIG_ALLCONFIG="$dir/fragment.config" allnoconfig
	else
		"${mk[@]}" x86_64_defconfig
		"${mk[@]}" kvm_guest.config
		(cd "$dir/build" && "$src/scripts/kconfig/merge_config.sh" -m .config "$frag")
		"${mk[@]}" olddefconfig
	fi
	validate_config "$frag" "$dir/build/.config" ||
		die "the config above lost options (fix scripts/debug-kernel.config)"
	t2=$(date +%s)

	# 3. Kernel and modules.
	"${mk[@]}" all
	t3=$(date +%s)
	rm -rf "$dir/modules"
	"${mk[@]}" INSTALL_MOD_PATH="$dir/modules" modules_install
	t4=$(date +%s)

	cp "$dir/build/arch/x86/boot/bzImage" "$dir/bzImage"
	cat "$dir/build/include/config/kernel.release" >"$dir/release"
	cp "$dir/build/.config" "$dir/config"
	t5=$(date +%s)
	{
		echo "extract ${pkgver}: $((t1 - t0)) s"
		echo "configure ($base): $((t2 - t1)) s"
		echo "make -j$jobs all: $((t3 - t2)) s"
		echo "modules_install: $((t4 - t3)) s"
		echo "total: $((t5 - t0)) s"
	} >"$dir/times"
}
# <<< build recipe

# The out-of-tree module, built in a copy of its sources (kbuild writes its
# objects next to the sources; 6.12 has no MO=).  One copy per source
# directory, so checkouts do not share objects.
build_module() {
	local id obj src=$modsrc f
	id=$(echo "$src" | sha256sum | cut -c1-12)
	obj=$dir/obj/$id/exfat2
	mkdir -p "$obj"
	echo "$src" >"$dir/obj/$id/source"
	# Mirror the sources, keeping mtimes so unchanged files are not rebuilt.
	for f in "$src"/*.[ch] "$src"/Kbuild "$src"/Makefile; do
		[ -f "$f" ] || continue
		cmp -s "$f" "$obj/${f##*/}" || cp -p "$f" "$obj/"
	done
	for f in "$obj"/*.[ch] "$obj"/Kbuild "$obj"/Makefile; do
		[ -f "$f" ] || continue
		case "${f##*/}" in *.mod.c) continue ;; esac
		[ -f "$src/${f##*/}" ] || rm -f "$f"
	done
	make -C "$dir/build" M="$obj" W=1 -j"${JOBS:-$(nproc)}" modules >"$obj/../build.log" 2>&1 || {
		grep -E '(error|warning):' "$obj/../build.log" | head -n 20 >&2
		die "exfat2 does not build against the debug kernel (log: $obj/../build.log)"
	}
	if grep -E '(warning|WARNING):' "$obj/../build.log" | grep -F "$obj/" >&2; then
		die "exfat2 builds with warnings against the debug kernel"
	fi
	echo "EXFAT2_KO=$obj/exfat2.ko"
}

mkdir -p "$cache"
if ! built; then
	exec 9>"$cache/$key.lock"
	if ! flock -n 9; then
		log "another build of $key is running; waiting for it"
		flock 9
	fi
	if ! built; then
		rm -f "$dir/done"
		mkdir -p "$dir"
		log "building the debug kernel in $dir (log: $dir/build.log)"
		start=$(date +%s)
		if ! (build_kernel) >"$dir/build.log" 2>&1; then
			tail -n 40 "$dir/build.log" >&2
			die "build failed; log: $dir/build.log"
		fi
		touch "$dir/done"
		log "built in $(($(date +%s) - start)) s: $(tr '\n' ';' <"$dir/times")"
	fi
	flock -u 9
fi
print_paths
[ $module = 0 ] || build_module
