#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Check the upstream patch series of scripts/mkpatches.sh: on a clean
# checkout of the base tree (Debian's linux-source-6.12), git am the patches
# one by one and after each run "make W=1 fs/exfat2/", which must succeed
# with no warning in fs/exfat2/ and build every object the patch's
# fs/exfat2/Makefile lists; then run scripts/checkpatch.pl --strict on each
# patch, which must report 0 errors, 0 warnings and 0 checks.  Prints one
# PASS/FAIL line per check, then "N passed, N failed"; exit status 0 iff
# nothing failed.
#
# Usage: tests/patches.sh [-s SERIESDIR] [-k]
#
#   (default)      generate the series from the working tree with
#                  scripts/mkpatches.sh into .../exfat2-patches/test-series
#   -s SERIESDIR   test this series instead (made by mkpatches.sh)
#   -k             keep going: build every patch even after a failure
#
# Cache: ${XDG_CACHE_HOME:-~/.cache}/exfat2-patches/, shared with
# mkpatches.sh: linux/ (the base repository), test/src (a worktree of it,
# reset to the base commit at every run), test/build (O= build directory,
# x86_64_defconfig + KUNIT=y, modules_prepare done once; EXFAT2_FS=m and
# EXFAT2_KUNIT_TEST are set after each patch, once Kconfig has them: the
# tests are built into the module, so with EXFAT2_FS=m the option can only
# be m, not y).
# Logs: test/logs/.  The worktree is left with the series applied.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
cache=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/exfat2-patches
base_git=$cache/linux
wt=$cache/test/src
build=$cache/test/build
logs=$cache/test/logs
jobs=2
series='' keep_going=0

die() { echo "patches.sh: $*" >&2; exit 2; }

while getopts s:kh opt; do
	case $opt in
	s) series=$(cd "$OPTARG" && pwd) || die "no directory $OPTARG" ;;
	k) keep_going=1 ;;
	h) sed -n '4,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "usage: $0 [-s SERIESDIR] [-k]" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || die "usage: $0 [-s SERIESDIR] [-k]"

pass=0 fail=0
result() {	# result PASS|FAIL TEXT
	echo "$1 $2"
	if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
finish() {
	echo "$pass passed, $fail failed"
	if [ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]; then
		exit 0
	fi
	exit 1
}

mkdir -p "$cache/test" "$logs"
rm -f "$logs"/*

if [ -z "$series" ]; then
	series=$cache/test-series
	if "$repo/scripts/mkpatches.sh" -o "$series" >"$logs/mkpatches.log" 2>&1; then
		result PASS "mkpatches: series generated"
	else
		tail -n 20 "$logs/mkpatches.log" | sed 's/^/  /'
		result FAIL "mkpatches: scripts/mkpatches.sh failed (log $logs/mkpatches.log)"
		finish
	fi
fi
patches=()
for p in "$series"/[0-9][0-9][0-9][0-9]-*.patch; do
	[ -f "$p" ] || continue
	[[ ${p##*/} == 0000-* ]] || patches+=("$p")
