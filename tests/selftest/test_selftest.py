# SPDX-License-Identifier: GPL-2.0
"""Harness self-tests: each must be FAILED by the harness for the stated
reason, which the runner then counts as a PASS (see lib.test(expect=)).
They run last in every run; the WARNING one must be the very last because
it taints the kernel.  run-tests.sh also asks tools/vm/vm.sh to find this
WARNING on the console (the host-side detector), see selftest:host_splat.
"""

import os

from lib import OUT, sh, test, fail


@test(timeout=2, writes=False, expect="timeout")
def timeout_detected():
    """A test that overruns its timeout must be killed and reported."""
    sh("sleep 1000")


@test(timeout=60, writes=False, expect="splat")
def warn_detected():
    """A kernel WARNING during a test must fail that test."""
    ko = os.path.join(OUT, "selftest", "warn_on_load.ko")
    if not os.path.exists(ko):
        fail(f"{ko} missing (run-tests.sh builds it)")
    sh(f"insmod {ko}")
    sh("rmmod warn_on_load")
