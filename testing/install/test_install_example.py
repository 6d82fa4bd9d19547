"""ctest install_example: a simulation's side, built against the installed
sender library and run against the installed receiver, read back through the
installed plugin. examples/c/stream_slab.c is built twice against the scratch
root install_deb unpacked the .deb into (ctest fixture slabcast_deb): as its
own CMake project (find_package(slabcast), slabcast::slabcast) and with
`pkg-config --cflags --libs slabcast`, PKG_CONFIG_SYSROOT_DIR at the root so
that the .pc file's own paths are what is tested. The CMake build streams
steps 0-2 of its slab to the installed `slabcast receive` on loopback, the
pkg-config build step 3; after each, pvpython with PV_PLUGIN_PATH at the
installed plugin reads the slab and every value must equal the example's,
bit for bit. Skipped (77) while this build tree has no libslabcast."""
import glob
import os
import shutil
import subprocess

import install_testlib as lib
from install_testlib import installed, t

DIMS, DEPTH, PIECES = (64, 64, 64), 16, 4  # what stream_slab.c sends: slab 0 of 4


def run(cmd, env=None, timeout=300):
    t.log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    t.check(p.returncode == 0, "exit code %d: %s\n--- stdout\n%s\n--- stderr\n%s" % (
        p.returncode, " ".join(cmd), p.stdout[-6000:], p.stderr[-6000:]))
    return p.stdout


def build_with_cmake(source):
    build = os.path.join(lib.SCRATCH, "example-cmake")
    shutil.rmtree(build, ignore_errors=True)
    cmake = t.env_path("CMAKE")
    # Only the scratch root may provide slabcast: no package registries.
    run([cmake, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_PREFIX_PATH=" + lib.ROOT + lib.PREFIX,
         "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"])
    found = [line for line in open(os.path.join(build, "CMakeCache.txt")) if line.startswith("slabcast_DIR:")]
    t.check(found and found[0].split("=", 1)[1].strip().startswith(lib.ROOT),
            "find_package(slabcast) did not take the installed package: %s" % found)
    run([cmake, "--build", build])
    t.log("ok: examples/c built with find_package(slabcast) from %s" % found[0].split("=", 1)[1].strip())
    return os.path.join(build, "stream_slab")


def build_with_pkg_config(source):
    env = dict(os.environ, PKG_CONFIG_LIBDIR=installed("lib", "pkgconfig"), PKG_CONFIG_SYSROOT_DIR=lib.ROOT)
    flags = run(["pkg-config", "--cflags", "--libs", "slabcast"], env=env).split()
    t.check(any(f.startswith("-L" + lib.ROOT) for f in flags) and any(f.startswith("-I" + lib.ROOT) for f in flags),
            "pkg-config's flags do not lead into the installed files: %s" % flags)
    program = os.path.join(lib.SCRATCH, "stream_slab-pkg-config")
    run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", os.path.join(source, "stream_slab.c")] + flags +
        ["-o", program])
    t.log("ok: examples/c built with pkg-config: " + " ".join(flags))
    return program


def read_back(desc, step):
    env = dict(os.environ, PV_PLUGIN_PATH=lib.plugin_dir())
    out = run([t.PVPYTHON, os.path.join(lib.HERE, "pv_installed.py"), lib.plugin_dir(), "example", desc,
               ",".join(map(str, DIMS)), str(PIECES), str(step)], env=env, timeout=240)
    t.log(out.strip())
    t.check("PV_INSTALLED_OK" in out, "pv_installed.py did not finish")


def body():
    built = glob.glob(os.path.join(lib.BUILD, "server", "lib", "libslabcast.so*"))
    if not built:
        lib.skip("libslabcast not built (no %s/server/lib/libslabcast.so*): the example links it" % lib.BUILD)
    lib.need_programs({"cc": "gcc", "pkg-config": "pkg-config", os.path.basename(t.PVPYTHON): "paraview"})
    t.check(os.path.isdir(lib.ROOT), "no unpacked package in %s: install_deb (fixture slabcast_deb) did not run"
            % lib.ROOT)
    t.check(glob.glob(installed("lib", "libslabcast.so.*")), "the .deb holds no libslabcast, the build tree does")
    source = os.path.join(lib.SOURCE, "examples", "c")
    with_cmake = build_with_cmake(source)
    with_pkg_config = build_with_pkg_config(source)
    server = installed("bin", "slabcast")  # the installed receiver
    with t.shm_dir("example") as d, lib.receiver(d, "example", DIMS, DEPTH, [0], server=server) as (ports, desc):
        to = "127.0.0.1:%d" % ports[0]
        t.log(run([with_cmake, to]).strip())  # steps 0, 1, 2
        read_back(desc, 2)
        # Found at run time from the scratch root, as /usr/lib would be once installed.
        env = dict(os.environ, LD_LIBRARY_PATH=installed("lib"))
        t.log(run([with_pkg_config, to, "3", "1"], env=env).strip())
        read_back(desc, 3)


t.main(body)
