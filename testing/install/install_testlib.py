"""What the install tests share (system python3, standard library only): the
build tree's install layout from the environment ctest sets
(testing/install/CMakeLists.txt), the scratch root the .deb is unpacked into,
and the plugin tests' helpers (testing/plugin/plugin_testlib.py)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugin"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "library"))
import plugin_testlib as t  # noqa: E402,F401  (re-exported: check, run, log, xvfb, shm_dir, ...)
# The receiver the library tests start: with a --step-timeout that a sender
# held back by a busy core does not cross (library_testlib.STEP_TIMEOUT_MS).
from library_testlib import WAIT_S, receiver  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
SKIPPED = 77
BUILD = t.env_path("SLABCAST_BUILD")
SOURCE = t.env_path("SLABCAST_SOURCE")
PREFIX = t.env_path("SLABCAST_PREFIX")  # CMAKE_INSTALL_PREFIX: the package installs there too
DIRS = {name: t.env_path("SLABCAST_" + name.upper() + "DIR") for name in ("bin", "lib", "data", "doc", "man")}
# The scratch root install_deb unpacks the .deb into and install_example uses
# (ctest fixture slabcast_deb): in the build tree, so one build's runs share it.
SCRATCH = os.path.join(BUILD, "testing", "install", "scratch")
ROOT = os.path.join(SCRATCH, "root")


def skip(why):
    print("SKIPPED: " + why, flush=True)
    sys.exit(SKIPPED)


def need_programs(programs):
    """{program: Debian package}: skip, naming them, unless all are in PATH."""
    missing = ["%s (apt-get install %s)" % (p, pkg) for p, pkg in programs.items() if not shutil.which(p)]
    if missing:
        skip("missing here: " + ", ".join(missing))


def installed(kind, *parts):
    """Where the package put a file: ROOT + PREFIX + the GNUInstallDirs folder."""
    folder = DIRS[kind]
    base = folder if os.path.isabs(folder) else os.path.join(PREFIX, folder)
    return os.path.join(ROOT + base, *parts)


def plugin_dir():
    return installed("lib", "paraview-5.11", "plugins", "Slabcast")


def cache_value(name):
    """A variable of the build tree's CMakeCache.txt ('' when absent)."""
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return ""
