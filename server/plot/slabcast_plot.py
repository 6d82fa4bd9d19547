#!/usr/bin/env python3
"""slabcast plot: the figures of a run from the roles' --stats-json files, like
the throughput plots of the SC11 demo and the data mover (Balman et al., 2012,
sections 4 and 5): Gbit/s over time, loss per step, and step latency.

    slabcast_plot.py STATS.jsonl... --out report.png

writes report-throughput.png, report-loss.png, report-latency.png,
report-transfer.png, report-repair.png (when the streams sent forward error
correction) and report-series.json, which holds exactly the series plotted:

- throughput: "aggregate", each receive status line's "gbps" against its time
  (seconds since the first line of all the files); with several receivers (one
  per file), "receivers" holds each one's and "aggregate" their sum per whole
  second. "per_stream": each stream's Gbit/s, from the receiver's status
  ("streams"[i]["gbps"]) where it has it, else from the shufflers' status
  lines (what they sent); "per_stream_source" says which.
- loss: each receive "step" event's "loss_percent" per stream, and "overall":
  per step, 100 * (expected - records) / expected summed over the streams;
  "dropped": steps a stream did not store (receive "step_dropped"), drawn
  apart and left out of "overall".
- latency (needs the controller's file): per step, seconds from the control
  "sync" event to the receive "step" event of the last stream that finished it
  (the hosts' clocks must agree, e.g. NTP); steps some stream never finished
  are in "incomplete".
- transfer (needs the receivers' step events with senders' step stamps): per
  step, milliseconds from its first packet's send (the earliest of its
  streams' stamps, the senders' clocks) to its publication on the last
  stream, and their p50/p95/p99 (nearest rank); drawn as a distribution.
  Steps some stream published without a stamp are in "unstamped".
- repair (when any receive "step" event has "repaired" > 0: the streams sent
  forward error correction): per step, summed over its streams, the datagrams
  rebuilt from parity ("repaired") and the values that still did not arrive
  ("holes", filled from an older step): what FEC saved and what it could not.

A dataset step that comes round again (control --loop) is a new pass: each
point carries "step" and "pass", and the figures are then drawn against the
step of the run (the order the steps came in) rather than the step number.
Python 3 and matplotlib only (Debian: python3-matplotlib).
"""

import argparse
import json
import math
import os
import sys

ROLES = ("receive", "shuffle", "control", "stage")
MANY_STREAMS = 8  # more than this: one legend entry for all the streams


class PlotError(Exception):
    pass


def number(obj, key, where):
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise PlotError("%s: %r is not a number (%r)" % (where, key, v))
    return v


def read_lines(paths):
    """Every line of every file as (where, dict), where = "FILE:LINE"."""
    lines = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise PlotError("%s: cannot read: %s" % (path, e.strerror if isinstance(e, OSError) else e))
        mine = 0
        for n, raw in enumerate(text, 1):
            if not raw.strip():
                continue
            where = "%s:%d" % (path, n)
            try:
                j = json.loads(raw)
            except ValueError as e:
                raise PlotError("%s: not JSON (%s)" % (where, e))
            if not isinstance(j, dict) or j.get("role") not in ROLES:
                raise PlotError("%s: not a stats line (a JSON object with \"role\": one of %s)" % (where, ", ".join(ROLES)))
            number(j, "time", where)
            lines.append((path, where, j))
            mine += 1
        if not mine:
            raise PlotError("%s: no stats lines (the JSON lines of a role's --stats-json)" % path)
    return lines


def sorted_by_time(lines):
    return sorted(lines, key=lambda l: l[2]["time"])


def throughput(lines, t0):
    receive = [l for l in lines if l[2]["role"] == "receive" and l[2].get("kind") == "status"]
    by_file = {}
    for path, where, j in sorted_by_time(receive):
        by_file.setdefault(path, []).append({"t": j["time"] - t0, "gbps": number(j, "gbps", where)})
    out = {"aggregate": [], "per_stream": {}, "per_stream_source": None}
    if len(by_file) == 1:
        out["aggregate"] = next(iter(by_file.values()))
    elif by_file:
        out["receivers"] = by_file
        total = {}
        for points in by_file.values():
            bins = {}
            for p in points:
                bins.setdefault(int(p["t"]), []).append(p["gbps"])
            for b, values in bins.items():
                total[b] = total.get(b, 0.0) + sum(values) / len(values)
        out["aggregate"] = [{"t": b, "gbps": total[b]} for b in sorted(total)]
    for path, where, j in sorted_by_time(receive):
        streams = j.get("streams", [])
        for s in streams if isinstance(streams, list) else []:
            if isinstance(s, dict) and "gbps" in s:
                k = str(int(number(s, "stream", where)))
                out["per_stream"].setdefault(k, []).append({"t": j["time"] - t0, "gbps": number(s, "gbps", where)})
    if out["per_stream"]:
        out["per_stream_source"] = "receive"
        return out
    for path, where, j in sorted_by_time(l for l in lines if l[2]["role"] == "shuffle" and l[2].get("kind") == "status"):
        k = str(int(number(j, "stream", where)))
        out["per_stream"].setdefault(k, []).append({"t": j["time"] - t0, "gbps": number(j, "gbps", where)})
    if out["per_stream"]:
        out["per_stream_source"] = "shuffle"
    return out


