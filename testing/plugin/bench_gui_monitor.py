"""Benchmark (no time assertion): the ParaView GUI's frame time with the
Slabcast Stream Monitor shown against hidden, in one run, while the real roles
stream a 128^3 volume in 4 slabs; and the panel's own refresh rate and cost.

The test-only probe plugin renders the active view back to back for a few
seconds (pqView::forceRender, letting every other event run between frames,
the panel's timer included), alternately with the panel shown and hidden.
The panel floats beside the main window while shown, so the render view
keeps its size either way (docked, it would narrow the view and make each
frame cheaper).
Prints a line per run, the ratios, and BENCH_DONE.

    ctest -R plugin_bench_gui_monitor -V"""
import os
import re
import time

import plugin_testlib as t
from gui_probe import command, gui, wait_state

DIMS, DEPTH = (128, 128, 128), 32
SECONDS, ROUNDS = 8, 2
FIELDS = re.compile(r"render_bench frames (\d+) seconds ([\d.]+) fps ([\d.]+) mean_ms ([\d.]+) median_ms ([\d.]+) "
                    r"panel_updates (\d+) panel_busy_ms ([\d.]+) panel_visible (\d)")


def bench(probe):
    ok, lines = command(probe, "render_bench %d" % SECONDS, time.monotonic() + SECONDS + 60)
    t.check(ok, "render_bench failed: %s" % lines)
    m = FIELDS.search(lines)
    t.check(m is not None, "no figures from render_bench: %s" % lines)
    frames, seconds, fps, mean, median, updates, busy, visible = m.groups()
    return {"frames": int(frames), "seconds": float(seconds), "fps": float(fps), "mean": float(mean),
            "median": float(median), "updates": int(updates), "busy": float(busy), "visible": visible == "1"}


def body():
    with t.shm_dir("monbench") as d, t.xvfb(fbdir=d) as display:
        dataset = t.constant_dataset(os.path.join(d, "dataset"), DIMS, range(1, 9))
        with t.streaming_pipeline(d, dataset, "monbench", DIMS, DEPTH, interval=0.5, rate="250M") as descriptor:
            with gui(d, display, descriptor) as (probe, log, proc):
                wait_state(probe, "its table", lambda s: s.get("visible") and len(s.get("rows", [])) == 5,
                           time.monotonic() + 120)
                runs = {True: [], False: []}
                for _ in range(ROUNDS):
                    for shown in (True, False):
                        t.check(command(probe, "float" if shown else "hide", time.monotonic() + 10)[0],
                                "could not %s the panel" % ("float" if shown else "hide"))
                        time.sleep(1.0)
                        r = bench(probe)
                        t.check(r["visible"] == shown, "the panel's visibility did not follow")
                        runs[shown].append(r)
                        print("panel %-6s %4d frames in %.1f s: %.2f fps, mean %.1f ms, median %.1f ms; "
                              "panel: %d updates (%.2f/s), %.1f ms busy (%.2f ms each)" % (
                                  "shown" if shown else "hidden", r["frames"], r["seconds"], r["fps"], r["mean"],
                                  r["median"], r["updates"], r["updates"] / r["seconds"], r["busy"],
                                  r["busy"] / r["updates"] if r["updates"] else 0.0), flush=True)

                def mean(key, shown):
                    return sum(r[key] for r in runs[shown]) / len(runs[shown])

                print("frame time, panel shown / hidden: mean %.3f, median %.3f; frames per second %.3f" % (
                    mean("mean", True) / mean("mean", False), mean("median", True) / mean("median", False),
                    mean("fps", True) / mean("fps", False)))
                rate = sum(r["updates"] for r in runs[True]) / sum(r["seconds"] for r in runs[True])
                each = sum(r["busy"] for r in runs[True]) / max(1, sum(r["updates"] for r in runs[True]))
                print("panel refresh while rendering: %.2f updates/s, %.2f ms of GUI time each" % (rate, each))
                print("BENCH_DONE", flush=True)


t.main(body)
