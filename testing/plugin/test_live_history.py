"""ctest plugin_live_history: the live reader's History property. The real
roles stream a volume whose step s holds the value s everywhere, stepping
every 0.3 s round 30 steps; pvpython keeps 4 steps (the receiver has 6
buffers), steps back 3, reads them exactly, and returns to the latest
(pv_live_history.py). Then with 3 buffers it keeps 1 step and says why."""
import os

import plugin_testlib as t

DIMS, DEPTH = (32, 32, 64), 16


def body():
    with t.shm_dir("history") as d:
        dataset = t.constant_dataset(os.path.join(d, "dataset"), DIMS, range(1, 31))
        with t.streaming_pipeline(d, dataset, "history", DIMS, DEPTH, interval=0.3,
                                  receive_args=("--buffers", "6")) as descriptor:
            t.wait_published(d, None, range(4))
            out, _ = t.pvpython("pv_live_history.py", descriptor, timeout=240)
            t.log(out)
            t.check(out.count("PASS") == 3, "pv_live_history.py did not pass its three checks:\n" + out)
        with t.streaming_pipeline(d, dataset, "capped", DIMS, DEPTH, interval=0.3,
                                  receive_args=("--buffers", "3")) as descriptor:
            t.wait_published(d, None, range(4), name=None)
            out, err = t.pvpython("pv_live_history.py", descriptor, "capped", timeout=240)
            t.log(out)
            t.check("PASS capped" in out, "pv_live_history.py capped:\n" + out + err)
            t.check("History 4 needs receive --buffers 6 (the receiver has 3): it keeps 1 of them" in err,
                    "no warning naming the buffers History needs:\n" + err)


t.main(body)