def loss(lines):
    """Per stream and overall loss of each (step, pass)."""
    per_stream, dropped, sums, first_seen, seen = {}, [], {}, {}, {}
    for path, where, j in sorted_by_time(l for l in lines if l[2]["role"] == "receive"):
        if j.get("kind") not in ("step", "step_dropped"):
            continue
        stream, step = int(number(j, "stream", where)), int(number(j, "step", where))
        n = seen[(stream, step)] = seen.get((stream, step), -1) + 1  # the how-manieth pass of this step
        key = (step, n)
        first_seen.setdefault(key, j["time"])
        if j["kind"] == "step_dropped":
            dropped.append({"stream": stream, "step": step, "pass": n})
            continue
        records, expected = number(j, "records", where), number(j, "expected", where)
        per_stream.setdefault(str(stream), []).append(
            {"step": step, "pass": n, "loss_percent": number(j, "loss_percent", where)})
        r, e = sums.get(key, (0, 0))
        sums[key] = (r + records, e + expected)
    overall = [{"step": s, "pass": n, "loss_percent": 100.0 * (e - r) / e if e else 0.0}
               for (s, n), (r, e) in sorted(sums.items(), key=lambda kv: first_seen[kv[0]])]
    x_of, x_label = step_axis(sorted(first_seen, key=first_seen.get))
    for p in overall + dropped + [p for pts in per_stream.values() for p in pts]:
        p["x"] = x_of[(p["step"], p["pass"])]
    return {"x_label": x_label, "per_stream": per_stream, "overall": overall, "dropped": dropped}


def repair(lines):
    """Per (step, pass): datagrams rebuilt from FEC parity and values left as
    holes, summed over the streams; None when no stream sent FEC."""
    sums, first_seen, seen = {}, {}, {}
    for path, where, j in sorted_by_time(l for l in lines if l[2]["role"] == "receive"):
        if j.get("kind") != "step":
            continue
        stream, step = int(number(j, "stream", where)), int(number(j, "step", where))
        n = seen[(stream, step)] = seen.get((stream, step), -1) + 1
        key = (step, n)
        first_seen.setdefault(key, j["time"])
        repaired, holes = sums.get(key, (0, 0))
        sums[key] = (repaired + j.get("repaired", 0), holes + number(j, "holes", where))
    if not any(repaired for repaired, _ in sums.values()):
        return None
    keys = sorted(sums, key=first_seen.get)
    x_of, x_label = step_axis(keys)
    return {"x_label": x_label, "steps": [{"step": s, "pass": n, "x": x_of[(s, n)], "repaired": sums[(s, n)][0],
                                           "holes": sums[(s, n)][1]} for s, n in keys]}


def latency(lines):
    """Per sync: seconds until the last stream finished its step, matched by
    time (each sync of a step until the next sync of the same step)."""
    syncs = [(j["time"], int(number(j, "step", where))) for _, where, j in sorted_by_time(lines)
             if j["role"] == "control" and j.get("kind") == "sync"]
    finished, streams = {}, set()
    for _, where, j in sorted_by_time(lines):
        if j["role"] == "receive" and j.get("kind") in ("step", "step_dropped"):
            streams.add(int(number(j, "stream", where)))
            if j["kind"] == "step":
                finished.setdefault(int(number(j, "step", where)), []).append((j["time"], int(j["stream"])))
    out = {"steps": [], "incomplete": []}
    passes = {}
    for i, (t, step) in enumerate(syncs):
        n = passes[step] = passes.get(step, -1) + 1
        until = next((u for u, s in syncs[i + 1:] if s == step), math.inf)
        first = {}
        for when, stream in finished.get(step, []):
            if t <= when < until:
                first.setdefault(stream, when)
        missing = sorted(streams - set(first))
        if not first or missing:
            out["incomplete"].append({"step": step, "pass": n, "missing_streams": missing or sorted(streams)})
            continue
        last = max(first, key=lambda k: first[k])
        out["steps"].append({"step": step, "pass": n, "seconds": first[last] - t, "last_stream": last})
    x_of, out["x_label"] = step_axis([(p["step"], p["pass"]) for p in out["steps"]])
    for p in out["steps"]:
        p["x"] = x_of[(p["step"], p["pass"])]
    return out


