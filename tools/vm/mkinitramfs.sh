#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or reuse from the cache) the tiny initramfs used by tools/vm/vm.sh.
#
# Usage: tools/vm/mkinitramfs.sh MODULES_DIR
#
#   MODULES_DIR  the kernel's module directory (the one holding modules.dep,
#                e.g. /lib/modules/6.12.118+deb12-amd64).
#
# Prints the path of the cpio archive on stdout.  The archive holds a static
# busybox, the decompressed modules needed to reach the host's root over
# virtio-9p (plus virtio_blk), and tools/vm/guest-init.sh as /init.  Modules
# that the kernel has built in are simply skipped.  The cache key is the
# kernel release, the module directory and the hash of this script and of
# guest-init.sh, so editing either rebuilds the archive.
set -euo pipefail

# Modules /init loads, dependencies are added from modules.dep.
WANTED=(9pnet_virtio 9p virtio_blk)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
moddir=${1:?usage: mkinitramfs.sh MODULES_DIR}
moddir=$(cd "$moddir" && pwd)
[ -f "$moddir/modules.dep" ] || { echo "mkinitramfs: no modules.dep in $moddir" >&2; exit 1; }
kver=$(basename "$moddir")

busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "mkinitramfs: busybox not found (apt-get install busybox-static)" >&2; exit 1; }
# ldd fails on a static binary; a dynamic busybox cannot run in the initramfs.
if ldd "$busybox" >/dev/null 2>&1; then
	echo "mkinitramfs: $busybox is not static (apt-get install busybox-static)" >&2
	exit 1
fi

cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-vm
key=$(cat "$here/mkinitramfs.sh" "$here/guest-init.sh" <(echo "$moddir") \
	<(stat -c %Y "$moddir/modules.dep") | sha256sum | cut -c1-16)
out="$cache/initramfs-$kver-$key.cpio"
if [ -s "$out" ]; then
	echo "$out"
	exit 0
fi
mkdir -p "$cache"

# Resolve a module name to its file (relative to $moddir) and its
# dependencies, in load order (modules.dep lists dependencies so that the
# last one must be loaded first).
declare -A seen=()
order=()
add_module() {
	local name=$1 line file deps dep i
	line=$(grep -E "(^|/)${name}\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" || true)
	if [ -z "$line" ]; then
		if grep -qE "(^|/)${name}\.ko$" "$moddir/modules.builtin" 2>/dev/null; then
			return 0	# built into the kernel
		fi
		echo "mkinitramfs: module $name is neither in modules.dep nor built in" >&2
		exit 1
	fi
	file=${line%%:*}
	read -r -a deps <<<"${line#*:}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
		dep=$(basename "${deps[i]}")
		add_module "${dep%%.ko*}"
	done
	if [ -z "${seen[$file]:-}" ]; then
		seen[$file]=1
		order+=("$file")
	fi
}
for m in "${WANTED[@]}"; do
	add_module "$m"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/exfat2-initramfs.XXXXXX")
tmpcpio=$(mktemp "$cache/.initramfs.XXXXXX")
trap 'rm -rf "$work" "$tmpcpio"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,newroot,out,moddir,lib/modules}
cp "$busybox" "$work/bin/busybox"
ln -s busybox "$work/bin/sh"
install -m 0755 "$here/guest-init.sh" "$work/init"

: >"$work/lib/modules/load-order"
for f in "${order[@]}"; do
	base=$(basename "$f")
	name=${base%%.ko*}
	case "$f" in
	*.ko.xz) xz -dc "$moddir/$f" >"$work/lib/modules/$name.ko" ;;
	*.ko.zst) zstd -qdc "$moddir/$f" >"$work/lib/modules/$name.ko" ;;
	*.ko.gz) gzip -dc "$moddir/$f" >"$work/lib/modules/$name.ko" ;;
	*) cp "$moddir/$f" "$work/lib/modules/$name.ko" ;;
	esac
	echo "$name" >>"$work/lib/modules/load-order"
done

(cd "$work" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) >"$tmpcpio"
chmod 0644 "$tmpcpio"
mv "$tmpcpio" "$out"
# Drop archives of other versions of this script for the same kernel
# once they are a day old (another checkout may still be booting one).
find "$cache" -maxdepth 1 -name "initramfs-$kver-*.cpio" ! -path "$out" -mmin +1440 -delete
echo "$out"
