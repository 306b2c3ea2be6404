"""resource-trackerctl status shows a file system's use as df(1) does:
used / (used + available), rounded up. Space reserved for root is neither
used nor available, so used / size (the sample's used_pct) reads lower.
Checked against df on the host's own disks, and on an ext4 file system with
20% reserved blocks and a known fill, mounted by the test (loop device) and
shown to the daemon through a fixture mount table."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from rtlib import Daemon, run_ctl  # noqa: E402

FIXTURES = os.environ["RT_FIXTURES"]


def df_pct(mount):
    out = subprocess.run(["df", "--output=pcent", mount], capture_output=True, text=True, check=True).stdout
    return int(out.splitlines()[1].strip().rstrip("%"))


def status_mounts(daemon):
    """{mount point: percent} from the Disk lines of `status`."""
    rc, out, err = run_ctl(daemon, "status")
    if rc != 0:
        raise AssertionError("status exited %d: %s" % (rc, err))
    found = {}
    for line in out.splitlines():
        if line.startswith("Disk ") and ";" in line:
            for part in line.split(";", 1)[1].split(","):
                m = re.fullmatch(r" (\S+) (\d+)% of .+", part)
                if not m:
                    raise AssertionError("unexpected mount in: %r" % line)
                found[m.group(1)] = int(m.group(2))
    return found


class DiskUse(unittest.TestCase):
    def daemon(self, *args):
        d = Daemon(interval=0.2, args=list(args))
        self.addCleanup(d.cleanup)
        d.start()
        self.addCleanup(d.stop)
        return d

    def test_host_disks_as_df(self):
        d = self.daemon()
        mounts = status_mounts(d)
        if not mounts:
            self.skipTest("no mounted block device on this host")
        for _ in range(3):  # other writers may move df by a point between the readings
            before = {mp: df_pct(mp) for mp in mounts}
            shown = status_mounts(d)
            after = {mp: df_pct(mp) for mp in mounts}
            self.assertEqual(shown.keys(), mounts.keys())
            if all(shown[mp] in (before[mp], after[mp]) for mp in mounts):
                return
        self.fail("status %s, df before %s and after %s" % (shown, before, after))

    def test_reserved_blocks_as_df(self):
        tmp = tempfile.mkdtemp(prefix="rt-df-")
        self.addCleanup(shutil.rmtree, tmp, True)
        image, mnt = os.path.join(tmp, "fs.img"), os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        with open(image, "wb") as f:
            f.truncate(64 << 20)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "20", image], check=True)
        p = subprocess.run(["mount", "-o", "loop", image, mnt], capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest("cannot mount a loop device here: " + p.stderr.strip())
        self.addCleanup(subprocess.run, ["umount", mnt])
        with open(os.path.join(mnt, "fill"), "wb") as f:
            f.write(b"\xa5" * (20 << 20))
            os.fsync(f.fileno())
        st = os.statvfs(mnt)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        size, avail = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
        want = df_pct(mnt)
        self.assertEqual(want, -(-used * 100 // (used + avail)))
        self.assertNotEqual(want, -(-used * 100 // size), "reserved blocks must make a difference")

        # The fixture host, with this mount on its nvme0n1p1 (259:1).
        root = os.path.join(tmp, "host")
        shutil.copytree(os.path.join(FIXTURES, "host"), root, symlinks=True)
        with open(os.path.join(root, "proc/self/mountinfo"), "w") as f:
            f.write("27 21 259:1 / %s rw,relatime shared:30 - ext4 /dev/nvme0n1p1 rw\n" % mnt)
        d = self.daemon("--proc-root", os.path.join(root, "proc"), "--sys-root", os.path.join(root, "sys"))
        self.assertEqual(status_mounts(d), {mnt: want})


if __name__ == "__main__":
    unittest.main(verbosity=2)
