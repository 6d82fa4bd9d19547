"""`slabcast plan`: a deployment file of two sender "hosts" and two receiver
"hosts" (all on loopback) becomes commands; run exactly as printed, they move
the volume bit for bit. Bad files name the problem."""

import json
import re
import os
import shlex
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from slabcast_testlib import (SLABCAST, Workspace, free_udp_ports, read_slab_header, read_slab_values, source_planes,
                              wait_for, unittest_main)

DIMS = (32, 32, 32)
DEPTH = 8


def free_port_block():
    """A base port whose data (+0..3), sync (+20..23) and stager (+40..42)
    ports are free now. The roles bind them with SO_REUSEADDR, so a port another
    process holds would be shared without an error, its packets going astray."""
    for _ in range(100):
        base = free_udp_ports(1)[0] // 100 * 100 % 50000 + 10000
        socks = []
        try:
            for port in [base + i for i in range(4)] + [base + 20 + i for i in range(4)] + [base + 40, base + 41, base + 42]:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError("no block of free UDP ports found")


class PlanTest(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace("plan")
        self.dataset = self.ws.generate("ds", DIMS, 2)
        base = free_port_block()
        self.config = {
            "name": "planned", "dataset": self.dataset, "dims": list(DIMS), "slab_depth": DEPTH, "rate": "200M",
            "ports": {"data": base, "sync": base + 20, "stager": base + 40},
            "controller": {"host": "ctl", "address": "127.0.0.1"},
            "key_file": os.path.join(self.ws.dir, "sync.key"),
            "senders": [
                {"host": "s1", "address": "127.0.0.1", "streams": "0-1", "staging": self.ws.staging + "1",
                 "budget": "1M", "stager_port": base + 41},
                {"host": "s2", "address": "127.0.0.1", "streams": "2-3", "staging": self.ws.staging + "2",
                 "budget": "1M", "stager_port": base + 42},
            ],
            "receivers": [
                {"host": "r1", "address": "127.0.0.1", "streams": "0,2", "shm_dir": self.ws.shm},
                {"host": "r2", "address": "127.0.0.1", "streams": "1,3", "shm_dir": self.ws.shm + "-r2"},
            ],
        }

    def tearDown(self):
        self.ws.close()
        import shutil
        for extra in (self.ws.shm + "-r2", self.ws.staging + "1", self.ws.staging + "2"):
            shutil.rmtree(extra, ignore_errors=True)

    def plan(self, config, *args):
        path = os.path.join(self.ws.dir, "deploy.json")
        with open(path, "w") as f:
            json.dump(config, f)
        return self.ws.run(["plan", path] + list(args))

    def test_printed_commands_move_the_volume(self):
        """The printed commands, run as printed (authenticated syncs, receivers
        taking data from their senders only, run packets through lz4), move a
        step bit for bit."""
        self.config.update(wire="run", codec="lz4")
        self.assertEqual(self.ws.run(["keygen", self.config["key_file"]]).returncode, 0)
        with open(os.path.join(self.dataset, "dataset.json")) as f:
            step_file = json.load(f)["steps"][1]["file"]
        senders = []
        for host in ("r1", "r2", "s1", "s2"):
            r = self.plan(self.config, "--host", host)
            self.assertEqual(r.returncode, 0, r.stderr)
            for i, line in enumerate(r.stdout.splitlines()):
                argv = shlex.split(line, comments=True)  # a receiver's memory note is a comment
                if not argv:
                    continue
                self.assertEqual(argv[0], "slabcast")
                if argv[1] == "shuffle":  # run is the default wire format: only the codec is named
                    self.assertNotIn("--wire", argv)
                    self.assertEqual(argv[argv.index("--codec") + 1], "lz4")
                role = self.ws.start("%s-%d" % (host, i), argv[1:])
                if argv[1] in ("stage", "shuffle"):
                    senders.append(role)
            if host.startswith("r"):
                shm = self.config["receivers"][int(host[1]) - 1]["shm_dir"]
                wait_for(lambda: os.path.exists(os.path.join(shm, "planned.slabcast")), what=host)
        # The senders are listening for syncs, and each stager has step 1 in
        # place (its first window): a shuffler waits only 2 s for a step not
        # yet staged, which a loaded machine could take to start a stager.
        for role in senders:
            role.wait_for_text("sync on")
        for sender in self.config["senders"]:
            staged = os.path.join(sender["staging"], step_file)
            wait_for(lambda: os.path.exists(staged), what="step 1 staged in " + sender["staging"])
        control = shlex.split(self.plan(self.config, "--host", "ctl").stdout.strip())
        r = self.ws.run(control[1:] + ["--steps", "1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("no finish after", r.stdout + r.stderr)
        for k in range(4):
            shm = self.ws.shm if k in (0, 2) else self.ws.shm + "-r2"
            slab = os.path.join(shm, "planned.slab%d" % k)
            wait_for(lambda: read_slab_header(slab)["last_step"] == 1, what="slab %d" % k)
            h = read_slab_header(slab)
            self.assertEqual(read_slab_values(slab),
                             source_planes(self.dataset, step_file, DIMS, h["stored_z_begin"], h["z_end"]))

    def test_whole_plan_lists_every_host_in_start_order(self):
        r = self.plan(self.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        sections = [re.match(r"# (\w+): (receiver|sender|controller)", l) for l in r.stdout.splitlines()]
        self.assertEqual([m.group(1) for m in sections if m], ["r1", "r2", "s1", "s2", "ctl"])
        # What each receiver will hold in shared memory: 2 slabs of 64x64x64 / 4 (16 planes + a ghost), 3 buffers.
        self.assertIn("# 2 slab(s) of planned x 3 buffers: ", r.stdout)
        c = json.loads(json.dumps(self.config))
        c["receivers"][0]["buffers"] = 2
        r2 = self.plan(c, "--host", "r1")
        self.assertIn("# 2 slab(s) of planned x 2 buffers", r2.stdout)
        self.assertIn("--buffers 2", r2.stdout)
        c["receivers"][0]["buffers"] = 40
        self.assertIn('"buffers" must be 2..16', self.plan(c).stderr)
        # Its readers size it: two live views and a recorder pin 5 at once, one more to write into.
        del c["receivers"][0]["buffers"]
        c["receivers"][0]["readers"] = "view,view,record"
        r3 = self.plan(c, "--host", "r1")
        self.assertIn("# 2 slab(s) of planned x 6 buffers", r3.stdout)
        self.assertIn("--buffers 6", r3.stdout)
        c["receivers"][0]["buffers"] = 4
        self.assertIn('"readers" view,view,record need 6 buffers a slab, "buffers" gives 4', self.plan(c).stderr)
        del c["receivers"][0]["buffers"]
        c["receivers"][0]["readers"] = "view,wall"
        self.assertIn("'wall' is not one of view, record, history:N", self.plan(c).stderr)
        lines = [l for l in r.stdout.splitlines() if l.startswith("slabcast")]
        for line in lines:
            argv = shlex.split(line)
            if argv[1] == "receive":
                self.assertEqual(argv[argv.index("--allow") + 1], "127.0.0.1")
            else:
                self.assertEqual(argv[argv.index("--key-file") + 1], self.config["key_file"])
            if argv[1] in ("stage", "shuffle"):
                self.assertEqual(argv[argv.index("--controller") + 1], "127.0.0.1")

    def test_bad_deployments_name_the_problem(self):
        c = json.loads(json.dumps(self.config))
        c["receivers"][1]["streams"] = "1"
        r = self.plan(c)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no receiver for stream 3", r.stderr)
        c = json.loads(json.dumps(self.config))
        c["senders"][1]["streams"] = "1-3"
        self.assertIn("stream 1 is on senders s1 and s2", self.plan(c).stderr)
        c = json.loads(json.dumps(self.config))
        del c["senders"][0]["address"]
        self.assertIn("deploy.json: senders s1: missing field 'address'", self.plan(c).stderr)
        self.assertIn("no host named 'nobody'", self.plan(self.config, "--host", "nobody").stderr)
        c = dict(self.config, slab_depth=1.6e31)  # once an undefined float-to-int cast
        self.assertIn("deploy.json: field 'slab_depth' must be a whole number", self.plan(c).stderr)
        c = dict(self.config, slab_depth=2**64 - 1)  # once read as -1
        self.assertIn("deploy.json: field 'slab_depth' is out of range", self.plan(c).stderr)
        c = dict(self.config, dims=[32, 32.5, 32])
        self.assertIn("deploy.json: field 'dims' must be a whole number", self.plan(c).stderr)
        c = json.loads(json.dumps(self.config))
        c["controller"]["interval"] = True  # a number, not true taken as 1
        self.assertIn("deploy.json: controller: field 'interval' has the wrong type", self.plan(c).stderr)
        c = json.loads(json.dumps(self.config))
        c["senders"][0]["staging"] = "/dev/shm/x; rm -rf ~"  # would be a second command in the printed line
        self.assertIn("senders s1: \"staging\" must be a non-empty word", self.plan(c).stderr)
        c = json.loads(json.dumps(self.config))
        c["receivers"][0]["cpus"] = 3
        self.assertIn("deploy.json: receivers r1: field 'cpus' has the wrong type", self.plan(c).stderr)
        self.assertIn('deploy.json: "wire" must be quad or run', self.plan(dict(self.config, wire="udp")).stderr)
        self.assertIn('deploy.json: "codec" zfp:8 needs "wire": "run"', self.plan(dict(self.config, wire="quad", codec="zfp:8")).stderr)
        self.assertIn('deploy.json: "codec": codec \'zfp:99\': zfp\'s rate', self.plan(dict(self.config, wire="run",
                                                                                           codec="zfp:99")).stderr)
        self.assertIn("deploy.json: order 'random': expected scan, morton or progressive",
                      self.plan(dict(self.config, order="random")).stderr)
        self.assertIn("deploy.json: fill 'zero': expected previous or nearest", self.plan(dict(self.config, fill="zero")).stderr)
        self.assertIn("deploy.json: field 'wan' has the wrong type", self.plan(dict(self.config, wan="yes")).stderr)
        r = self.plan(self.config)
        for option in ("--wire", "--codec", "--order", "--fill"):
            self.assertNotIn(option, r.stdout)  # the defaults print nothing

    def test_hosts_that_cannot_fit_here_are_refused(self):
        """A host's slabs and staged steps are planned (printed as notes); on
        loopback, or asked for with --host, a host whose tmpfs needs pass this
        machine's /dev/shm and memory is refused naming the figures, and a
        remote host's plan is only printed."""
        r = self.plan(self.config)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"# 2 slab\(s\) of planned x 3 buffers: [0-9.]+ [KM]iB in " + re.escape(self.ws.shm))
        self.assertRegex(r.stdout, r"# up to 8 staged step\(s\) of planned \(budget 1M\): 1.0 MiB in "
                         + re.escape(self.ws.staging + "1"))
        huge = dict(self.config, dims=[4096, 4096, 4096], slab_depth=1024)
        r = self.plan(huge)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"r1, r2, s1, s2 cannot run on this machine: /dev/shm\S* has [0-9.]+ [KMGT]iB free, "
                                   r"and 2 slab\(s\) of planned x 3 buffers .* need [0-9.]+ TiB")
        self.assertIn("memory available", r.stderr)
        # Elsewhere, the same volume is planned; on the host itself, refused.
        remote = json.loads(json.dumps(huge))
        for i, h in enumerate(remote["receivers"] + remote["senders"]):
            h["address"] = "10.9.0.%d" % (i + 1)
        remote["controller"]["address"] = "10.9.0.9"
        r = self.plan(remote)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.plan(remote, "--host", "r2")
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"r2 cannot run on this machine: /dev/shm\S* has .* free, and 2 slab\(s\) of planned")

    def test_render_launch_puts_rank_k_on_the_host_of_slab_k(self):
        """After the daemons the whole plan prints one mpirun line: a pvbatch
        rank a slab, the hosts in stream order, so that each rank maps its
        own host's slab (e2e_multihost runs it across namespace hosts); where
        that cannot be, it says why. --host prints a host's daemons only."""
        r = self.plan(self.config)  # r1 takes 0,2 and r2 1,3
        self.assertIn("# no such launch: receiver r1 takes streams 0,2, not one run of consecutive streams", r.stdout)
        self.assertNotIn("mpirun", r.stdout)
        c = json.loads(json.dumps(self.config))
        c["receivers"][0]["streams"], c["receivers"][1]["streams"] = "2-3", "0-1"
        self.assertIn("# no such launch: receivers r2 and r1 keep their slabs in different shm_dirs", self.plan(c).stdout)
        c["receivers"][1]["shm_dir"] = self.ws.shm
        r = self.plan(c)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertTrue(lines[-2].startswith("# render (start after the receivers)"), lines[-2])
        argv = shlex.split(lines[-1])
        self.assertEqual(argv[:6], ["mpirun", "--host", "r2:2,r1:2", "-np", "4", "--map-by"])
        self.assertEqual(os.path.basename(argv[-2]), "slabcast_render.py")
        self.assertEqual(argv[-1], os.path.join(self.ws.shm, "planned.slabcast"))
        self.assertTrue([a for a in argv if a.startswith("PV_PLUGIN_PATH=") and a.endswith("/plugins/Slabcast")], argv)
        for host in ("r1", "r2", "s1", "ctl"):
            self.assertNotIn("mpirun", self.plan(c, "--host", host).stdout)

    def test_a_wan_volume_is_sent_coarse_first_and_filled_from_the_step_itself(self):
        lines = [shlex.split(l) for l in self.plan(dict(self.config, wan=True)).stdout.splitlines()
                 if l.startswith("slabcast")]
        for argv in lines:
            if argv[1] == "shuffle":
                self.assertEqual(argv[argv.index("--order") + 1], "progressive")
            if argv[1] == "receive":
                self.assertEqual(argv[argv.index("--fill") + 1], "nearest")
        # Named ones win over what "wan" implies; the nearest fill follows the progressive order.
        r = self.plan(dict(self.config, wan=True, order="scan"))
        self.assertNotIn("--order", r.stdout)
        self.assertNotIn("--fill", r.stdout)
        r = self.plan(dict(self.config, order="progressive", fill="previous"))
        self.assertIn("--order progressive", r.stdout)
        self.assertNotIn("--fill", r.stdout)
        c = dict(self.config, ports={"data": 65534})
        self.assertIn("port \"data\" 65534 leaves no room for 4 streams", self.plan(c).stderr)


if __name__ == "__main__":
    unittest_main()
