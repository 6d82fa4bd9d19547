"""Shared pieces of the plugin test drivers (system python3, standard library only).

The drivers orchestrate: a private Xvfb, a scratch directory in /dev/shm,
slab files from the test writer or the real receiver, and ParaView processes
(pvpython, pvbatch, mpirun). The checks that need ParaView run inside those
processes (the pv_*.py scripts next to this file). Paths come from the
environment ctest sets (see CMakeLists.txt).
"""
import contextlib
import os
import re
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
# The end-to-end tests' own: one registry of the ports handed out, whichever
# helper a process takes them through.
from slabcast_testlib import free_udp_ports  # noqa: E402

# How long a test waits for an event (a log line, a file, a step shown) before
# it fails saying what it saw: enough for a machine 2-5x slower than usual
# with its other core busy. Tests wait on events, never on the clock, so a
# passing run does not pay it.
WAIT_S = 90


def env_path(name):
    value = os.environ.get(name)
    if not value:
        sys.exit("%s is not set: run this test through ctest" % name)
    return value


PLUGIN = os.environ.get("SLABCAST_PLUGIN", "")            # .../Slabcast.so
TEST_WRITER = os.environ.get("SLABCAST_TEST_WRITER", "")  # slabcast-test-writer
SERVER = os.environ.get("SLABCAST_SERVER", "")            # slabcast (receive, clean)
RENDER = os.environ.get("SLABCAST_RENDER", "")            # slabcast_render.py
PVPYTHON = os.environ.get("PVPYTHON", "pvpython")
PVBATCH = os.environ.get("PVBATCH", "pvbatch")
PARAVIEW = os.environ.get("PARAVIEW", "paraview")
PVSERVER = os.environ.get("PVSERVER", "pvserver")
XVFB = os.environ.get("XVFB") or "Xvfb"
MPIEXEC = os.environ.get("MPIEXEC", "mpirun")


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def log(message):
    print(message, flush=True)


