"""The volume rendering paths a slabcast renderer offers (--mapper), and which
one it takes by default on a host without a GPU.

    smart         ParaView's default: the GPU ray caster where OpenGL can run it
    gpu           VTK's GPU ray caster (on a host without a GPU: Mesa's llvmpipe)
    raycast       VTK's fixed-point CPU ray caster
    ospray        OSPRay, where ParaView's VTK is linked to it (Debian 12's is not)
    slabcast      the Slabcast plugin's CPU ray marcher ("Slabcast Volume"):
                  every voxel, from the values in place, on every core; a
                  new step's first frame coarse, refined frame by frame
    stride:K      a level of detail: every K-th point along each axis, then
                  `smart`. The slabcast reader takes them straight from the
                  slabs (its Stride: no full-size copy, no resampling filter);
                  another source goes through ExtractSubset
    resample:N    a level of detail: the volume resampled (ResampleToImage,
                  trilinear) to N points along its longest axis, then `smart`;
                  resample:1/K: to 1/K of the points along the longest axis
    auto          the default: where OpenGL is a software rasteriser (no
                  GPU), slabcast (where the plugin is loaded; else, from
                  SOFTWARE_LOD_FROM points along the longest axis, stride:K,
                  K >= 2 and large enough for at most SOFTWARE_MAX_POINTS);
                  with a GPU, smart

--max-points N caps any path but slabcast at N points along the longest axis
(above it, stride:K): a memory ceiling, which `slabcast demo` sets where the
full volume does not fit beside the slabs; slabcast copies nothing.

Measured by testing/bench/render_paths.py (docs/performance.md, "Render paths"
and "The CPU ray marcher"): speed against image difference from `smart`.
"""
import argparse
import importlib.util

from paraview import servermanager
from paraview.simple import ExtractSubset, GetOpenGLInformation, ResampleToImage, Show

# ParaView's VolumeRenderingMode behind each name.
MODES = {"smart": "Smart", "gpu": "GPU Based", "raycast": "Ray Cast Only", "ospray": "OSPRay Based"}
# The Slabcast plugin's representation: its CPU ray marcher.
CPU_VOLUME = "Slabcast Volume"

# OpenGL renderer strings of Mesa's software rasterisers.
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast")
# On llvmpipe a level of detail from this many points along the longest axis:
# at 256^3 every other point renders a new step's first frame in 0.41-0.47 of
# smart's time and later frames in 0.41-0.49, image RMSE 2.3/255 from smart
# (the resampled copy: 1.9, but 0.74-0.87 of smart's first frame; VTK's CPU
# ray caster: 1.6-1.9); at 1024^3 smart renders black frames (llvmpipe makes
# no 3D texture of 2 GiB or more). Below it a software frame is already short
# (128^3: about 0.4 s) and half of it loses visible detail.
SOFTWARE_LOD_FROM = 256
# A software frame's cost grows with the points rendered, so auto renders no
# more than this along the longest axis: a frame time near 256^3's however
# large the volume. At 1024^3 on two ranks half the points (resample:512)
# took 15-36 s a frame (CHANGELOG.md, issue 22, "Rendering paths").
SOFTWARE_MAX_POINTS = 256


def level_number(text, prefix):
    """K of `prefix`K (K >= 2), else None."""
    n = text[len(prefix):]
    return int(n) if text.startswith(prefix) and n.isdigit() and int(n) >= 2 else None


def mapper_name(text):
    """argparse type of --mapper: a name above, stride:K, resample:N or resample:1/K with K, N >= 2."""
    if text in ("auto", "slabcast") or text in MODES or level_number(text, "stride:") or level_number(text, "resample:1/") \
            or level_number(text, "resample:"):
        return text
    raise argparse.ArgumentTypeError("%r: expected auto, slabcast, %s, stride:K (every K-th point, K >= 2), resample:N "
                                     "(N >= 2 points along the longest axis) or resample:1/K" % (text, ", ".join(MODES)))


def add_mapper_option(p):
    p.add_argument("--mapper", type=mapper_name, default="auto",
                   help="volume rendering path: auto (default: without a GPU slabcast, the plugin's CPU ray "
                        "marcher, at full resolution; with one smart), slabcast, smart, gpu, raycast, ospray, "
                        "stride:K (every K-th point along each axis, then smart), resample:N (a resampled copy, N "
                        "points along the longest axis) or resample:1/K")
    p.add_argument("--coarsest", type=int, default=1, choices=(1, 2, 4, 8, 16),
                   help="slabcast, live: a new step's first frame at 1/N of the pixels along each axis (and samples "
                        "N voxels apart), each next frame at half that down to full resolution; the caption names "
                        "the level (default 1: every frame in full; slabcast demo takes 4, 8 past 512^3 points)")
    p.add_argument("--max-points", type=int, default=0, metavar="N",
                   help="render at most N points along the longest axis, whatever the path (every K-th point above "
                        "it): a memory ceiling; 0 = none")


def strided_points(n, k):
    """Points along an axis of n points at stride k (as the reader's Stride)."""
    return (n - 1) // k + 1