def transfer(lines):
    """Per (step, pass): sent->published in ms over every stream that
    reported it, from the step events' sent_ns and published_ns."""
    seen, steps, first_seen = {}, {}, {}
    for _, where, j in sorted_by_time(lines):
        if j["role"] != "receive" or j.get("kind") != "step" or "published_ns" not in j:
            continue
        stream, step = int(number(j, "stream", where)), int(number(j, "step", where))
        n = seen[(stream, step)] = seen.get((stream, step), -1) + 1
        key = (step, n)
        first_seen.setdefault(key, j["time"])
        sent, published = int(number(j, "sent_ns", where)), int(number(j, "published_ns", where))
        steps.setdefault(key, []).append((sent, published))
    out = {"steps": [], "unstamped": []}
    for key in sorted(steps, key=first_seen.get):
        pairs = steps[key]
        if any(sent <= 0 or published <= 0 for sent, published in pairs):
            out["unstamped"].append({"step": key[0], "pass": key[1]})
            continue
        ms = (max(p for _, p in pairs) - min(s for s, _ in pairs)) / 1e6
        out["steps"].append({"step": key[0], "pass": key[1], "ms": ms, "streams": len(pairs)})
    ordered = sorted(p["ms"] for p in out["steps"])
    for q in (50, 95, 99):
        # Nearest rank: the smallest value with at least q% of the steps at or below it.
        out["p%d" % q] = ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else None
    return out


def step_axis(keys):
    """x of each (step, pass), in the order they came: the step number, or the
    step of the run once a step comes round again."""
    if all(n == 0 for _, n in keys):
        return {k: k[0] for k in keys}, "step"
    return {k: i for i, k in enumerate(keys, 1)}, "step of the run (the dataset's steps come round again)"


