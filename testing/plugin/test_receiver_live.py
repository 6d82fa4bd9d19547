"""ctest plugin_receiver_live: the real `slabcast receive` fills slabs from UDP
on loopback; ParaView reads them back exactly, zero-copy per slab, follows new
steps, pauses, and reports loss per slab."""
import plugin_testlib as t

DIMS, DEPTH = (32, 24, 16), 8


def body():
    with t.shm_dir("live") as d:
        # A step is published when whole or closed by the next step's packets,
        # never by the clock (pv_receiver_live.py, "Loss").
        with t.receiver(d, "live", DIMS, DEPTH, [0, 1], ["--step-timeout", "600000"]) as (ports, descriptor):
            out, _ = t.pvpython("pv_receiver_live.py", descriptor, ",".join(map(str, DIMS)), DEPTH,
                                ",".join("%d:%d" % kv for kv in sorted(ports.items())), timeout=300)
            t.log(out)
            t.check("PV_RECEIVER_LIVE_OK" in out, "pv_receiver_live.py did not finish")


t.main(body)
