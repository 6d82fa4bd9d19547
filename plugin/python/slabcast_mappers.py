"""The volume rendering paths a slabcast renderer offers (--mapper), and which
one it takes by default on a host without a GPU.

    smart         ParaView's default: the GPU ray caster where OpenGL can run it
    gpu           VTK's GPU ray caster (on a host without a GPU: Mesa's llvmpipe)
    raycast       VTK's fixed-point CPU ray caster
    ospray        OSPRay, where ParaView's VTK is linked to it (Debian 12's is not)
    resample:N    a level of detail: the volume resampled (ResampleToImage,
                  trilinear) to N points along its longest axis, then `smart`;
                  resample:1/K: to 1/K of the points along the longest axis
    auto          the default: where OpenGL is a software rasteriser (no GPU)
                  and the volume has RESAMPLE_FROM or more points along its
                  longest axis, DEFAULT_SOFTWARE, at most SOFTWARE_MAX_POINTS;
                  else smart

--max-points N caps any path at N points along the longest axis (above it,
resample:N): a memory ceiling, which `slabcast demo` sets where the full
volume does not fit beside the slabs.

Measured by testing/bench/render_paths.py (docs/performance.md, "Rendering
(pvbatch, llvmpipe, 2 cores)"): speed against image difference from `smart`.
"""
import argparse
import importlib.util

from paraview import servermanager
from paraview.simple import GetOpenGLInformation, ResampleToImage, Show

# ParaView's VolumeRenderingMode behind each name.
MODES = {"smart": "Smart", "gpu": "GPU Based", "raycast": "Ray Cast Only", "ospray": "OSPRay Based"}
# OpenGL renderer strings of Mesa's software rasterisers.
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast")
# On llvmpipe the fastest path whose image stays within RMSE 2/255 of `smart`
# (no further than VTK's CPU ray caster is from it): at 256^3 half the points
# renders a frame in 0.2-0.4 of smart's time, RMSE 1.93; at 1024^3 on one or
# two ranks smart renders black frames (llvmpipe makes no 3D texture of 2 GiB
# or more; 1 GiB works), half still renders
# (render_paths.py, docs/performance.md "Rendering (pvbatch, llvmpipe, 2 cores)").
DEFAULT_SOFTWARE = "resample:1/2"
# Below this many points along the longest axis a software frame is already
# short (128^3: about 0.4 s) and half of it loses visible detail.
RESAMPLE_FROM = 256
# A software frame's cost grows with the points resampled and rendered, so
# auto renders no more than this along the longest axis: a level of detail
# whose frame time stays near 256^3's as the volume grows. At 1024^3 on two
# ranks half the points (512) took 15-36 s a frame, too slow to show a
# stream whose steps come every few seconds (docs/performance.md, section 14).
SOFTWARE_MAX_POINTS = 256


def mapper_name(text):
    """argparse type of --mapper: a name above, resample:N with N >= 2 or resample:1/K with K >= 2."""
    if text == "auto" or text in MODES:
        return text
    n = text[9:][2:] if text.startswith("resample:1/") else text[9:]
    if text.startswith("resample:") and n.isdigit() and int(n) >= 2:
        return text
    raise argparse.ArgumentTypeError("%r: expected auto, %s, resample:N (N >= 2 points along the longest axis) "
                                     "or resample:1/K" % (text, ", ".join(MODES)))


def add_mapper_option(p):
    p.add_argument("--mapper", type=mapper_name, default="auto",
                   help="volume rendering path: auto (default: %s without a GPU from %d points along the longest "
                        "axis, at most %d, else smart), smart, gpu, raycast, ospray, resample:N (a coarser copy, N "
                        "points along the longest axis) or resample:1/K"
                        % (DEFAULT_SOFTWARE, RESAMPLE_FROM, SOFTWARE_MAX_POINTS))
    p.add_argument("--max-points", type=int, default=0, metavar="N",
                   help="render at most N points along the longest axis, whatever the path (a copy resampled to N "
                        "above it): a memory ceiling; 0 = none")


def gl_renderer():
    """The OpenGL renderer string where the rendering happens (the pvserver's with --connect)."""
    info = GetOpenGLInformation(location=servermanager.vtkSMSession.RENDER_SERVER)
    return info.GetRenderer() or ""


def source_dims(source):
    e = source.GetDataInformation().GetExtent()
    return [e[1] - e[0] + 1, e[3] - e[2] + 1, e[5] - e[4] + 1]


def concrete(name, dims):
    """resample:1/K as resample:N for a volume of `dims` points."""
    if name.startswith("resample:1/"):
        return "resample:%d" % max(2, max(dims) // int(name[11:]))
    return name


def points_rendered(name, dims):
    """Points along the longest axis that path `name` (concrete) renders."""
    return int(name.split(":")[1]) if name.startswith("resample:") else max(dims)


def capped(choice, dims, max_points, why_capped):
    """(path, why) with at most `max_points` (0: any) along the longest axis."""
    name, why = choice
    if max_points <= 0 or points_rendered(name, dims) <= max_points:
        return name, why
    return "resample:%d" % max_points, "%s, at most %d points (%s)" % (why, max_points, why_capped)


def resolve(name, dims, max_points=0):
    """(the path `name` stands for with a volume of `dims` points, why): auto
    decided by the OpenGL renderer and the volume's size; any path capped at
    `max_points` along the longest axis (0: no cap)."""
    if name != "auto":
        return capped((concrete(name, dims), "asked for"), dims, max_points, "--max-points")
    renderer = gl_renderer()
    if not any(s in renderer.lower() for s in SOFTWARE_RENDERERS):
        return capped(("smart", "auto, OpenGL renderer %s" % (renderer or "unknown")), dims, max_points, "--max-points")
    if max(dims) < RESAMPLE_FROM:
        return capped(("smart", "auto, software OpenGL (%s), under %d points along the longest axis"
                       % (renderer, RESAMPLE_FROM)), dims, max_points, "--max-points")
    chosen = capped((concrete(DEFAULT_SOFTWARE, dims), "auto, software OpenGL (%s): %s" % (renderer, DEFAULT_SOFTWARE)),
                    dims, SOFTWARE_MAX_POINTS, "the software level of detail")
    return capped(chosen, dims, max_points, "--max-points")


def unavailable(name):
    """Why this ParaView cannot render through `name` (None when it can)."""
    if name == "ospray" and importlib.util.find_spec("vtkmodules.vtkRenderingRayTracing") is None:
        return "--mapper ospray: this ParaView's VTK is not linked to OSPRay (no vtkRenderingRayTracing module)"
    return None


def show_volume(source, view, name, max_points=0):
    """Shows `source` in `view` as a volume through path `name` (auto is
    resolved here, and the cap applied); returns the representation, ready
    for its colour and opacity."""
    dims = source_dims(source)
    name = resolve(mapper_name(name), dims, max_points)[0]
    if name.startswith("resample:"):
        n = int(name.split(":")[1])
        # The longest axis gets n points, the others in proportion; never more than the source has.
        sampled = [max(2, min(d, round(d * n / max(dims)))) for d in dims]
        source = ResampleToImage(Input=source, SamplingDimensions=sampled)
        name = "smart"
    display = Show(source, view)
    display.SetRepresentationType("Volume")
    display.VolumeRenderingMode = MODES[name]
    return display
