"""ctest install_example: a simulation's side, built against the installed
sender library and run against the installed receiver, read back through the
installed plugin. examples/c/stream_slab.c is built four times: against the
scratch root install_deb unpacked the .deb into (ctest fixture slabcast_deb)
and against this build tree installed with `cmake --install --prefix` into
another folder (as a user without root installs it), each as its own CMake
project (find_package(slabcast), slabcast::slabcast) and with `pkg-config
--cflags --libs slabcast`. Neither place is the prefix the package was
configured for, so the .pc file and the CMake package must find themselves
where they lie. The builds stream steps 0-2, 3, 4 and 5 of their slab to the
installed `slabcast receive` on loopback; after each, pvpython with
PV_PLUGIN_PATH at the installed plugin reads the slab and every value must
equal the example's, bit for bit. Skipped (77) while this build tree has no
libslabcast."""
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


def build_with_cmake(source, prefix, name):
    build = os.path.join(lib.SCRATCH, "example-cmake-" + name)
    shutil.rmtree(build, ignore_errors=True)
    cmake = t.env_path("CMAKE")
    # Only `prefix` may provide slabcast: no package registries.
    run([cmake, "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_PREFIX_PATH=" + prefix,
         "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF", "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"])
    found = [line for line in open(os.path.join(build, "CMakeCache.txt")) if line.startswith("slabcast_DIR:")]
    t.check(found and found[0].split("=", 1)[1].strip().startswith(prefix),
            "find_package(slabcast) did not take the package installed in %s: %s" % (prefix, found))
    run([cmake, "--build", build])
    t.log("ok: examples/c built with find_package(slabcast) from %s" % found[0].split("=", 1)[1].strip())
    return os.path.join(build, "stream_slab")


def build_with_pkg_config(source, prefix, name):
    """pkg-config run as a user would (PKG_CONFIG_PATH at the installed .pc,
    no sysroot): the flags must lead into `prefix`, wherever it lies."""
    pc_dirs = [os.path.join(d, "pkgconfig") for d in glob.glob(os.path.join(prefix, "lib*")) +
               glob.glob(os.path.join(prefix, "lib", "*-linux-gnu*"))]
    env = dict(os.environ, PKG_CONFIG_LIBDIR=":".join(d for d in pc_dirs if os.path.isdir(d)))
    flags = run(["pkg-config", "--cflags", "--libs", "slabcast"], env=env).split()
    leads_in = [f for f in flags if f[:2] in ("-L", "-I") and os.path.realpath(f[2:]).startswith(
        os.path.realpath(prefix) + os.sep) and os.path.isdir(f[2:])]
    t.check(len(leads_in) == 2, "pkg-config's flags do not lead into the files installed in %s: %s" % (prefix, flags))
    program = os.path.join(lib.SCRATCH, "stream_slab-pkg-config-" + name)
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
    deb = lib.ROOT + lib.PREFIX
    with_cmake = build_with_cmake(source, deb, "deb")
    with_pkg_config = build_with_pkg_config(source, deb, "deb")
    # The library as `cmake --install build --prefix ~/opt/slabcast` puts it.
    elsewhere = os.path.join(lib.SCRATCH, "elsewhere")
    shutil.rmtree(elsewhere, ignore_errors=True)
    run([t.env_path("CMAKE"), "--install", lib.BUILD, "--prefix", elsewhere, "--component", "library"])
    t.check(elsewhere != lib.PREFIX, "the test's other prefix is the configured one")
    moved_cmake = build_with_cmake(source, elsewhere, "elsewhere")
    moved_pkg_config = build_with_pkg_config(source, elsewhere, "elsewhere")
    moved_lib = os.path.dirname(glob.glob(os.path.join(elsewhere, "lib*", "**", "libslabcast.so.*"), recursive=True)[0])
    server = installed("bin", "slabcast")  # the installed receiver
    with t.shm_dir("example") as d, lib.receiver(d, "example", DIMS, DEPTH, [0], server=server) as (ports, desc):
        to = "127.0.0.1:%d" % ports[0]
        t.log(run([with_cmake, to]).strip())  # steps 0, 1, 2
        read_back(desc, 2)
        # Found at run time from the scratch root, as /usr/lib would be once installed.
        env = dict(os.environ, LD_LIBRARY_PATH=installed("lib"))
        t.log(run([with_pkg_config, to, "3", "1"], env=env).strip())
        read_back(desc, 3)
        env = dict(os.environ, LD_LIBRARY_PATH=moved_lib)
        t.log(run([moved_pkg_config, to, "4", "1"], env=env).strip())
        read_back(desc, 4)
        t.log(run([moved_cmake, to, "5", "1"]).strip())  # the CMake build's run path leads to the library
        read_back(desc, 5)


t.main(body)