@contextlib.contextmanager
def shm_dir(tag):
    """A private directory in real shared memory, removed with all it holds."""
    path = "/dev/shm/slabcast-plugintest-%s-%d" % (tag, os.getpid())
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, mode=0o750)  # the receiver refuses a directory anyone may write
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def xvfb(fbdir=None, screen="1280x1024x24"):
    """A private X server on a free display. -noreset: without it Xvfb resets
    when its last client leaves and MPI ranks connecting a moment later fail.
    fbdir: keep the screen there as a file (see xvfb_screen.py)."""
    read_fd, write_fd = os.pipe()
    cmd = [XVFB, "-displayfd", str(write_fd), "-noreset", "-nolisten", "tcp", "-screen", "0", screen]
    if fbdir:
        cmd += ["-fbdir", fbdir]
    proc = subprocess.Popen(cmd, pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        number = b""
        with os.fdopen(read_fd, "rb") as f:
            while not number.endswith(b"\n"):
                chunk = f.read(1)
                if not chunk:
                    raise Failure("Xvfb did not report a display (exit code %s)" % proc.poll())
                number += chunk
        yield ":" + number.decode().strip()
    finally:
        stop(proc, timeout=10)


def stop(proc, timeout=15):
    """Ends a child: SIGTERM, then SIGKILL after `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def paraview_env(display=None):
    env = dict(os.environ)
    env["PV_PLUGIN_PATH"] = os.path.dirname(env_path("SLABCAST_PLUGIN"))
    if display:
        env["DISPLAY"] = display
    # Open MPI inside containers: no shared-memory segment warnings, no hwloc binding.
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def run(cmd, env=None, timeout=240, expect_rc=0):
    """Runs cmd, returns (stdout, stderr); shows both when it fails."""
    cmd = [str(c) for c in cmd]
    log("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise Failure("timed out after %d s: %s\n%s\n%s" % (timeout, " ".join(cmd), e.stdout, e.stderr))
    if expect_rc is not None and p.returncode != expect_rc:
        raise Failure("exit code %d (expected %d): %s\n--- stdout\n%s\n--- stderr\n%s" % (
            p.returncode, expect_rc, " ".join(cmd), p.stdout, p.stderr))
    return p.stdout, p.stderr


def pvpython(script, *args, display=None, timeout=240, expect_rc=0):
    return run([PVPYTHON, os.path.join(HERE, script)] + [str(a) for a in args],
               env=paraview_env(display), timeout=timeout, expect_rc=expect_rc)


def pvbatch_cmd(script, args, ranks=1, symmetric=False, offscreen=True):
    cmd = [PVBATCH]
    if offscreen:
        cmd.append("--force-offscreen-rendering")
    if symmetric:
        cmd.append("--symmetric")
    cmd += [script] + [str(a) for a in args]
    if ranks > 1:
        cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + cmd
    return cmd


def write_volume(directory, name, dims, depth, pattern="index", step=0, slabs=None, listed=None, unpublished=False,
                 repaired=0):
    """Slab files + descriptor from the test writer, the step published (or,
    `unpublished`, left being written); returns the descriptor path."""
    cmd = [env_path("SLABCAST_TEST_WRITER"), "write", "--dir", directory, "--name", name,
           "--dims", ",".join(str(d) for d in dims), "--slab-depth", str(depth),
           "--pattern", pattern, "--step", str(step), "--repaired", str(repaired)] + (["--unpublished"] if unpublished else [])
    if slabs is not None:
        cmd += ["--slabs", slabs]
    if listed is not None:
        cmd += ["--list", listed]
    out, _ = run(cmd)
    return out.strip()


def corrupt(path, how):
    run([env_path("SLABCAST_TEST_WRITER"), "corrupt", "--file", path, "--how", how])


def free_listen_port():
    """A TCP port free now, below Linux's ephemeral range (32768 up): mpirun's
    own connections, made after the pick and before pvserver binds, take their
    ports from that range."""
    for port in random.sample(range(20000, 32000), 200):
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
                return port
            except OSError:
                continue
    raise Failure("no free TCP port in 20000-32000")


@contextlib.contextmanager
def pvserver(directory, env, ranks=2, options=("--force-offscreen-rendering",)):
    """`mpirun -np RANKS pvserver OPTIONS` on a free TCP port (by default
    offscreen); yields the port once it accepts connections, and stops it (it
    also ends by itself when its only client leaves). Started again on another
    port, up to three times, when something took the port first."""
    logfile = open(os.path.join(directory, "pvserver.log"), "w+")
    server = None
    try:
        for attempt in range(3):
            port = free_listen_port()
            cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), PVSERVER,
                   "--server-port=%d" % port] + list(options)
            log("$ " + " ".join(cmd))
            logfile.seek(0)
            logfile.truncate()
            server = subprocess.Popen(cmd, env=env, stdout=logfile, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + WAIT_S
            while "Accepting connection" not in open(logfile.name).read():
                text = open(logfile.name).read()
                if server.poll() is not None and "Address already in use" in text and attempt < 2:
                    log("pvserver: port %d was taken first; again on another" % port)
                    break
                check(server.poll() is None and time.monotonic() < deadline, "pvserver did not start (exit code "
                      "%s, %.0f s):\n%s" % (server.poll(), time.monotonic() - deadline + WAIT_S, text))
                time.sleep(0.2)
            else:
                break
        yield port
        try:
            server.wait(timeout=30)  # ends when its client leaves
        except subprocess.TimeoutExpired:
            pass
    finally:
        if server is not None and server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        logfile.close()


@contextlib.contextmanager
def receiver(directory, name, dims, depth, slabs, extra_args=(), server=None):
    """The real `slabcast receive` (SLABCAST_SERVER, or `server`) on loopback,
    one stream per slab (and EXTRA_ARGS); yields ({slab: port}, descriptor
    path) and stops it with SIGTERM. Its log is DIRECTORY/NAME.receive.log
    (receive_log)."""
    ports = dict(zip(slabs, free_udp_ports(len(slabs))))
    cmd = [server or env_path("SLABCAST_SERVER"), "receive", "--name", name, "--dims", ",".join(str(d) for d in dims),
           "--slab-depth", str(depth), "--listen", "127.0.0.1", "--shm-dir", directory, "--rcvbuf-mb", "8"]
    for k, port in ports.items():
        cmd += ["--stream", "%d:%d" % (k, port)]
    cmd += list(extra_args)
    log("$ " + " ".join(cmd))
    logfile = open(os.path.join(directory, name + ".receive.log"), "w+")
    proc = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT)
    descriptor = os.path.join(directory, name + ".slabcast")
    try:
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(descriptor):
            if proc.poll() is not None or time.monotonic() > deadline:
                logfile.seek(0)
                raise Failure("the receiver did not start (exit code %s after %.0f s):\n%s" % (
                    proc.poll(), time.monotonic() - deadline + WAIT_S, logfile.read()))
            time.sleep(0.05)
        yield ports, descriptor
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        logfile.close()


def check_rank_reports(out, ranks):
    """Each of `ranks` pvbatch ranks printed "RANK r/ranks OK": mpirun may
    splice two ranks' lines together, so reports are matched, not lines."""
    reports = dict((int(r), verdict) for r, verdict in re.findall(r"RANK (\d+)/%d (OK|FAIL)" % ranks, out))
    check(sorted(reports) == list(range(ranks)), "ranks %s of %d reported" % (sorted(reports), ranks))
    check(all(v == "OK" for v in reports.values()), "a rank failed")


def read_image_stats(stdout):
    """Parses the key=value line pv_image_stats.py prints."""
    for line in stdout.splitlines():
        if line.startswith("STATS "):
            return {k: float(v) for k, v in (item.split("=") for item in line[6:].split())}
    raise Failure("no STATS line in:\n" + stdout)


def main(body):
    """Runs a test body, turning Failure into exit code 1 with its message."""
    try:
        body()
    except Failure as e:
        print("FAIL: %s" % e, flush=True)
        sys.exit(1)
    print("PASS", flush=True)


def constant_dataset(directory, dims, steps):
    """A dataset (dataset.json + raw float32 files) whose step s holds the
    value s everywhere: a read that mixes two steps shows two values."""
    import array
    import json
    os.makedirs(directory, exist_ok=True)
    count = dims[0] * dims[1] * dims[2]
    listed = []
    for s in steps:
        name = "step%05d.raw" % s
        with open(os.path.join(directory, name), "wb") as f:
            array.array("f", [float(s)] * count).tofile(f)
        listed.append({"step": s, "file": name})
    with open(os.path.join(directory, "dataset.json"), "w") as f:
        json.dump({"name": "constant", "field": "density", "dtype": "float32", "dims": list(dims), "steps": listed}, f)
    return directory


@contextlib.contextmanager
def streaming_pipeline(directory, dataset, name, dims, depth, interval=0.05, rate="2G", receive_args=(),
                       shuffle_args=lambda k: [], control_args=None, wait_staged_ms=2000):
    """The real roles on loopback: `receive` (one stream per slab), `stage`,
    a `shuffle` per slab (with shuffle_args(k) for slab k) and `control --loop`
    stepping through the dataset every `interval` seconds (or `control
    CONTROL_ARGS`), started once the stager and every shuffler listen for its
    syncs. Yields the descriptor; stops every role. The roles' logs are
    DIRECTORY/ROLE-N.log (receive_log, published_steps)."""
    slabs = (dims[2] + depth - 1) // depth
    ports = free_udp_ports(2 * slabs + 1)
    data, sync, stager = ports[:slabs], ports[slabs:2 * slabs], ports[-1]
    staging = os.path.join(directory, "staging")
    os.makedirs(staging, mode=0o750, exist_ok=True)
    shm = os.path.join(directory, "shm")
    os.makedirs(shm, mode=0o750, exist_ok=True)
    server = env_path("SLABCAST_SERVER")
    roles = [["receive", "--name", name, "--dims", ",".join(map(str, dims)), "--slab-depth", str(depth),
              "--listen", "127.0.0.1", "--shm-dir", shm, "--rcvbuf-mb", "32"]
             + sum((["--stream", "%d:%d" % (k, p)] for k, p in enumerate(data)), []) + list(receive_args),
             ["stage", "--dataset", dataset, "--staging", staging, "--streams", "0-%d" % (slabs - 1),
              "--budget", "64M", "--sync", "127.0.0.1:%d" % stager]]
    roles += [["shuffle", "--stream", str(k), "--to", "127.0.0.1:%d" % data[k], "--staging", staging,
               "--dataset", dataset, "--slab-depth", str(depth), "--sync", "127.0.0.1:%d" % sync[k],
               "--rate", rate, "--wait-staged-ms", str(wait_staged_ms)] + list(shuffle_args(k)) for k in range(slabs)]
    procs = []
    descriptor = os.path.join(shm, name + ".slabcast")

    def start(args):
        logfile = open(os.path.join(directory, "%s-%d.log" % (args[0], len(procs))), "w+")
        log("$ slabcast " + " ".join(args))
        procs.append((subprocess.Popen([server] + args, stdout=logfile, stderr=subprocess.STDOUT), logfile))

    try:
        for args in roles:
            start(args)
        # The controller sends each sync a few times only (the stager's three
        # times, a shuffler's for the step's interval): start it once the stager
        # and every shuffler have bound their sync port (their "sync on" line),
        # however long they take to start here.
        deadline = time.monotonic() + WAIT_S
        while not (os.path.exists(descriptor) and all("sync on" in read_log(f) for p, f in procs[1:])):
            check(time.monotonic() < deadline and all(p.poll() is None for p, _ in procs),
                  "the pipeline did not start within %d s (a role exited, or has not logged 'sync on'):\n%s" % (
                      WAIT_S, "\n".join("%s rc=%s: %s" % (p.args[1], p.poll(), read_log(f)[-600:]) for p, f in procs
                                        if p.poll() is not None or "sync on" not in read_log(f))))
            time.sleep(0.05)
        stepping = ["--loop", "--interval", str(interval)] if control_args is None else list(control_args)
        start(["control", "--dataset", dataset, "--stager", "127.0.0.1:%d" % stager] + stepping
              + sum((["--shuffler", "127.0.0.1:%d" % p] for p in sync), []))
        yield descriptor
    finally:
        for p, logfile in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p, logfile in reversed(procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            logfile.close()


def read_log(logfile):
    with open(logfile.name, errors="replace") as f:
        return f.read()


def receive_log(directory, name=None):
    """What a receiver has logged so far: streaming_pipeline's (name None), or
    receiver(directory, name, ...)'s."""
    with open(os.path.join(directory, "receive-0.log" if name is None else name + ".receive.log"),
              errors="replace") as f:
        return f.read()


def published_steps(directory, name=None):
    """{stream: [step, ...]}: the steps that receiver published, in order,
    from its log ("stream K step S: R of N records")."""
    import re
    steps = {}
    for k, step in re.findall(r"stream (\d+) step (\d+): \d+ of \d+ records", receive_log(directory, name)):
        steps.setdefault(int(k), []).append(int(step))
    return steps


def wait_published(directory, step, slabs, name=None):
    """Until that receiver has published `step` (None: any step) on every slab
    in `slabs`: a reader started before would find nothing to show on a
    machine where the receiver is slower than ParaView's start-up."""
    def there(steps):
        return steps if step is None else step in steps
    deadline = time.monotonic() + WAIT_S
    while not all(there(published_steps(directory, name).get(k, [])) for k in slabs):
        check(time.monotonic() < deadline, "after %d s the receiver had published steps %s (by slab), not step %s on "
              "slabs %s; it logged:\n%s" % (WAIT_S, published_steps(directory, name), "any" if step is None else step,
                                            list(slabs), receive_log(directory, name)[-3000:]))
        time.sleep(0.05)


def torn_frame_lines(stdout):
    """{rank: (reads, torn, holed, [step per frame])} from pv_torn_frames.py's lines."""
    ranks = {}
    for line in stdout.splitlines():
        if line.startswith("RANK "):
            words = line.split()
            rank = int(words[1].split("/")[0])
            ranks[rank] = (int(words[3]), int(words[5]), int(words[7]), [int(s) for s in words[9].split(",") if s])
    return ranks


def xwd_screenshot(display, directory):
    """The whole screen of DISPLAY now, taken by `xwd -root`, as
    xvfb_screen.snapshot's (width, height, rows of RGB bytes): xwd writes the
    XWD format Xvfb keeps its framebuffer in, so it is saved under the name
    that snapshot reads (DIRECTORY/Xvfb_screen0)."""
    import xvfb_screen
    os.makedirs(directory, exist_ok=True)
    run(["xwd", "-root", "-silent", "-display", display, "-out", os.path.join(directory, "Xvfb_screen0")])
    return xvfb_screen.snapshot(directory)
