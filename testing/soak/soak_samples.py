"""What a soak samples of the processes it runs and of the memory they use,
and how it judges that a figure stayed flat: written once for both soaks
(test_soak.py on loopback, test_soak_booth.py across the testbed's WAN)."""

import os


def memory(pid):
    """(resident, private anonymous) bytes. Resident includes the shared memory
    a role maps (a staged step, the slabs) and comes and goes with it; growth
    of the anonymous part is what a leak looks like."""
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                fields[key] = int(value.split()[0]) * 1024
    return fields.get("VmRSS", 0), fields.get("RssAnon", 0)


def threads(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def files_by_inode(path):
    """{inode: bytes on the file system} of the files under `path` that hold
    data: a file with two names (a staged step is a second name for its
    slot) counts once, and empty ones (done markers) not at all."""
    files = {}
    for root, _, names in os.walk(path):
        for name in names:
            try:
                st = os.stat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            if st.st_size > 0:
                files[st.st_ino] = st.st_blocks * 512
    return files


def tree_bytes(path):
    """Bytes the files under `path` hold on their file system."""
    return sum(files_by_inode(path).values())


def used_bytes(mount):
    """What a file system (/dev/shm) holds in all."""
    st = os.statvfs(mount)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def slope_per_10_minutes(points):
    """Least-squares slope of (seconds, value) points, per 600 s; 0 for fewer
    than two."""
    if len(points) < 2:
        return 0.0
    n = float(len(points))
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    return 600.0 * sum((t - mt) * (v - mv) for t, v in points) / var


def grew(first, last, floor_bytes):
    """Whether a memory figure grew from its first minute to its last by more
    than `floor_bytes` or 5%: each minute by its lowest sample (a renderer's
    heap swings by tens of MiB from frame to frame; a leak lifts the floor)."""
    low0, low1 = min(first), min(last)
    return low1 - low0 > max(floor_bytes, low0 // 20)
