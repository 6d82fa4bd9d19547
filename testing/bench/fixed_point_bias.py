#!/usr/bin/env python3
"""Model: how much brighter VTK's CPU ray caster (vtkFixedPointVolumeRayCastMapper)
draws a ray than float compositing does, from its arithmetic alone.

It composites in 15-bit fixed point (1.0 = 32767) and rounds every product
up: colour += (c * a * T + 0x7fff) >> 15, T = (T * (32767 - a) + 0x7fff) >> 15.
Every sample with a non-zero opacity so adds at least 1/32767 to a colour
channel and takes less than its share of the light. This composites the same
rays of random samples both ways, with slabcast_render.py's opacity (0.6 t^3
per 1/32 of the box, one sample a voxel) at N^3, and prints the mean
difference in 0..255 (docs/performance.md, "The CPU ray marcher").

Usage: python3 testing/bench/fixed_point_bias.py [--sizes 256,1024] [--rays 200]
"""
import argparse
import random

ONE = 32767


def ray(samples, per_sample, rng):
    """One ray's colour (0..255), composited in float and in VTK's fixed point."""
    colour, light = 0.0, 1.0
    fixed_colour, fixed_light = 0, ONE
    for _ in range(samples):
        t = rng.random()
        c = t  # a colour channel rising with the value, as the preset's
        a = 1.0 - (1.0 - 0.6 * t ** 3) ** per_sample  # opacity corrected for the sample distance
        quantised = int(a * ONE + 0.5)
        if quantised == 0:
            continue  # both skip a sample whose table opacity is 0
        colour += c * a * light
        light *= 1.0 - a
        shaded = (int(c * ONE + 0.5) * quantised + 0x7FFF) >> 15
        fixed_colour += (shaded * fixed_light + 0x7FFF) >> 15
        fixed_light = (fixed_light * (ONE - quantised) + 0x7FFF) >> 15
        if fixed_light < 0xFF:
            break
    return 255 * colour, 255 * fixed_colour / ONE


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="256,1024")
    p.add_argument("--rays", type=int, default=200)
    args = p.parse_args()
    for n in (int(v) for v in args.sizes.split(",")):
        rng = random.Random(1)
        per_sample = 1.0 / ((n - 1) / 32.0)  # one voxel, over the opacity's unit distance
        pairs = [ray(int(n * 1.2), per_sample, rng) for _ in range(args.rays)]
        diff = sum(f - c for c, f in pairs) / len(pairs)
        print("%d^3: fixed point - float = %+.2f/255 over %d rays of %d samples" % (n, diff, args.rays, int(n * 1.2)))


if __name__ == "__main__":
    main()
