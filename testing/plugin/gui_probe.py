"""The ParaView GUI under Xvfb with the test-only probe plugin (probe/), for
tests and benchmarks of the stream monitor: the probe writes what the panel's
widgets show to a JSON file twice a second and runs commands dropped in a
file ("click NAME", "save_chart PATH", "save_series PATH", "hide", "show",
"float", "render_bench SECONDS")."""
import contextlib
import json
import os
import subprocess
import time

import plugin_testlib as t


def read_state(probe):
    try:
        with open(probe["out"]) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def wait_state(probe, what, ok, deadline):
    """The probe's state once ok(state) holds; fails the test at `deadline`."""
    while True:
        state = read_state(probe)
        if state is not None and ok(state):
            return state
        t.check(time.monotonic() < deadline, "the panel never showed %s; last seen: %s" % (what, state))
        time.sleep(0.25)


def command(probe, line, deadline):
    """Has the probe run one command; returns (ok, the lines it wrote)."""
    results = probe["out"] + ".results"
    before = open(results).read() if os.path.exists(results) else ""
    with open(probe["commands"] + ".tmp", "w") as f:
        f.write(line + "\n")
    os.rename(probe["commands"] + ".tmp", probe["commands"])
    while True:
        now = open(results).read() if os.path.exists(results) else ""
        if now.endswith("\n") and "-> " in now[len(before):]:
            new = now[len(before):].strip()
            return new.endswith("-> ok"), new
        t.check(time.monotonic() < deadline, "the probe did not run '%s'" % line)
        time.sleep(0.1)


@contextlib.contextmanager
def gui(directory, display, descriptor, extra_args=()):
    """paraview opening `descriptor` live (gui_open_live.py), the probe loaded;
    yields (probe, paraview's log file, process). Shows the log on failure."""
    probe = {"out": os.path.join(directory, "probe.json"), "commands": os.path.join(directory, "probe.commands")}
    env = t.paraview_env(display)
    env["PV_PLUGIN_PATH"] += ":" + os.path.dirname(t.env_path("SLABCAST_PROBE_PLUGIN"))
    env["SLABCAST_PROBE_OUT"] = probe["out"]
    env["SLABCAST_PROBE_COMMANDS"] = probe["commands"]
    env["SLABCAST_GUI_DESCRIPTOR"] = descriptor
    env["XDG_CONFIG_HOME"] = os.path.join(directory, "config")  # leave the user's settings alone
    env["XDG_RUNTIME_DIR"] = directory
    cmd = [t.PARAVIEW, "--dr"] + list(extra_args) + ["--script=" + os.path.join(t.HERE, "gui_open_live.py")]
    t.log("$ " + " ".join(cmd))
    log = open(os.path.join(directory, "paraview.log"), "w+")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield probe, log, proc
    except t.Failure:
        log.seek(0)
        t.log("--- paraview output\n" + log.read())
        raise
    finally:
        t.stop(proc)
        log.close()
