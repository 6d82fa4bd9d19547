"""How soon a tool puts the machine to work: the whole machine's CPU use
(/proc/stat, every core, every process and the kernel's network stack),
sampled every 25 ms while the tool runs, and the time from its start until
a 100 ms window first reaches `FULL` of all cores. On a host where a
transfer ends CPU-bound, the time before that is the start's cost:
connections, handshakes, TCP's ramp across the path, whatever the tool
waits for before its bytes flow (mover_vs_peers.py prints it per tool)."""

import threading
import time

FULL = 0.95  # of all cores: "the machine is busy"
WINDOW_S = 0.1
EVERY_S = 0.025


def machine_ticks():
    """The whole machine's CPU time so far, in clock ticks: (all of it, idle
    and iowait), from /proc/stat's first line (mover_vs_peers.py counts its
    busy seconds from it too)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return sum(fields[:8]), fields[3] + fields[4]


class CpuSampler:
    """Samples the machine's busy share in the background from start() to stop()."""

    def __init__(self):
        self.samples = []  # (seconds since start, busy share over the sample's interval)
        self._stop = threading.Event()
        self._thread = None
        self.t0 = None

    def start(self):
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        last = machine_ticks()
        while not self._stop.wait(EVERY_S):
            now = machine_ticks()
            total, idle = now[0] - last[0], now[1] - last[1]
            if total > 0:
                self.samples.append((time.monotonic() - self.t0, 1 - idle / total))
            last = now

    def stop(self):
        self._stop.set()
        self._thread.join()

    def seconds_to_full(self):
        """From start() to the end of the first WINDOW_S in which the machine
        was at least FULL busy on average; None if it never was."""
        for i, (t, _) in enumerate(self.samples):
            window = [b for s, b in self.samples[i:] if s <= t + WINDOW_S - 1e-9]
            if len(window) >= round(WINDOW_S / EVERY_S) and sum(window) / len(window) >= FULL:
                return t + WINDOW_S - EVERY_S
        return None
