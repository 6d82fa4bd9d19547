"""ctest install_deb: slabcast installed as a site installs it. cpack makes the
.deb of this build tree (cmake/packaging.cmake); `dpkg-deb -x` unpacks it into
a scratch root, not `dpkg -i`: the test must not change the machine the other
tests run on, nor need root, and unpacking gives the very files dpkg would
install. Then, from that root only: the installed `slabcast --help` and every
subcommand's, the help pages and man pages against them, the systemd unit
templates (ExecStart at the installed binary, systemd-analyze verify) and
their example configs, the Python module and the library it records, pvbatch with PV_PLUGIN_PATH at the installed plugin
folder reading a real slab, and the installed `slabcast demo`, which finds
the plugin, its render programs and the generator under the prefix.

The scratch root stays for install_example (ctest fixture slabcast_deb)."""
import glob
import gzip
import os
import re
import shutil
import subprocess

import install_testlib as lib
from install_testlib import installed, t
from slabcast_testlib import run_demo_until  # noqa: E402  (install_testlib puts testing/e2e on the path)

ROLES = ("receive", "stage", "shuffle", "control", "serve")  # the daemons with a unit template


def run(cmd, cwd=None, timeout=600, env=None):
    t.log("$ " + " ".join(cmd))
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    t.check(p.returncode == 0, "exit code %d: %s\n--- stdout\n%s\n--- stderr\n%s" % (
        p.returncode, " ".join(cmd), p.stdout[-6000:], p.stderr[-6000:]))
    return p.stdout


