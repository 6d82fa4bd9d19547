"""pvpython: the reader on slabs filled by the real receiver over loopback.
Values equal what was sent, new steps show up through NeedsUpdate (the live
path scripts use), Pause holds the reader, and the field data carries the step
and each slab's loss.

    pvpython pv_receiver_live.py DESCRIPTOR NX,NY,NZ DEPTH SLAB:PORT,SLAB:PORT
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pv_checks import address_of, check, expected_index_values, mapping_of_address, slab_path  # noqa: E402
import quad_sender  # noqa: E402

from paraview import servermanager  # noqa: E402
from paraview.simple import Delete, OpenDataFile  # noqa: E402

descriptor = sys.argv[1]
dims = tuple(int(v) for v in sys.argv[2].split(","))
depth = int(sys.argv[3])
ports = {int(k): int(p) for k, p in (item.split(":") for item in sys.argv[4].split(","))}
whole = (0, dims[0] - 1, 0, dims[1] - 1, 0, dims[2] - 1)


def field(image, name):
    """A field data array's values; [] before anything was published (an empty output)."""
    a = image.GetFieldData().GetArray(name)
    return [a.GetTuple1(i) for i in range(a.GetNumberOfTuples())] if a is not None else []


def refresh(reader):
    """What a pvpython/pvbatch loop does: ask, mark modified, update."""
    reader.UpdatePropertyInformation()
    if reader.GetPropertyValue("NeedsUpdate"):
        reader.MarkModified(reader)
    reader.UpdatePipeline()
    return servermanager.Fetch(reader)


