"""ctest e2e_multihost: rendering across hosts, as at SC11 (Balman et al.,
2012, section 4.2): render hosts that each hold only their own slabs, and
pvbatch ranks on them compositing over the network.

The namespace testbed (netns_testbed.py) with two render hosts (or
SLABCAST_RENDER_HOSTS, up to four), each its own network namespace, hostname
and /dev/shm (a private tmpfs). `slabcast plan` plans the deployment; its
commands run as printed on their hosts: on each render host a `slabcast
receive` for its slab, on the sender host the stager and a shuffler per slab
sending across the WAN, the controller's one step. Then the plan's own mpirun
line (and its hostfile form) launches one pvbatch rank a slab into the render
hosts (Open MPI's remote shell agent is enter_host.sh, which enters a host's
namespaces where ssh would log in) and IceT composites over TCP between them.

Shows: each host's /dev/shm holds its own slab and no other; each rank runs
on the host of its slab, reads the dataset's values bit for bit and maps its
host's slab only, without a copy (pv_host_pieces.py: the values lie inside
that slab's mapping, whose device and inode are that host's file); the
composited image equals the same step rendered by as many ranks on one host
with one /dev/shm (max pixel difference <= 8/255, mean <= 0.2/255), and every
render host exchanged more than half an image's worth of bytes over the WAN
while compositing; ranks launched onto the wrong hosts get the reader's error
naming a slab that lives on another host. Needs root, Open MPI and the plugin
build."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "plugin"))
import netns_testbed as tb  # noqa: E402
from slabcast_testlib import SLABCAST, Workspace, read_slab_header, unittest_main, wait_for  # noqa: E402

# Two render hosts by default; SLABCAST_RENDER_HOSTS=4 runs the same with four (2-4: one slab a host).
HOSTS = int(os.environ.get("SLABCAST_RENDER_HOSTS", "2"))
DIMS, DEPTH = (96, 96, 96), 96 // HOSTS
NAME, SHM = "cosmo", "/dev/shm/slabcast"  # the receivers' default --shm-dir, in each host's own /dev/shm
PORTS = {"data": 52000, "sync": 52100, "stager": 52200}
SIZE, MAX_DIFF, MEAN_DIFF = "400x400", 8, 0.2
# How long to wait for what takes a second or two here (a loaded machine,
# 2-5 times slower, gets there long before; a passing run never waits it out).
WAIT_S = 120
# Open MPI on the testbed: daemons started through enter_host.sh, ranks talking TCP over the testbed's links only.
MPI_TESTBED = ["--allow-run-as-root", "--mca", "plm_rsh_agent", os.path.join(HERE, "enter_host.sh"),
               "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.77.0.0/16",
               "--mca", "oob_tcp_if_include", "10.77.0.0/16"]


def render_host(i):
    return "render%d" % i


def plan_sections(text):
    """{host: [argv, ...]} of the plan's daemons, and the render launch's argv."""
    sections, host, launch = {}, None, None
    for line in text.splitlines():
        header = re.match(r"# (\S+): ", line)
        if header:
            host = header.group(1)
        elif line.startswith("mpirun "):
            launch = shlex.split(line)
        elif not line.startswith("#"):
            sections.setdefault(host, []).append(shlex.split(line))
    return sections, launch


def wan_bytes(bed, i):
    """Bytes that went through the wan's end of render host i's link, both ways."""
    out = subprocess.run(bed.prefix("wan") + ["cat"] + [
        "/sys/class/net/wn%d_%d/statistics/%s_bytes" % (i, os.getpid() % 100000, way) for way in ("rx", "tx")],
        capture_output=True, text=True, check=True).stdout.split()
    return sum(int(v) for v in out)


class MultihostTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        assert 2 <= HOSTS <= 4, "SLABCAST_RENDER_HOSTS must be 2, 3 or 4"
        why = tb.available()
        if why:
            raise unittest.SkipTest(why)
        if not os.environ.get("SLABCAST_PLUGIN"):
            raise unittest.SkipTest("no plugin build (SLABCAST_PLUGIN unset)")
        for tool in ("mpirun", "nsenter", "unshare", "pvbatch"):
            if not shutil.which(tool):
                raise unittest.SkipTest("%s is not installed" % tool)
        import plugin_testlib
        cls.t = plugin_testlib
        cls.ws = Workspace("multihost")
        cls.bed = None
        try:
            cls.bed = tb.Testbed(render_hosts=HOSTS)
            cls.deploy()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.ws.close()  # every role first: a namespace lives while a process is in it
        if cls.bed:
            cls.bed.close()

    @classmethod
    def deploy(cls):
        """The plan's commands, each on its host, and one step sent through them."""
        ws, bed = cls.ws, cls.bed
        cls.dataset = ws.generate("ds", DIMS, 1)
        with open(os.path.join(cls.dataset, "dataset.json")) as f:
            cls.step_file = json.load(f)["steps"][0]["file"]
        slabs = DIMS[2] // DEPTH
        per_host = slabs // HOSTS
        cls.slabs_of = {render_host(i): list(range(i * per_host, (i + 1) * per_host)) for i in range(HOSTS)}
        config = {
            "name": NAME, "dataset": cls.dataset, "dims": list(DIMS), "slab_depth": DEPTH, "rate": "200M",
            "ports": PORTS, "controller": {"host": "controller", "address": tb.CONTROLLER},
            "senders": [{"host": "sender", "address": tb.SENDER, "streams": "0-%d" % (slabs - 1),
                         "staging": ws.staging, "budget": "16M"}],
            # Listed last host first: the plan puts the ranks in stream order whatever the file's order.
            "receivers": [{"host": render_host(i), "address": tb.render_address(i),
                           "streams": "%d-%d" % (i * per_host, (i + 1) * per_host - 1)}
                          for i in reversed(range(HOSTS))]}
        path = os.path.join(ws.dir, "deploy.json")
        with open(path, "w") as f:
            json.dump(config, f)
        r = ws.run(["plan", path])
        assert r.returncode == 0, r.stderr
        print(r.stdout, flush=True)
        sections, cls.launch = plan_sections(r.stdout)
        assert cls.launch, "the plan printed no render launch:\n" + r.stdout

        def start(host):
            for n, argv in enumerate(sections[host]):
                assert argv[0] == "slabcast", argv
                ws.start("%s-%s-%d" % (host, argv[1], n), argv[1:], prefix=bed.prefix(host))

        for host in cls.slabs_of:
            start(host)
            descriptor = bed.host_path(host, "%s/%s.slabcast" % (SHM, NAME))  # written once its sockets are bound
            wait_for(lambda: os.path.exists(descriptor), timeout=WAIT_S, what="the receiver on " + host)
        start("sender")
        shufflers = [role for role in ws.roles if "-shuffle-" in role.name]
        wait_for(lambda: all("sync on" in s.text() for s in shufflers), timeout=WAIT_S, what="the shufflers to start")
        # The step staged before it is asked for: a shuffler waits only 2 s
        # for a step its stager has not staged yet (renamed into place whole).
        staged = os.path.join(ws.staging, os.path.basename(cls.step_file))
        wait_for(lambda: os.path.exists(staged), timeout=WAIT_S, what="the stager to stage " + staged)
        control = sections["controller"][0]
        r = subprocess.run(bed.prefix("controller") + [SLABCAST] + control[1:],
                           capture_output=True, text=True, timeout=WAIT_S)
        assert r.returncode == 0 and "%d/%d done" % (slabs, slabs) in r.stdout + r.stderr, r.stdout + r.stderr
        for host, mine in cls.slabs_of.items():
            for k in mine:
                slab = bed.host_path(host, "%s/%s.slab%d" % (SHM, NAME, k))
                wait_for(lambda: read_slab_header(slab)["last_step"] == 0, timeout=WAIT_S,
                         what="slab %d on %s" % (k, host))

    def mpirun_on_hosts(self, launch, args, display, timeout=240, expect_rc=0):
        """The plan's mpirun line with the testbed's Open MPI settings, from
        the controller's host, the script's ARGS after it."""
        env = self.t.paraview_env(display)
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   SLABCAST_NETNS_HOSTS=" ".join("%s=%d" % (h, self.bed.holder_pid(h)) for h in self.slabs_of))
        cmd = self.bed.prefix("controller") + [launch[0]] + MPI_TESTBED + launch[1:] + [str(a) for a in args]
        return self.t.run(cmd, env=env, timeout=timeout, expect_rc=expect_rc)

    def test_each_host_holds_its_own_slabs(self):
        for host, mine in self.slabs_of.items():
            held = sorted(os.listdir(self.bed.host_path(host, SHM)))
            self.assertEqual(held, sorted([NAME + ".slabcast"] + ["%s.slab%d" % (NAME, k) for k in mine]), host)
            with open(self.bed.host_path(host, "%s/%s.slabcast" % (SHM, NAME))) as f:
                self.assertEqual([s["index"] for s in json.load(f)["slabs"]], mine, host)
        devices = [os.stat(self.bed.host_path(h, "/dev/shm")).st_dev for h in self.slabs_of] + [
            os.stat("/dev/shm").st_dev]
        self.assertEqual(len(set(devices)), len(devices), "the hosts' /dev/shm are not each their own tmpfs")

    def test_ranks_map_their_hosts_slabs_without_a_copy(self):
        """The plan's launch in the hostfile form of docs/deployment.md (hosts
        in stream order, a slot a slab), running pv_host_pieces.py."""
        hostfile = os.path.join(self.ws.dir, "hostfile")
        with open(hostfile, "w") as f:
            f.write("".join("%s slots=%d\n" % (h, len(k)) for h, k in sorted(self.slabs_of.items())))
        script = [a for a in self.launch if a.endswith("slabcast_render.py")][0]
        launch = [os.path.join(HERE, "pv_host_pieces.py") if a == script else a for a in self.launch]
        at = launch.index("--host")
        launch[at:at + 2] = ["--hostfile", hostfile]
        launch.insert(launch.index("pvbatch") + 1, "--symmetric")
        with self.t.xvfb() as display:
            out, _ = self.mpirun_on_hosts(launch, [self.dataset, self.step_file], display)
        print(out, flush=True)
        # mpirun may splice two ranks' lines together: match reports, not lines.
        ranks = re.findall(r"RANK (\d+)/\d+ HOST (\S+) (OK|FAIL)(.*?)(?=RANK \d+/|$)", out, re.M)
        self.assertEqual(sorted(int(r[0]) for r in ranks), list(range(DIMS[2] // DEPTH)), out)
        for rank, host, verdict, rest in ranks:
            self.assertEqual(verdict, "OK", "rank %s on %s:%s" % (rank, host, rest))
            self.assertIn(int(rank), self.slabs_of[host], "rank %s ran on %s" % (rank, host))
            own = "%s/%s.slab%s" % (SHM, NAME, rank)
            self.assertIn("zero-copy 1 in %s " % own, rest)
            mapped = dict(entry.split("@") for entry in rest.split(" maps ")[1].split(","))
            mine = {"%s/%s.slab%d" % (SHM, NAME, k) for k in self.slabs_of[host]}
            self.assertLessEqual(set(mapped), mine, "rank %s on %s maps another host's slab" % (rank, host))
            st = os.stat(self.bed.host_path(host, own))
            self.assertEqual(mapped[own], "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino),
                             "rank %s maps a file other than %s's own %s" % (rank, host, own))

    def test_composited_image_equals_the_one_host_render(self):
        t = self.t
        args = ["--frames", 2, "--size", SIZE, "--no-overlay"]
        with t.xvfb() as display:
            before = [wan_bytes(self.bed, i) for i in range(HOSTS)]
            out, _ = self.mpirun_on_hosts(self.launch, args + ["--save", os.path.join(self.ws.dir, "hosts_%d.png")],
                                          display)
            exchanged = min(wan_bytes(self.bed, i) - before[i] for i in range(HOSTS))
            self.assertEqual(re.findall(r"frame \d+: step (-?\d+)", out), ["0", "0"], out)
            one_host = self.one_host_descriptor()
            ranks = DIMS[2] // DEPTH
            out, _ = t.run(t.pvbatch_cmd(t.env_path("SLABCAST_RENDER"), [one_host] + args + [
                "--save", os.path.join(self.ws.dir, "one_host_%d.png")], ranks=ranks), env=t.paraview_env(display))
            self.assertEqual(re.findall(r"frame \d+: step (-?\d+)", out), ["0", "0"], out)
        width, height = (int(v) for v in SIZE.split("x"))
        print("render hosts exchanged %d bytes (the least of the hosts) over the WAN while rendering 2 frames"
              % exchanged, flush=True)
        self.assertGreater(exchanged, width * height * 4 // 2, "the ranks did not composite over the WAN")
        image, reference = (os.path.join(self.ws.dir, n) for n in ("hosts_1.png", "one_host_1.png"))
        lit = t.read_image_stats(t.pvpython("pv_image_stats.py", reference)[0])
        self.assertGreater(lit["lit"], 0.02, "the one-host render is blank: %s" % lit)
        s = t.read_image_stats(t.pvpython("pv_image_stats.py", image, reference)[0])
        print("across hosts vs one host: max diff %d/255, mean %.3f/255" % (s["maxdiff"], s["meandiff"]), flush=True)
        self.assertLessEqual(s["maxdiff"], MAX_DIFF, s)
        self.assertLessEqual(s["meandiff"], MEAN_DIFF, s)

    def one_host_descriptor(self):
        """Every host's slabs, copied into one /dev/shm directory of this
        machine, with a descriptor listing them all: the same step on one host."""
        os.makedirs(self.ws.shm, mode=0o750, exist_ok=True)
        listed = []
        for host, mine in self.slabs_of.items():
            with open(self.bed.host_path(host, "%s/%s.slabcast" % (SHM, NAME))) as f:
                descriptor = json.load(f)
            listed += descriptor["slabs"]
            for k in mine:
                shutil.copyfile(self.bed.host_path(host, "%s/%s.slab%d" % (SHM, NAME, k)),
                                os.path.join(self.ws.shm, "%s.slab%d" % (NAME, k)))
        descriptor["slabs"] = sorted(listed, key=lambda s: s["index"])
        path = os.path.join(self.ws.shm, NAME + ".slabcast")
        with open(path, "w") as f:
            json.dump(descriptor, f)
        return path

    def test_rank_on_the_wrong_host_gets_the_readers_error(self):
        """The plan's launch with its host list turned by one: every rank on
        the next slab's host, and on every host a rank names a slab that
        lives elsewhere, its planes and its file."""
        launch = list(self.launch)
        at = launch.index("--host") + 1
        hosts = launch[at].split(",")
        launch[at] = ",".join(hosts[1:] + hosts[:1])
        with self.t.xvfb() as display:
            out, err = self.mpirun_on_hosts(launch, ["--frames", 1, "--size", "200x200", "--no-overlay"], display,
                                            expect_rc=None)
        errors = re.findall(r"%s/%s\.slabcast: slab (\d+) \(planes (\d+)\.\.(\d+)\) is not in this host's shared "
                            r"memory, but plane (\d+) of the requested extent needs it; the descriptor lists slabs "
                            r"([\d,]+); expected file %s/%s\.slab(\d+)" % (SHM, NAME, SHM, NAME), out + err)
        hosts = set()
        for slab, first, last, plane, listed, file_slab in errors:
            k = int(slab)
            self.assertEqual((int(first), int(last), int(file_slab)), (k * DEPTH, (k + 1) * DEPTH - 1, k))
            self.assertTrue(k * DEPTH <= int(plane) < (k + 1) * DEPTH)
            self.assertNotIn(k, [int(v) for v in listed.split(",")], "slab %d is on that host" % k)
            hosts.add(listed)
        self.assertEqual(hosts, {",".join(map(str, mine)) for mine in self.slabs_of.values()},
                         "not every host's rank named a slab of another host:\n" + out + err)
        print("wrong hosts: %d errors, on every host a rank named a slab of another host" % len(errors), flush=True)

if __name__ == "__main__":
    unittest_main()