def build_deb():
    out = os.path.join(lib.SCRATCH, "pkg")
    run([t.env_path("CPACK"), "-G", "DEB", "-B", out, "--config", os.path.join(lib.BUILD, "CPackConfig.cmake")],
        cwd=lib.BUILD)
    debs = glob.glob(os.path.join(out, "*.deb"))
    t.check(len(debs) == 1, "cpack made %s, not one .deb" % debs)
    t.log("ok: cpack made %s (%d KiB)" % (os.path.basename(debs[0]), os.path.getsize(debs[0]) // 1024))
    return debs[0]


def check_control(deb):
    fields = dict(line.split(": ", 1) for line in run(["dpkg-deb", "--field", deb]).splitlines()
                  if ": " in line and not line.startswith(" "))
    t.check(fields.get("Package") == "slabcast", "Package: %s" % fields.get("Package"))
    depends = fields.get("Depends", "")
    # Stated (packaging.cmake) and found by dpkg-shlibdeps in the binaries and the plugin.
    for dep in ("paraview (>= 5.11~)", "python3-paraview", "python3-numpy", "libc6", "libnuma1", "libsodium"):
        t.check(dep in depends, "Depends lacks %s: %s" % (dep, depends))
    contents = run(["dpkg-deb", "--contents", deb])
    for unwanted in ("SlabcastTestProbe", ".a\n", "vtkSlabcastReader.h"):
        t.check(unwanted not in contents, "the package holds %r:\n%s" % (unwanted.strip(), contents))
    t.log("ok: Depends: " + depends)


def check_files():
    expected = [installed("bin", "slabcast"), installed("bin", "slabcast-datagen"),
                os.path.join(lib.plugin_dir(), "Slabcast.so"),
                installed("doc", "README.md"), installed("doc", "docs", "deployment.md"),
                installed("doc", "plugin", "README.md")]
    expected += [installed("data", "slabcast", name) for name in
                 ("slabcast_plot.py", "slabcast_render.py", "slabcast_head_to_head.py", "slabcast_gui_open.py",
                  "slabcast_mappers.py", "slabcast_refinement.py")]
    expected += [installed("doc", "examples", role + ".conf") for role in ROLES]
    missing = [p for p in expected if not os.path.isfile(p)]
    t.check(not missing, "not installed: %s" % missing)
    t.log("ok: programs, plugin, render and plot programs, guides and example configs installed")


def check_help():
    slabcast = installed("bin", "slabcast")
    main_help = run([slabcast, "--help"])
    t.check("Subcommands:" in main_help, "the installed slabcast --help lists no subcommands:\n" + main_help)
    t.check(run([slabcast, "--version"]).strip() == "slabcast 0.1.0", "slabcast --version")
    section = main_help.split("\nSubcommands:\n", 1)[1].split("\n\n", 1)[0]
    subs = re.findall(r"^  ([a-z][a-z0-9-]*) ", section, re.M)
    t.check(set(ROLES) <= set(subs), "subcommands %s lack some of %s" % (subs, ROLES))
    man = lib.cache_value("HELP2MAN_EXECUTABLE")
    with_man = man and not man.endswith("NOTFOUND")
    for name, args in [("slabcast", [])] + [("slabcast-" + s, [s]) for s in subs]:
        page = installed("doc", "help", name + ".txt")
        t.check(os.path.isfile(page), "no help page %s" % page)
        now = run([slabcast] + args + ["--help"]).replace(slabcast, "slabcast")
        t.check(open(page).read() == now, "%s differs from `%s --help`" % (page, " ".join(["slabcast"] + args)))
        if with_man:
            with gzip.open(installed("man", "man1", name + ".1.gz"), "rt") as f:
                t.check(".TH " + name.upper() + " " in f.read(), "man page %s.1 has no title line" % name)
    t.log("ok: %d help pages%s, each what the installed binary says" % (len(subs) + 1, " and man pages" * bool(with_man)))
    return subs


def check_units():
    slabcast = os.path.join(lib.PREFIX, lib.DIRS["bin"], "slabcast")  # where it is once installed
    for role in ROLES:
        units = glob.glob(os.path.join(lib.ROOT, "**", "systemd", "system", "slabcast-%s@.service" % role),
                          recursive=True)
        t.check(len(units) == 1, "unit template for %s: %s" % (role, units))
        text = open(units[0]).read()
        execs = re.findall(r"^ExecStart=(.*)$", text, re.M)
        t.check(execs == ["%s %s $SLABCAST_ARGS" % (slabcast, role)], "%s: ExecStart %s" % (units[0], execs))
        t.check(os.access(lib.ROOT + slabcast, os.X_OK), "ExecStart's %s is not in the package" % slabcast)
        t.check("EnvironmentFile=/etc/slabcast/%s/%%i.conf\n" % role in text, units[0] + ": EnvironmentFile")
        t.check("\nNoNewPrivileges=yes\n" in text, units[0] + ": no NoNewPrivileges=yes")
        if role in ("receive", "stage", "shuffle"):  # they share /dev/shm with processes outside the unit
            t.check("\nPrivateDevices=yes" not in text, units[0] + ": a private /dev hides /dev/shm")
        # Every option of the example config is one the role has.
        example = open(installed("doc", "examples", role + ".conf")).read()
        options = set(re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", example.split("SLABCAST_ARGS=", 1)[1]))
        known = set(re.findall(r"(--[a-z][a-z0-9-]*)", open(installed("doc", "help", "slabcast-%s.txt" % role)).read()))
        t.check(options and options <= known, "%s.conf: options %s are not `slabcast %s`'s" % (
            role, sorted(options - known), role))
        verify_unit(units[0], role, slabcast)
    t.log("ok: %d unit templates, ExecStart %s, systemd-analyze verify says nothing" % (len(ROLES), slabcast))


def verify_unit(unit, role, slabcast):
    """systemd's own check of an instance of the template: every key known,
    every value parsed, the command there. It checks ExecStart on this host,
    so the copy it reads runs the scratch root's binary (the real path was
    checked above); --root would need the host's targets in the scratch root."""
    folder = os.path.join(lib.SCRATCH, "verify")
    os.makedirs(folder, exist_ok=True)
    copy = os.path.join(folder, "slabcast-%s@test.service" % role)
    with open(copy, "w") as f:
        f.write(open(unit).read().replace("ExecStart=" + slabcast, "ExecStart=" + lib.ROOT + slabcast))
    p = subprocess.run(["systemd-analyze", "verify", "--man=no", copy], env=dict(os.environ, SYSTEMD_LOG_COLOR="0"),
                       capture_output=True, text=True, timeout=120)
    # Unknown keys and bad values are warnings with exit code 0: any word fails.
    t.check(p.returncode == 0 and not (p.stdout + p.stderr).strip(),
            "systemd-analyze verify %s (exit code %d):\n%s%s" % (unit, p.returncode, p.stdout, p.stderr))


def check_reader():
    with t.shm_dir("installed") as d, t.xvfb() as display:
        desc = t.write_volume(d, "installed", (40, 24, 30), 10)
        env = dict(os.environ, PV_PLUGIN_PATH=lib.plugin_dir(), DISPLAY=display)
        out = run(t.pvbatch_cmd(os.path.join(lib.HERE, "pv_installed.py"),
                                [lib.plugin_dir(), "index", desc, "40,24,30"]), env=env, timeout=240)
        t.log(out.strip())
        t.check("PV_INSTALLED_OK" in out, "pv_installed.py did not finish")


def check_demo():
    """The installed `slabcast demo` finds its plugin, programs and generator
    under the prefix (server/src/setup/install_layout.h) and renders frames.
    It streams (--forever) until the renderer has logged a frame, then is
    stopped with Ctrl-C as a user does: a fixed count of steps could all be
    sent, and the demo end, before pvbatch's first frame on a busy machine."""
    out = os.path.join(lib.SCRATCH, "demo")
    port = 20000 + (os.getpid() % 400) * 100
    cmd = [installed("bin", "slabcast"), "demo", "--headless", "--dims", "32,32,32", "--dataset-steps", "2",
           "--forever", "--streams", "2", "--rate", "50M", "--step-interval", "0.5", "--size", "320x240",
           "--out", out, "--cache", os.path.join(lib.SCRATCH, "cache"), "--base-port", str(port)]
    t.log("$ " + " ".join(cmd))
    render_log = os.path.join(out, "logs", "render.log")
    limit_s = 3 * lib.WAIT_S  # the dataset is generated first, then every role and pvbatch start
    frames = []

    def enough():
        if os.path.exists(render_log):
            with open(render_log, errors="replace") as f:
                frames[:] = re.findall(r"^frame \d+: step \d+", f.read(), re.M)
        return bool(frames)

    ended_early, rc, text = run_demo_until(cmd, os.path.join(lib.SCRATCH, "demo.log"), enough, limit_s)
    t.check(ended_early is None, "the installed demo ended by itself (exit code %s):\n%s" % (ended_early, text[-4000:]))
    t.check(frames, "after %d s the installed demo's renderer had logged no frame; the demo said:\n%s" % (
        limit_s, text[-4000:]))
    t.check(rc == 0 and "demo: done" in text, "the installed demo did not end cleanly on Ctrl-C (exit code %s):\n%s"
            % (rc, text[-4000:]))
    frames = glob.glob(os.path.join(out, "frames", "*.png"))
    t.check(frames, "the installed demo saved no frame")
    t.check(os.path.isfile(os.path.join(out, "plots", "full-throughput.png")), "the installed demo drew no plot")
    t.log("ok: the installed demo rendered %d frame(s) and drew its plots" % len(frames))


def check_python():
    """The installed `import slabcast`: its recorded library is the prefix's
    libslabcast, relative to the module, and unpacked elsewhere (the scratch
    root) it loads that copy by itself and answers."""
    package = os.path.join(lib.ROOT + lib.PREFIX, lib.cache_value("SLABCAST_PYTHON_INSTALL_DIR"))
    recorded = {}
    with open(os.path.join(package, "slabcast", "_library_path.py")) as f:
        exec(f.read(), recorded)
    library = recorded["LIBRARY_PATH"]
    # Relative to the module's folder, so that the prefix may move.
    t.check(not os.path.isabs(library) and os.path.isfile(os.path.join(package, "slabcast", library)),
            "the installed module records %s, which is not the package's library beside it" % library)
    probe = ("import slabcast\n"
             "assert slabcast.rank_slab(100, 1, 3) == (34, 68, 34), slabcast.rank_slab(100, 1, 3)\n"
             "try:\n    slabcast.Sender((0, 8, 8), (0, 8), '127.0.0.1:9')\nexcept slabcast.Error as e:\n"
             "    print('ERROR', e.code, e.message)\n")
    env = dict(os.environ, PYTHONPATH=package)
    env.pop("SLABCAST_LIBRARY", None)
    # Debian's python3, the one the package's python3-numpy dependency serves.
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
    out = run([python, "-c", probe], env=env)
    t.check("ERROR 1 dims: nx is 0" in out, "the installed module did not report bad dims: %s" % out)
    t.log("ok: the installed Python module loads the installed library (%s)" % library)


def body():
    lib.need_programs({"dpkg-deb": "dpkg", "dpkg-shlibdeps": "dpkg-dev", "systemd-analyze": "systemd",
                       os.path.basename(t.PVBATCH): "paraview", os.path.basename(t.XVFB): "xvfb"})
    shutil.rmtree(lib.SCRATCH, ignore_errors=True)
    os.makedirs(lib.SCRATCH)
    deb = build_deb()
    check_control(deb)
    run(["dpkg-deb", "-x", deb, lib.ROOT])
    check_files()
    check_help()
    check_units()
    check_python()
    check_reader()
    check_demo()


t.main(body)
