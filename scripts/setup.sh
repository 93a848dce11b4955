#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install everything the build, the VM harness and the tests need, from
# Debian's archive only.  Idempotent: does nothing when all is present.
set -euo pipefail

PKGS=(
	build-essential bc bison flex libelf-dev libssl-dev kmod cpio xz-utils
	linux-image-6.12-amd64 linux-headers-6.12-amd64 linux-source-6.12
	qemu-system-x86 busybox-static
	exfatprogs exfat-fuse fuse3
	fio liburing-dev sparse python3 python3-ply python3-git attr dmsetup psmisc
	gnuplot-nox
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	[ "$(id -u)" = 0 ] || { echo "setup: need root to install packages" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The packaged kernel image must be readable by QEMU (Debian installs it 0600).
for k in /boot/vmlinuz-*; do
	[ -e "$k" ] && [ ! -r "$k" ] && chmod a+r "$k"
done
exit 0
