"""ctest plugin_gui_monitor (issue 18): the Slabcast Stream Monitor in the
ParaView GUI, under Xvfb, while the real roles stream.

The GUI opens a live stream (gui_open_live.py); the panel must open by itself
with the source. A test-only plugin (probe/) reads the panel's widgets by
object name and writes what they show to a file, and presses its buttons on
request. Checks: one table row per slab and an all-slabs row; the Gbit/s the
panel charted for each receiver second are the receiver's own, from its
--stats-json line of that second (within 5%); the chart gets points; the step
shown moves as steps arrive and stops while Pause is pressed; the chart saves
as a PNG that is not blank and the series as CSV, its steps' sent->published
times known (the lower line); ParaView logs no warning or
error. Saves gui_monitor.png (the screen) in the working directory.

With the argument "pvserver" (ctest plugin_gui_monitor_pvserver) the GUI is a
client of `mpirun -np 2 pvserver`, one rank per slab: the panel shows both
slabs' figures, gathered on the server side, and the steps shown move on in
whole steps (the panel calls the reader's Refresh on every rank)."""
import contextlib
import csv
import json
import os
import re
import subprocess
import sys
import time

import plugin_testlib as t
import xvfb_screen
from gui_probe import command, gui, read_state, wait_state

DIMS, DEPTH = (64, 64, 64), 32  # 2 slabs
RATE = "250M"  # per stream, paced: a steady rate to compare


def column(state, name):
    return state["columns"].index(name)


def shown_steps(state):
    c = column(state, "Shown")
    return [row[c] for row in state["rows"]]


def receiver_rates(stats_json):
    """{status time: aggregate Gbit/s} from the receiver's --stats-json lines."""
    rates = {}
    with open(stats_json) as f:
        for line in f:
            j = json.loads(line)
            if j.get("kind") == "status":
                rates[j["time"]] = j["gbps"]
    return rates


def check_series(series_csv, stats_json):
    """Each second the panel charted equals the receiver's own line of that second."""
    with open(series_csv) as f:
        rows = list(csv.DictReader(f))
    t.check(len(rows) >= 3, "the saved series holds %d sample(s)" % len(rows))
    rates = receiver_rates(stats_json)
    compared = 0
    for row in rows:
        at = int(row["time_ns"]) / 1e9
        when = min(rates, key=lambda s: abs(s - at))
        if abs(when - at) > 0.5:
            continue  # the receiver's line of that second was not written yet
        theirs, ours = rates[when], float(row["total_gbps"])
        t.check(abs(ours - theirs) <= 0.05 * max(theirs, 0.01),
                "second %.3f: the panel shows %.4f Gbit/s, the receiver reported %.4f" % (at, ours, theirs))
        compared += 1
    t.check(compared >= 3, "only %d of the panel's seconds matched a receiver line" % compared)
    busy = [float(r["total_gbps"]) for r in rows]
    t.check(max(busy) > 0.01, "the panel never showed the stream's rate: %s" % busy)
    # The chart's lower line: the shufflers stamp every step, so once a step
    # was published its sent->published is known, a time, not a guess.
    latency = [r["latency_ms"] for r in rows]
    known = [float(v) for v in latency if v]
    t.check(known and all(0 < v < 60_000 for v in known),
            "the series' latency_ms is not a sent->published time: %s" % latency)
    return compared, max(busy)


def check_quiet(log, proc):
    """ParaView still runs and logged no warning or error (an Output Messages popup)."""
    t.check(proc.poll() is None, "paraview exited")
    log.seek(0)
    noisy = [line for line in log.read().splitlines() if "WARN" in line.upper() or "ERR" in line]
    t.check(not noisy, "ParaView logged warnings or errors:\n" + "\n".join(noisy[:5]))