def figures(series, prefix, plt):
    written = []

    def save(fig, ax, name, title, xlabel, ylabel):
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small", loc="best")
        fig.tight_layout()
        path = "%s-%s.png" % (prefix, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    def from_zero(ax, values, empty_top):
        """y from 0 to a little above the highest point (empty_top when all are 0)."""
        top = max(values, default=0)
        ax.set_ylim(0, top * 1.15 if top > 0 else empty_top)

    def per_stream_lines(ax, per_stream, xy, what):
        many = len(per_stream) > MANY_STREAMS
        for i, k in enumerate(sorted(per_stream, key=int)):
            x, y = xy(per_stream[k])
            label = ("each stream (%d)" % len(per_stream) if i == 0 else None) if many else "stream %s%s" % (k, what)
            ax.plot(x, y, marker=None if many else ".", linewidth=0.6 if many else 1.0, alpha=0.6 if many else 0.9,
                    label=label)

    tp = series["throughput"]
    if tp["aggregate"] or tp["per_stream"]:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        source = {"receive": "", "shuffle": " (sent)"}.get(tp["per_stream_source"], "")
        per_stream_lines(ax, tp["per_stream"], lambda pts: ([p["t"] for p in pts], [p["gbps"] for p in pts]), source)
        for name, pts in sorted(tp.get("receivers", {}).items()):
            ax.plot([p["t"] for p in pts], [p["gbps"] for p in pts], linestyle="--", label=os.path.basename(name))
        if tp["aggregate"]:
            ax.plot([p["t"] for p in tp["aggregate"]], [p["gbps"] for p in tp["aggregate"]], color="black",
                    linewidth=2, label="aggregate (received)")
        from_zero(ax, [p["gbps"] for pts in [tp["aggregate"]] + list(tp["per_stream"].values())
                       + list(tp.get("receivers", {}).values()) for p in pts], 1)
        ax.set_xlim(left=0)
        save(fig, ax, "throughput", "Throughput", "time since the first line (s)", "Gbit/s")
    else:
        print("slabcast plot: no throughput figure: no receive or shuffle status lines")

    ls = series["loss"]
    if ls["overall"] or ls["dropped"]:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        per_stream_lines(ax, ls["per_stream"], lambda pts: ([p["x"] for p in pts], [p["loss_percent"] for p in pts]), "")
        ax.plot([p["x"] for p in ls["overall"]], [p["loss_percent"] for p in ls["overall"]],
                color="black", linewidth=2, marker="o", label="overall")
        if ls["dropped"]:
            ax.plot([d["x"] for d in ls["dropped"]], [100] * len(ls["dropped"]), "rx", markersize=9,
                    label="dropped: not stored (every buffer held by readers)")
        from_zero(ax, [p["loss_percent"] for pts in [ls["overall"]] + list(ls["per_stream"].values()) for p in pts]
                  + [100] * len(ls["dropped"]), 1)
        save(fig, ax, "loss", "Loss per step", ls["x_label"], "loss (% of the step's records)")
    else:
        print("slabcast plot: no loss figure: no receive step events")

    lat = series["latency"]
    if lat is None:
        print("slabcast plot: no latency figure: no control file among the inputs (give the controller's --stats-json)")
    elif lat["steps"]:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        ax.plot([p["x"] for p in lat["steps"]], [p["seconds"] for p in lat["steps"]], marker="o",
                label="control's sync to the last stream's step received")
        from_zero(ax, [p["seconds"] for p in lat["steps"]], 1)
        save(fig, ax, "latency", "Step latency", lat["x_label"], "seconds")
    else:
        print("slabcast plot: no latency figure: no step the controller synced was finished by every stream")

    tr = series["transfer"]
    if tr["steps"]:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        values = [p["ms"] for p in tr["steps"]]
        ax.hist(values, bins=min(50, max(5, len(values) // 4)), color="tab:blue", alpha=0.8,
                label="steps (%d)" % len(values))
        for q, style in ((50, "-"), (95, "--"), (99, ":")):
            ax.axvline(tr["p%d" % q], color="black", linestyle=style, label="p%d %.1f ms" % (q, tr["p%d" % q]))
        save(fig, ax, "transfer", "Step latency, sent->published (senders' clocks against the receivers')",
             "ms from the step's first packet sent to its last stream's publication", "steps")
    else:
        print("slabcast plot: no transfer figure: no step reached every receiver with its senders' step stamps")

    rp = series["repair"]
    if rp:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        x = [p["x"] for p in rp["steps"]]
        ax.plot(x, [p["repaired"] for p in rp["steps"]], color="tab:green", marker=".",
                label="datagrams rebuilt from parity")
        from_zero(ax, [p["repaired"] for p in rp["steps"]], 1)
        holes = ax.twinx()
        holes.plot(x, [p["holes"] for p in rp["steps"]], color="tab:red", marker="x", linestyle="none",
                   label="values not rebuilt (holes)")
        from_zero(holes, [p["holes"] for p in rp["steps"]], 1)
        holes.set_ylabel("values left as holes")
        for handle, label in zip(*holes.get_legend_handles_labels()):
            ax.plot([], [], color=handle.get_color(), marker="x", linestyle="none", label=label)
        save(fig, ax, "repair", "Forward error correction per step", rp["x_label"], "datagrams rebuilt")
    return written


def main(argv):
    parser = argparse.ArgumentParser(prog="slabcast plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", metavar="STATS.jsonl", help="files the roles' --stats-json wrote")
    parser.add_argument("--out", required=True, help="report.png: writes report-throughput.png, ... and report-series.json")
    args = parser.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError("matplotlib is missing for %s: apt-get install python3-matplotlib" % sys.executable)
    prefix = args.out[:-4] if args.out.endswith(".png") else args.out
    lines = read_lines(args.files)
    t0 = min(j["time"] for _, _, j in lines)
    has_control = any(j["role"] == "control" for _, _, j in lines)
    series = {"t0": t0, "files": args.files, "throughput": throughput(lines, t0), "loss": loss(lines),
              "latency": latency(lines) if has_control else None, "transfer": transfer(lines), "repair": repair(lines)}
    if not (series["throughput"]["aggregate"] or series["throughput"]["per_stream"] or series["loss"]["overall"]):
        raise PlotError("%s: nothing to plot: no receive or shuffle lines" % ", ".join(args.files))
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    written = figures(series, prefix, plt)
    with open(prefix + "-series.json", "w") as f:
        json.dump(series, f)
        f.write("\n")
    for path in written + [prefix + "-series.json"]:
        print("slabcast plot: wrote " + path)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PlotError as e:
        print("slabcast plot: %s" % e, file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        print("slabcast plot: %s: %s" % (e.filename or "", e.strerror), file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
