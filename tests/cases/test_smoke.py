# SPDX-License-Identifier: GPL-2.0
"""Smoke tests of the VM and the test library, using the in-tree exFAT
driver so that they work before (and independently of) exfat2."""

import os

from lib import Image, assert_eq, mount, sh, test


@test(timeout=120, writes=True)
def intree_create_files():
    """mkfs.exfat, mount with the in-tree driver, write files, fsck."""
    with Image(size_mb=64, label="SMOKE") as img:
        with mount(img.dev, driver="intree") as mnt:
            os.mkdir(f"{mnt}/dir")
            for i in range(5):
                with open(f"{mnt}/dir/file{i}.txt", "w") as f:
                    f.write(f"hello {i}\n" * (i * 1000 + 1))
            sh(f"dd if=/dev/urandom of={mnt}/big bs=1M count=4 status=none")
            want = sh(f"sha256sum < {mnt}/big").stdout
        # Read back after a remount.
        with mount(img.dev, driver="intree", opts="ro") as mnt:
            assert_eq(sorted(os.listdir(f"{mnt}/dir")),
                      [f"file{i}.txt" for i in range(5)], "directory listing")
            with open(f"{mnt}/dir/file3.txt") as f:
                assert_eq(f.read(), "hello 3\n" * 3001, "file3 content")
            assert_eq(sh(f"sha256sum < {mnt}/big").stdout, want, "big file")
        assert_eq(sh(f"blkid -o value -s LABEL {img.dev}").stdout.strip(),
                  "SMOKE", "volume label")


@test(timeout=120, writes=True)
def loop_4k_sectors():
    """A loop device with 4096-byte sectors gets a 4 KiB-sector exFAT."""
    with Image(size_mb=64, sector=4096, cluster="32K") as img:
        assert_eq(sh(f"blockdev --getss {img.dev}").stdout.strip(), "4096",
                  "logical sector size")
        with open(img.dev, "rb") as f:
            boot = f.read(512)
        assert_eq(boot[3:11], b"EXFAT   ", "file system name")
        assert_eq(boot[108], 12, "BytesPerSectorShift")
        assert_eq(boot[109], 3, "SectorsPerClusterShift (32K clusters)")
        with mount(img.dev, driver="intree") as mnt:
            with open(f"{mnt}/a", "w") as f:
                f.write("x" * 100000)
            os.sync()
            assert_eq(os.stat(f"{mnt}/a").st_size, 100000, "file size")