def body():
    remote = len(sys.argv) > 1 and sys.argv[1] == "pvserver"
    with t.shm_dir("monitor") as d, t.xvfb(fbdir=d) as display, contextlib.ExitStack() as stack:
        dataset = t.constant_dataset(os.path.join(d, "dataset"), DIMS, range(1, 9))
        stats = os.path.join(d, "receive.json")
        with t.streaming_pipeline(d, dataset, "monitor", DIMS, DEPTH, interval=0.5, rate=RATE,
                                  receive_args=["--stats-json", stats]) as descriptor:
            t.wait_published(d, None, range(2))  # the GUI's script shows the values: a step must be there
            server_url = (["--server-url=cs://localhost:%d" % stack.enter_context(t.pvserver(d, t.paraview_env(display)))]
                          if remote else [])
            with gui(d, display, descriptor, server_url) as (probe, log, proc):
                deadline = time.monotonic() + 180  # the GUI's start-up, and pvserver's, on a busy machine
                state = wait_state(probe, "its table", lambda s: s.get("visible") and len(s.get("rows", [])) == 3
                                   and s.get("chartPoints", 0) > 0, deadline)
                t.check(state["title"] == "Slabcast Stream Monitor", "title %r" % state["title"])
                t.check("Slabcast Stream Monitor" in state.get("viewMenu", []),
                        "View menu: %s" % state.get("viewMenu"))
                t.check([row[0] for row in state["rows"]] == ["0", "1", "all"],
                        "rows %s, want slabs 0, 1 and all" % [row[0] for row in state["rows"]])
                for name in ("Shown", "Receiving", "Gbit/s", "Loss %", "Age", "Latency", "Complete", "Packets",
                             "Rejected", "Stale", "Dups", "FEC", "Dropped", "Pins"):
                    t.check(name in state["columns"], "no column %r in %s" % (name, state["columns"]))
                # The receiver's 3 buffers, with what one view pins as a step begins.
                pins = [row[column(state, "Pins")] for row in state["rows"]]
                t.check(all(re.fullmatch(r"[0-3]/3 \([0-3]\)", p) for p in pins), "Pins column: %s" % pins)
                t.log("panel: %s" % state["status"])

                # Steps move on in the panel as they arrive.
                first = shown_steps(state)
                later = wait_state(probe, "a new step", lambda s: shown_steps(s) != first,
                                   time.monotonic() + t.WAIT_S)
                t.log("steps shown %s, then %s" % (first, shown_steps(later)))
                packets = column(later, "Packets")
                t.check(int(later["rows"][2][packets]) == sum(int(r[packets]) for r in later["rows"][:2]),
                        "the all-slabs row is not the sum of the slabs' packets")
                # The shufflers stamp every step: each slab's newest has its sent->published.
                latency = [row[column(later, "Latency")] for row in later["rows"]]
                t.check(all(re.fullmatch(r"\d+ ms", v) for v in latency), "Latency column: %s" % latency)
                if remote:
                    # Whole steps on two ranks: both slabs show one step, and it moves on.
                    steps = wait_state(probe, "two more steps", lambda s: len(set(shown_steps(s))) == 1
                                       and "-" not in shown_steps(s) and shown_steps(s) != shown_steps(later),
                                       time.monotonic() + t.WAIT_S)
                    t.log("ok: 2-rank pvserver: steps shown %s, then %s" % (shown_steps(later), shown_steps(steps)))
                    check_quiet(log, proc)
                    return

                # Pause holds the step shown; the figures keep coming.
                t.check(command(probe, "click slabcastPause", time.monotonic() + t.WAIT_S)[0],
                        "Pause could not be pressed")
                pressed = wait_state(probe, "Pause pressed", lambda s: s.get("paused"), time.monotonic() + t.WAIT_S)
                # A step published just before the press may still be shown:
                # held is what the panel shows two of its refreshes later (not
                # after a fixed second: a busy GUI refreshes late).
                held_state = wait_state(probe, "two refreshes after Pause",
                                        lambda s: s["updates"] >= pressed["updates"] + 2, time.monotonic() + t.WAIT_S)
                held, updates = shown_steps(held_state), held_state["updates"]
                # Paused for 3 s and at least 4 more refreshes (steps come every 0.5 s).
                quiet_until = time.monotonic() + 3.0
                after = wait_state(probe, "4 refreshes while paused", lambda s: s["updates"] >= updates + 4
                                   and time.monotonic() >= quiet_until, time.monotonic() + t.WAIT_S)
                t.check(shown_steps(after) == held, "paused, yet the step shown moved: %s -> %s" % (
                    held, shown_steps(after)))
                t.check(command(probe, "click slabcastPause", time.monotonic() + t.WAIT_S)[0],
                        "Resume could not be pressed")
                resumed = wait_state(probe, "the stream again",
                                     lambda s: not s.get("paused") and shown_steps(s) != held, time.monotonic() + t.WAIT_S)

                # The chart and its series, saved; the series is the receiver's,
                # two more seconds of it charted after the resume.
                wait_state(probe, "two more seconds charted", lambda s: s["chartPoints"] >= min(
                    resumed["chartPoints"] + 2, 60), time.monotonic() + t.WAIT_S)
                chart, series = os.path.join(d, "chart.png"), os.path.join(d, "series.csv")
                t.check(command(probe, "save_chart " + chart, time.monotonic() + t.WAIT_S)[0],
                        "the chart was not saved")
                t.check(command(probe, "save_series " + series, time.monotonic() + t.WAIT_S)[0],
                        "the series was not saved")
                width, height, _ = png = xvfb_screen.read_png(chart)
                colours = xvfb_screen.distinct_colours(png)
                t.check(colours > 8, "the saved chart (%dx%d) is blank: %d colour(s)" % (width, height, colours))
                compared, peak = check_series(series, stats)
                t.log("ok: chart %dx%d, %d colours; %d seconds of the series equal the receiver's (peak %.3f Gbit/s)"
                      % (width, height, colours, compared, peak))

                xvfb_screen.write_png("gui_monitor.png", xvfb_screen.snapshot(d))
                check_quiet(log, proc)


t.main(body)
