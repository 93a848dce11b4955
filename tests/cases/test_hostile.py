# SPDX-License-Identifier: GPL-2.0
#
# Any number of images (what `make fuzz N=...` runs), from the repo root:
#
#   tools/vm/vm.sh --out /tmp/exfat2-fuzz --timeout $((N * 5 + 600)) -- \
#       python3 -B tests/guest/fuzz.py --count N -q
#
# (--start S: seeds S..S+N-1; --max-time SECONDS: start no image after
# that long.)  The report is /tmp/exfat2-fuzz/fuzz/summary.txt (and the
# end of console.log), one JSON line per image in results.jsonl, and the
# image and log of every problem seed as seed-N.img / seed-N.log; the exit
# status is 1 if an image had a problem, 125 on a kernel splat.
"""Hostile media: a fixed batch of corrupted images (tests/guest/corrupt.py,
one per seed) mounted, walked, read and written by exfat2
(tests/guest/fuzz.py).  Refusing a mount or an operation is fine; a hang,
a kernel splat, a refused mount without its one-line reason, or anything
left mounted or attached fails the test.

Reproduce a seed on the host: tests/guest/corrupt.py --seed N -o N.img
(the description printed is the one in the log); the image of every
problem seed is also kept in the run's output directory, under hostile/.
"""

import os

import fuzz
import lib
from lib import OUT, fail, test

SEEDS = range(1, 151)       # about 0.8 s each under TCG: 2-3 minutes
TIMEOUT = 900
PER_IMAGE_TIMEOUT = 60      # scaled like the test's (runner --timeout-scale)


def _run(seeds, timeout):
    scale = lib.current.timeout / timeout if lib.current else 1
    s = fuzz.run_batch(seeds, timeout=PER_IMAGE_TIMEOUT * scale, log=print,
                       keep=os.path.join(OUT, "hostile"))
    print(s.text(), flush=True)
    if s.problems:
        fail(f"{len(s.problems)} problem(s) in {s.images} images; first: "
             f"seed {s.problems[0][0]}: {s.problems[0][1]}")


@test(timeout=TIMEOUT, writes=False)
def batch():
    """150 corrupted images: mount ro and walk, mount rw and change things
    while another process walks, mount ro again and walk (fuzz.py)."""
    _run(SEEDS, TIMEOUT)


@test(timeout=300, writes=False)
def small_batch():
    """40 more images (seeds 151-190), the batch the debug pass runs under
    KASAN and kmemleak, where 150 would take too long."""
    _run(range(151, 191), 300)