done
[ ${#patches[@]} -gt 0 ] || die "no patches in $series"
[ -d "$base_git/.git" ] || "$repo/scripts/mkpatches.sh" -o "$cache/test-series" >/dev/null
base=$(git -C "$base_git" rev-parse --verify -q 'exfat2-base^{commit}') ||
	die "no exfat2-base in $base_git"

exec 9>"$cache/test/lock"
flock 9

export GIT_COMMITTER_NAME='patches.sh' GIT_COMMITTER_EMAIL='patches.sh@localhost'
g() { git -C "$wt" "$@"; }
# A clean checkout of the base commit.  Only the files the series touched
# change, so the build directory stays valid.
if [ ! -f "$wt/Makefile" ] || ! g rev-parse -q --verify HEAD >/dev/null 2>&1; then
	rm -rf "$wt"
	git -C "$base_git" worktree prune
	git -C "$base_git" worktree add -q --detach "$wt" "$base"
else
	g am --abort >/dev/null 2>&1 || true
	g checkout -q -f --detach "$base"
	g clean -q -f -d -x
fi
[ -z "$(g status --porcelain --ignored)" ] || die "$wt is not clean"

mk=(make -C "$wt" O="$build" -j"$jobs")
cfgkey="$base x86_64_defconfig KUNIT=y"
if [ ! -f "$build/.exfat2-configured" ] ||
   [ "$(cat "$build/.exfat2-configured")" != "$cfgkey" ]; then
	echo "patches.sh: configuring and preparing $build (once, several minutes)" >&2
	rm -rf "$build"
	mkdir -p "$build"
	if "${mk[@]}" x86_64_defconfig >"$logs/configure.log" 2>&1 &&
	   "$wt/scripts/config" --file "$build/.config" -e KUNIT >>"$logs/configure.log" 2>&1 &&
	   "${mk[@]}" olddefconfig >>"$logs/configure.log" 2>&1 &&
	   "${mk[@]}" modules_prepare >>"$logs/configure.log" 2>&1; then
		echo "$cfgkey" >"$build/.exfat2-configured"
	else
		tail -n 20 "$logs/configure.log" | sed 's/^/  /'
		result FAIL "configure: x86_64_defconfig + modules_prepare (log $logs/configure.log)"
		finish
	fi
fi
rm -rf "$build/fs/exfat2"

applied=0
for p in "${patches[@]}"; do
	n=${p##*/}
	n=${n%%-*}
	subj=$(awk '/^Subject: / { s = $0
			while ((getline l) > 0 && l ~ /^[ \t]/) s = s l
			sub(/^Subject: \[PATCH[^]]*\] /, "", s); print s; exit }' "$p")
	log=$logs/$n-build.log
	if ! g am -q "$p" >"$log" 2>&1; then
		result FAIL "apply $n $subj (log $log)"
		break
	fi
	applied=$((applied + 1))
	# Enable the driver and its tests as soon as Kconfig offers them.
	cfg=(-m EXFAT2_FS)
	grep -qs '^config EXFAT2_KUNIT_TEST' "$wt/fs/exfat2/Kconfig" && cfg+=(-m EXFAT2_KUNIT_TEST)
	"$wt/scripts/config" --file "$build/.config" "${cfg[@]}"
	"${mk[@]}" olddefconfig >>"$log" 2>&1 || true
	why=''
	if ! grep -q '^CONFIG_EXFAT2_FS=m' "$build/.config"; then
		why='CONFIG_EXFAT2_FS is not m'
	elif [ ${#cfg[@]} -gt 2 ] && ! grep -q '^CONFIG_EXFAT2_KUNIT_TEST=[ym]' "$build/.config"; then
		why='CONFIG_EXFAT2_KUNIT_TEST is not enabled'
	elif ! "${mk[@]}" W=1 fs/exfat2/ >>"$log" 2>&1; then
		why='make failed'
	elif grep -E 'fs/exfat2/.*(warning|error):' "$log" >"$log.warnings"; then
		why="$(wc -l <"$log.warnings") warning(s), first: $(head -n 1 "$log.warnings")"
	else
		# Objects are listed in exfat2-y (linked into exfat2.o) or,
		# before the module links, in always-$(CONFIG_EXFAT2_FS).
		# shellcheck disable=SC2016 # $(...) is make syntax here
		objs=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$wt/fs/exfat2/Makefile" |
		       sed -n -e 's/^exfat2-y[[:space:]]*[:+]\{0,1\}=//p' \
			      -e 's/^always-\$(CONFIG_EXFAT2_FS)[[:space:]]*[:+]\{0,1\}=//p')
		# shellcheck disable=SC2016
		grep -q '^obj-\$(CONFIG_EXFAT2_FS)[[:space:]]*+=[[:space:]]*exfat2\.o' \
			"$wt/fs/exfat2/Makefile" && objs+=" exfat2.o"
		[ -n "$objs" ] || why='no objects in fs/exfat2/Makefile'
		for o in $objs; do
			[ -f "$build/fs/exfat2/$o" ] || why="${why:-not built:} $o"
		done
	fi
	if [ -z "$why" ]; then
		result PASS "build $n $subj"
	else
		result FAIL "build $n $subj: $why (log $log)"
		[ "$keep_going" = 1 ] || break
	fi
done
if [ "$applied" -lt ${#patches[@]} ]; then
	result FAIL "apply: $((${#patches[@]} - applied)) patch(es) not applied or built"
fi

# checkpatch runs scripts/spdxcheck.py, which needs python3-ply and
# python3-git; without them the SPDX check is skipped with a Python
# traceback on stderr.  The python3 first in PATH (a pyenv one, say) may
# lack them where Debian's has them.
pybin=$cache/test/python-bin
rm -rf "$pybin"
if ! python3 -c 'import ply, git' 2>/dev/null; then
	if /usr/bin/python3 -c 'import ply, git' 2>/dev/null; then
		mkdir -p "$pybin"
		ln -s /usr/bin/python3 "$pybin/python3"
		export PATH="$pybin:$PATH"
	else
		result FAIL "checkpatch: python3-ply or python3-git is missing (scripts/setup.sh installs them)"
	fi
fi
for p in "${patches[@]}"; do
	n=${p##*/}
	n=${n%%-*}
	log=$logs/$n-checkpatch.log
	(cd "$wt" && scripts/checkpatch.pl --strict --showfile "$p") >"$log" 2>&1 || true
	total=$(grep '^total: ' "$log" | tail -n 1)
	if [[ $total =~ ^total:\ 0\ errors,\ 0\ warnings,\ 0\ checks, ]] &&
	   ! grep -q 'Traceback' "$log"; then
		result PASS "checkpatch $n"
	else
		first=$(grep -m1 -E '^(ERROR|WARNING|CHECK):|Traceback' "$log" || true)
		result FAIL "checkpatch $n: ${total:-no result}${first:+; $first} (log $log)"
	fi
done
finish