def stride_for(n, max_points):
    """The least stride >= 2 that leaves at most max_points of n."""
    k = 2
    while strided_points(n, k) > max_points:
        k += 1
    return k


def gl_renderer():
    """The OpenGL renderer string where the rendering happens (the pvserver's with --connect)."""
    info = GetOpenGLInformation(location=servermanager.vtkSMSession.RENDER_SERVER)
    return info.GetRenderer() or ""


def source_dims(source):
    e = source.GetDataInformation().GetExtent()
    return [e[1] - e[0] + 1, e[3] - e[2] + 1, e[5] - e[4] + 1]


def volume_dims(source):
    """The volume's points along each axis before any stride: the slabcast
    reader's VolumeDimensions (known before its first update), else the data's."""
    if source.GetProperty("VolumeDimensions") is not None:
        source.UpdatePipelineInformation()
        dims = list(source.GetPropertyValue("VolumeDimensions"))
        if min(dims) > 0:
            return dims
    return source_dims(source)


def concrete(name, dims):
    """resample:1/K as resample:N for a volume of `dims` points."""
    if name.startswith("resample:1/"):
        return "resample:%d" % max(2, max(dims) // int(name[11:]))
    return name


def points_rendered(name, dims):
    """Points along the longest axis that path `name` (concrete) renders."""
    if name.startswith("stride:"):
        return strided_points(max(dims), int(name[7:]))
    return int(name.split(":")[1]) if name.startswith("resample:") else max(dims)


def capped(choice, dims, max_points, why_capped):
    """(path, why) with at most `max_points` (0: any) along the longest axis:
    above it, the least stride that fits."""
    name, why = choice
    if name == "slabcast" or max_points <= 0 or points_rendered(name, dims) <= max_points:
        return name, why
    return "stride:%d" % stride_for(max(dims), max_points), "%s, at most %d points (%s)" % (why, max_points, why_capped)


def resolve(name, dims, max_points=0):
    """(the path `name` stands for with a volume of `dims` points, why): auto
    decided by the OpenGL renderer and the volume's size; any path capped at
    `max_points` along the longest axis (0: no cap)."""
    if name != "auto":
        return capped((concrete(name, dims), "asked for"), dims, max_points, "--max-points")
    renderer = gl_renderer()
    if not any(s in renderer.lower() for s in SOFTWARE_RENDERERS):
        return capped(("smart", "auto, OpenGL renderer %s" % (renderer or "unknown")), dims, max_points, "--max-points")
    if not unavailable("slabcast"):
        return "slabcast", "auto, software OpenGL (%s): every voxel on the CPU, in place" % renderer
    if max(dims) < SOFTWARE_LOD_FROM:
        return capped(("smart", "auto, software OpenGL (%s), under %d points along the longest axis"
                       % (renderer, SOFTWARE_LOD_FROM)), dims, max_points, "--max-points")
    k = stride_for(max(dims), SOFTWARE_MAX_POINTS)
    return capped(("stride:%d" % k, "auto, software OpenGL (%s): 1 point in %d along each axis, at most %d along "
                   "the longest" % (renderer, k, SOFTWARE_MAX_POINTS)), dims, max_points, "--max-points")


def apply_stride(source, name):
    """Before the source's first update: a slabcast reader takes stride:K
    itself (Stride), so that it never copies the whole volume."""
    if name.startswith("stride:") and source.GetProperty("Stride") is not None:
        source.Stride = int(name[7:])


def unavailable(name):
    """Why this ParaView cannot render through `name` (None when it can)."""
    if name == "ospray" and importlib.util.find_spec("vtkmodules.vtkRenderingRayTracing") is None:
        return "--mapper ospray: this ParaView's VTK is not linked to OSPRay (no vtkRenderingRayTracing module)"
    if name == "slabcast" and not hasattr(servermanager.sources, "SlabcastReader"):
        return "--mapper slabcast: the Slabcast plugin is not loaded (its %s representation)" % CPU_VOLUME
    return None


def show_volume(source, view, name, max_points=0):
    """Shows `source` in `view` as a volume through path `name` (auto is
    resolved here, and the cap applied); returns the representation, ready
    for its colour and opacity. A slabcast reader is best given its stride
    (apply_stride) before its first update."""
    dims = volume_dims(source)
    name = resolve(mapper_name(name), dims, max_points)[0]
    if name.startswith("stride:"):
        k = int(name[7:])
        if source.GetProperty("Stride") is not None:
            source.Stride = k
        else:
            source = ExtractSubset(Input=source, SampleRateI=k, SampleRateJ=k, SampleRateK=k)
        name = "smart"
    elif name.startswith("resample:"):
        n = int(name.split(":")[1])
        # The longest axis gets n points, the others in proportion; never more than the source has.
        sampled = [max(2, min(d, round(d * n / max(dims)))) for d in dims]
        source = ResampleToImage(Input=source, SamplingDimensions=sampled)
        name = "smart"
    display = Show(source, view)
    if name == "slabcast":
        display.SetRepresentationType(CPU_VOLUME)
        return display
    display.SetRepresentationType("Volume")
    display.VolumeRenderingMode = MODES[name]
    return display
