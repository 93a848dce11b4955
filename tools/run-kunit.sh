#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run exfat2's KUnit suite under UML.  The module is out of tree, so its
# format code is copied into a scratch directory of an extracted kernel
# source tree (never this repository), wired into that tree's fs/Kconfig
# and fs/Makefile, and built there by kunit.py with exfat2/.kunitconfig.
#
# Arguments are passed on to kunit.py run.
#   KUNIT_SRC   kernel tree to use (default /work/kunit-src; extracted from
#               /usr/src/linux-source-6.12.tar.xz if missing)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
src=${KUNIT_SRC:-/work/kunit-src}
tarball=/usr/src/linux-source-6.12.tar.xz
scratch=fs/exfat2kunit

case "$src" in
"$here"|"$here"/*) echo "run-kunit: KUNIT_SRC must be outside the repository" >&2; exit 1;;
esac

if [ ! -f "$src/Makefile" ]; then
	echo "run-kunit: extracting $tarball to $src"
	mkdir -p "$src"
	tar -xJf "$tarball" -C "$src" --strip-components=1
fi

mkdir -p "$src/$scratch"
cp "$here"/exfat2/{exfat.h,exfat_format.h,format.c,format_test.c,upcase_table.c} \
	"$src/$scratch/"
cat > "$src/$scratch/Kconfig" <<'EOF'
# Scratch wiring for exfat2's out-of-tree KUnit suite.
config EXFAT2_KUNIT_TEST
	bool "KUnit tests for exfat2's on-disk format code" if !KUNIT_ALL_TESTS
	depends on KUNIT=y
	default KUNIT_ALL_TESTS
EOF
cat > "$src/$scratch/Makefile" <<'EOF'
obj-$(CONFIG_EXFAT2_KUNIT_TEST) += format.o upcase_table.o
EOF
grep -q "$scratch/Kconfig" "$src/fs/Kconfig" ||
	sed -i "\$i source \"$scratch/Kconfig\"" "$src/fs/Kconfig"
grep -q "exfat2kunit/" "$src/fs/Makefile" ||
	echo "obj-y += exfat2kunit/" >> "$src/fs/Makefile"

cd "$src"
exec ./tools/testing/kunit/kunit.py run \
	--kunitconfig="$here/exfat2/.kunitconfig" \
	--jobs="$(nproc)" "$@"
