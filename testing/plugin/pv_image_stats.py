"""pvpython: pixel statistics of a PNG, and of its difference to a reference.

    pvpython pv_image_stats.py IMAGE.png [REFERENCE.png]

Prints "STATS key=value ...": lit = fraction of pixels brighter than the
black background (any channel > 16), bright = fraction with a channel > 128,
and against REFERENCE maxdiff / meandiff in 0..255 units over the colour
channels (alpha left out), bias = the signed mean (IMAGE - REFERENCE: above 0
where IMAGE is the brighter), mse (their mean square), psnr = 10 log10(255^2 /
mse) in dB (inf where the images are equal), changed = fraction of pixels
with any colour channel different and over8 = fraction with one more than 8
apart.
"""
import math
import sys

from vtkmodules.vtkIOImage import vtkPNGReader


def load(path):
    r = vtkPNGReader()
    r.SetFileName(path)
    r.Update()
    image = r.GetOutput()
    scalars = image.GetPointData().GetScalars()
    if scalars is None:
        raise SystemExit("cannot read " + path)
    return image.GetDimensions(), scalars.GetNumberOfComponents(), bytes(memoryview(scalars).cast("B"))


dims, comps, pixels = load(sys.argv[1])
rgb = min(comps, 3)
count = dims[0] * dims[1]
lit = bright = 0
for i in range(0, len(pixels), comps):
    m = max(pixels[i:i + rgb])
    lit += m > 16
    bright += m > 128
stats = {"width": dims[0], "height": dims[1], "lit": lit / count, "bright": bright / count}
if len(sys.argv) > 2:
    ref_dims, ref_comps, ref = load(sys.argv[2])
    if ref_dims != dims or ref_comps != comps:
        raise SystemExit("image sizes differ: %s vs %s" % (dims, ref_dims))
    signed = [a - b for i, (a, b) in enumerate(zip(pixels, ref)) if i % comps < rgb]
    diffs = [abs(d) for d in signed]
    stats["maxdiff"] = max(diffs)
    stats["meandiff"] = sum(diffs) / len(diffs)
    stats["bias"] = sum(signed) / len(signed)
    stats["mse"] = sum(d * d for d in diffs) / len(diffs)
    stats["psnr"] = 10 * math.log10(255.0 ** 2 / stats["mse"]) if stats["mse"] else math.inf
    stats["changed"] = sum(any(diffs[i:i + rgb]) for i in range(0, len(diffs), rgb)) / count
    stats["over8"] = sum(max(diffs[i:i + rgb]) > 8 for i in range(0, len(diffs), rgb)) / count
print("STATS " + " ".join("%s=%s" % kv for kv in stats.items()))