def wait_for(reader, ready, what, also=None, timeout=60):
    """Polls until ready(image); a generous deadline only so a broken build
    cannot hang the test, not a timing requirement."""
    deadline = time.monotonic() + timeout
    while True:
        if also:
            also()
        image = refresh(reader)
        if ready(image):
            return image
        check(time.monotonic() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


def wait_until_announced(reader, what, timeout=60):
    """Polls NeedsUpdate, as a live loop does, until it turns on by itself."""
    deadline = time.monotonic() + timeout
    while True:
        reader.UpdatePropertyInformation()
        if reader.GetPropertyValue("NeedsUpdate") == 1:
            return
        check(time.monotonic() < deadline, "NeedsUpdate never turned on for " + what)
        time.sleep(0.05)


def last_steps_are(step):
    return lambda image: field(image, "SlabStep") == [float(step)] * len(ports)


def check_values(image, step, what):
    got = memoryview(image.GetPointData().GetArray("density")).tolist()
    want = expected_index_values(dims, image.GetExtent(), step)
    bad = sum(1 for g, w in zip(got, want) if g != w)
    check(len(got) == len(want) and bad == 0, "%s: %d of %d values differ from step %d as sent" % (
        what, bad, len(want), step))


reader = OpenDataFile(descriptor)
check(reader.GetXMLName() == "SlabcastReader", "OpenDataFile did not pick the slabcast reader")

# Step 0, waited for with a reader of its own: a slab's publication that
# lands between a poll and its update is taken by the pipeline on its own
# and rightly announced once more (the last check below), so "nothing new
# announced" holds only for a first update after every slab has published,
# whatever the order the receiver's threads run in on a busy machine.
quad_sender.send(ports, dims, depth, 0)
first = OpenDataFile(descriptor)
wait_for(first, last_steps_are(0), "step 0 to arrive")
Delete(first)
image = refresh(reader)
check(last_steps_are(0)(image), "SlabStep %s after every slab published step 0" % field(image, "SlabStep"))
check(image.GetExtent() == whole, "extent %s" % (image.GetExtent(),))
check_values(image, 0, "step 0, whole volume")
check(field(image, "Step") == [0.0], "Step field %s" % field(image, "Step"))
check(field(image, "SlabLossPercent") == [0.0] * len(ports), "loss %s" % field(image, "SlabLossPercent"))
reader.UpdatePropertyInformation()
check(reader.GetPropertyValue("NeedsUpdate") == 0, "NeedsUpdate set with nothing new")
print("ok: step 0 from the receiver reads back exactly; no update pending", flush=True)


def check_range(image, step, what):
    """The values' range as VTK reports it, from the receivers' measure of each
    slab's planes (owned as placed, the ghost plane handed over measured at
    publication): the reader read no value for it."""
    got = image.GetPointData().GetArray("density").GetRange()
    values = expected_index_values(dims, image.GetExtent(), step)
    check(got == (min(values), max(values)), "%s: range %s, values span %s" % (what, got, (min(values), max(values))))
    check(field(image, "RangeValuesRead") == [0.0], "%s: the reader read %s values for the range" % (
        what, field(image, "RangeValuesRead")))


check_range(image, 0, "step 0, whole volume")
print("ok: the whole volume's range is the receivers' measure, exact", flush=True)

# One rank per slab: each piece is the receiver's own memory.
algo = reader.GetClientSideObject()
for k in sorted(ports):
    algo.UpdatePiece(k, len(ports), 0)
    piece = algo.GetOutputDataObject(0)
    check_values(piece, 0, "piece %d" % k)
    check(field(piece, "ZeroCopy") == [1.0], "piece %d was copied" % k)
    region = mapping_of_address(address_of(piece.GetPointData().GetArray("density")))
    check(region is not None and region[2] == slab_path(descriptor, k), "piece %d not in the receiver's slab" % k)
    check_range(piece, 0, "piece %d" % k)
print("ok: pieces point into the receiver's slabs (zero-copy), ghost planes seamless", flush=True)

# Step 1: NeedsUpdate turns on by itself.
quad_sender.send(ports, dims, depth, 1)
wait_until_announced(reader, "step 1")
image = wait_for(reader, last_steps_are(1), "step 1 to arrive")
check_values(image, 1, "step 1")
check(field(image, "Step") == [1.0], "Step field %s after step 1" % field(image, "Step"))
print("ok: step 1 raised NeedsUpdate and reads back exactly", flush=True)

# Pause: a paused reader neither asks for nor takes the new step; an
# unpaused second reader on the same slabs does.
reader.Pause = 1
reader.UpdatePipeline()
watcher = OpenDataFile(descriptor)
watcher.UpdatePipeline()
quad_sender.send(ports, dims, depth, 2)


def paused_stays_quiet():
    reader.UpdatePropertyInformation()
    check(reader.GetPropertyValue("NeedsUpdate") == 0, "a paused reader reported NeedsUpdate")


wait_for(watcher, last_steps_are(2), "step 2 to arrive (unpaused reader)", also=paused_stays_quiet)
paused_stays_quiet()
reader.Pause = 0
image = refresh(reader)
check(field(image, "SlabStep") == [2.0] * len(ports), "unpaused reader does not show step 2")
check_values(image, 2, "step 2 after unpausing")
print("ok: Pause holds the reader while another one follows; unpausing catches up", flush=True)

# Loss: slab 0 gets half of step 3; step 4's first packet closes step 3 there.
# (The driver runs the receiver with a step timeout far above any wait here:
# with the default 500 ms, step 4 would be published by the clock, lossy,
# and SlabLossPercent, the last finished step's, would be step 4's if this
# reader came later than that.)
quad_sender.send(ports, dims, depth, 3, fraction={0: 0.5})
quad_sender.send({0: ports[0]}, dims, depth, 4, limit={0: 1})
image = wait_for(reader, lambda im: field(im, "SlabStep") == [3.0] + [3.0] * (len(ports) - 1),
                 "step 3 to be closed on every slab")
loss = field(image, "SlabLossPercent")
check(30 <= loss[0] <= 70 and all(v == 0 for v in loss[1:]), "per-slab loss %s, expected ~50 then 0" % loss)
check(field(image, "Step") == [3.0], "Step field %s while slab 0 is on step 4" % field(image, "Step"))
holes = field(image, "HoleFraction")
check(0.3 <= holes[0] <= 0.7 and all(v == 0 for v in holes[1:]), "hole fractions %s" % holes)
check(abs(field(image, "Completeness")[0] - (1 - holes[0])) < 1e-9, "completeness %s" % field(image, "Completeness"))
# The holes hold step 2's values, marked one step old; the rest is step 3.
values = memoryview(image.GetPointData().GetArray("density")).tolist()
ages = memoryview(image.GetPointData().GetArray("density_age")).tolist()
now, before = expected_index_values(dims, whole, 3), expected_index_values(dims, whole, 2)
wrong = sum(1 for v, a, n, b in zip(values, ages, now, before) if (a == 0 and v != n) or (a == 1 and v != b) or a > 1)
aged = sum(1 for a in ages if a)
check(wrong == 0 and aged > 0, "%d values disagree with their age (%d aged)" % (wrong, aged))
print("ok: per-slab loss in the field data: %s%%; %d lost values shown from step 2 with age 1" % (
    ", ".join("%.1f" % v for v in loss), aged), flush=True)
# The ranges ParaView shows (the reader fills VTK's range cache itself, once
# per published step) are the values' and ages' own.
want = (float(min(values)), float(max(values)))
check(tuple(reader.PointData["density"].GetRange()) == want,
      "density range %s, the values span %s" % (reader.PointData["density"].GetRange(), want))
check(tuple(reader.PointData["density_age"].GetRange()) == (float(min(ages)), float(max(ages))),
      "age range %s" % (reader.PointData["density_age"].GetRange(),))
print("ok: data ranges %s and ages %s match the values" % (want, reader.PointData["density_age"].GetRange()), flush=True)

# A step that reaches slab 0 first: the poll announces it, the update still
# shows the older whole step. When the other slabs have it too, the VTK
# pipeline itself (what a render's own update does: GetMTime, nothing marked
# modified) re-executes the reader. A view that had taken the older output
# keeps it unless the next poll says so once more.
quad_sender.send({0: ports[0]}, dims, depth, 9)
wait_until_announced(reader, "step 9 on slab 0")
reader.MarkModified(reader)
reader.UpdatePipeline()
shown = field(servermanager.Fetch(reader), "Step")
check(shown != [9.0], "step 9 shown while only slab 0 had it")
quad_sender.send({k: p for k, p in ports.items() if k != 0}, dims, depth, 9)
deadline = time.monotonic() + 60
while field(algo.GetOutputDataObject(0), "Step") != [9.0]:
    check(time.monotonic() < deadline, "the VTK pipeline never re-executed the reader for step 9")
    time.sleep(0.05)
    algo.Update()
reader.UpdatePropertyInformation()
check(reader.GetPropertyValue("NeedsUpdate") == 1,
      "no poll announced step 9, which only the pipeline's own update took (shown before: step %s)" % shown)
reader.UpdatePropertyInformation()
check(reader.GetPropertyValue("NeedsUpdate") == 0, "step 9 announced twice")
print("ok: a step the pipeline took on its own (after step %s was shown) is announced once" % shown, flush=True)
print("PV_RECEIVER_LIVE_OK", flush=True)
