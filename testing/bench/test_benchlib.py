"""What the benchmarks share (benchlib.py) under a hostile environment: the
staging directory prestage() makes must be one the stager accepts (not
writable by anyone else) whatever the umask, since the stager refuses a
world-writable one and the benchmark then fails. Needs no build."""

import os
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import benchlib  # noqa: E402
from benchlib import lib  # noqa: E402


class PrestageTest(unittest.TestCase):
    def test_the_staging_directory_is_private_under_any_umask(self):
        for umask in (0o000, 0o022, 0o077):
            old = os.umask(umask)
            ws = lib.Workspace("benchlib")
            try:
                data = tempfile.mkdtemp(dir=ws.dir)
                with open(os.path.join(data, "dataset.json"), "w") as f:
                    f.write("{}")
                with open(os.path.join(data, "step_0000.raw"), "wb") as f:
                    f.write(b"\1" * 4096)
                self.assertFalse(benchlib.prestage(ws, data, huge_pages=False))
                mode = stat.S_IMODE(os.stat(ws.staging).st_mode)
                self.assertEqual(mode, 0o700, "umask %03o gave staging mode %03o" % (umask, mode))
                with open(os.path.join(ws.staging, "step_0000.raw"), "rb") as f:
                    self.assertEqual(f.read(), b"\1" * 4096)
                self.assertFalse(os.path.exists(os.path.join(ws.staging, "dataset.json")))
                # Already there with a mode anyone may write to (a run under umask 0 before the fix): set anew.
                os.chmod(ws.staging, 0o777)
                benchlib.prestage(ws, data, huge_pages=False)
                self.assertEqual(stat.S_IMODE(os.stat(ws.staging).st_mode), 0o700)
            finally:
                os.umask(old)
                ws.close()


if __name__ == "__main__":
    lib.unittest_main()
