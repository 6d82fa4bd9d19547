"""Samples which buffers each reader process pins, as the kernel records it:
the OFD read locks on the slab files' pin bytes, listed per open file in
/proc/PID/fdinfo (what `slabcast receive` asks about with F_OFD_GETLK before
it takes a buffer; docs/shared-memory.md, "Buffers and publication"). From
its own thread, every PERIOD seconds, until stopped.

For each reader it keeps how long it held 1, 2, 3... buffers of a slab at
once (summed over the samples: a sample's period to each), and the longest
stretch at its highest. The fds of the slab files are looked up once a
second (a reader re-opens a slab that was replaced); each sample then reads
only those fdinfo files."""

import os
import threading
import time

PIN_LOCK_OFFSET = 2048
MAX_BUFFERS = 16


def pinned_buffers(fdinfo_text):
    """The buffers one open file pins: its OFD read locks on the bytes
    PIN_LOCK_OFFSET + b."""
    buffers = set()
    for line in fdinfo_text.splitlines():
        parts = line.split()
        if len(parts) >= 9 and parts[0] == "lock:" and parts[2] == "OFDLCK" and parts[4] == "READ" \
                and parts[7].isdigit() and parts[8].isdigit():
            # The kernel shows neighbouring pins of one open file as one range.
            lo, hi = int(parts[7]) - PIN_LOCK_OFFSET, int(parts[8]) - PIN_LOCK_OFFSET
            if 0 <= lo <= hi < MAX_BUFFERS:
                buffers.update(range(lo, hi + 1))
    return buffers


class PinSampler:
    def __init__(self, readers, slab_paths, period=0.01):
        """readers: {name: pid}; slab_paths: the slab files to watch."""
        self.readers = dict(readers)
        self.slabs = set(os.path.realpath(p) for p in slab_paths)
        self.period = period
        self.held = {name: {} for name in readers}    # name -> {pins at once: seconds}
        self.longest = {name: (0, 0.0) for name in readers}  # name -> (pins, longest stretch at them, s)
        self.samples = 0
        self._run = {name: (0, 0.0) for name in readers}
        self._fds = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()

    def forget(self, name):
        """A reader that ended: sampled no more, its figures kept."""
        self.readers.pop(name, None)

    def _slab_fds(self, pid):
        fds = []
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in self.slabs:
                        fds.append(fd)
                except OSError:
                    continue
        except OSError:
            pass
        return fds

    def _pins_at_once(self, pid):
        """The most buffers of one slab this process pins now."""
        by_slab = {}
        for fd in self._fds.get(pid, []):
            try:
                with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                    text = f.read()
                slab = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            by_slab.setdefault(slab, set()).update(pinned_buffers(text))
        return max((len(b) for b in by_slab.values()), default=0)

    def _loop(self):
        looked = 0.0
        last = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now - looked > 1.0:
                self._fds = {pid: self._slab_fds(pid) for pid in self.readers.values()}
                looked = now
            dt, last = now - last, now
            for name, pid in list(self.readers.items()):
                pins = self._pins_at_once(pid)
                self.held[name][pins] = self.held[name].get(pins, 0.0) + dt
                run_pins, run_s = self._run[name]
                run_s = run_s + dt if pins == run_pins else dt
                self._run[name] = (pins, run_s)
                best_pins, best_s = self.longest[name]
                if pins > best_pins or (pins == best_pins and run_s > best_s):
                    self.longest[name] = (pins, run_s)
            self.samples += 1
            self._stop.wait(self.period)

    def report(self):
        """One line a reader: seconds at each count of pins, the most at once
        and its longest stretch."""
        lines = []
        for name in sorted(self.held):
            held = self.held[name]
            total = sum(held.values()) or 1.0
            spread = ", ".join("%d: %.1f%%" % (n, 100 * held[n] / total) for n in sorted(held))
            pins, longest = self.longest[name]
            lines.append("%s: buffers pinned at once (share of the time) %s; at most %d, for %.0f ms at a stretch"
                         % (name, spread, pins, 1000 * longest))
        return lines

    def most(self, name):
        return self.longest[name][0]
