"""The volume rendering paths a slabcast renderer offers (--mapper), and which
one it takes by default on a host without a GPU.

    smart         ParaView's default: the GPU ray caster where OpenGL can run it
    gpu           VTK's GPU ray caster (on a host without a GPU: Mesa's llvmpipe)
    raycast       VTK's fixed-point CPU ray caster
    ospray        OSPRay, where ParaView's VTK is linked to it (Debian 12's is not)
    resample:N    a level of detail: the volume resampled (ResampleToImage,
                  trilinear) to N points along its longest axis, then `smart`
    auto          the default: DEFAULT_SOFTWARE where OpenGL is a software
                  rasteriser (no GPU), else smart

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
# (render_paths.py): see docs/performance.md for the figures.
DEFAULT_SOFTWARE = "smart"


def mapper_name(text):
    """argparse type of --mapper: a name above, or resample:N with N >= 2."""
    if text == "auto" or text in MODES:
        return text
    if text.startswith("resample:") and text[9:].isdigit() and int(text[9:]) >= 2:
        return text
    raise argparse.ArgumentTypeError("%r: expected auto, %s or resample:N (N >= 2 points along the longest axis)"
                                     % (text, ", ".join(MODES)))


def add_mapper_option(p):
    p.add_argument("--mapper", type=mapper_name, default="auto",
                   help="volume rendering path: auto (default: %s without a GPU, else smart), smart, gpu, raycast, "
                        "ospray or resample:N (a coarser copy, N points along the longest axis)" % DEFAULT_SOFTWARE)


def gl_renderer():
    """The OpenGL renderer string where the rendering happens (the pvserver's with --connect)."""
    info = GetOpenGLInformation(location=servermanager.vtkSMSession.RENDER_SERVER)
    return info.GetRenderer() or ""


def resolve(name):
    """(the path `name` stands for, why): auto decided by the OpenGL renderer."""
    if name != "auto":
        return name, "asked for"
    renderer = gl_renderer()
    if any(s in renderer.lower() for s in SOFTWARE_RENDERERS):
        return DEFAULT_SOFTWARE, "auto, software OpenGL (%s)" % renderer
    return "smart", "auto, OpenGL renderer %s" % (renderer or "unknown")


def unavailable(name):
    """Why this ParaView cannot render through `name` (None when it can)."""
    if name == "ospray" and importlib.util.find_spec("vtkmodules.vtkRenderingRayTracing") is None:
        return "--mapper ospray: this ParaView's VTK is not linked to OSPRay (no vtkRenderingRayTracing module)"
    return None


def show_volume(source, view, name):
    """Shows `source` in `view` as a volume through path `name` (auto is
    resolved here); returns the representation, ready for its colour and opacity."""
    name = resolve(mapper_name(name))[0]
    if name.startswith("resample:"):
        n = int(name.split(":")[1])
        e = source.GetDataInformation().GetExtent()
        dims = [e[1] - e[0] + 1, e[3] - e[2] + 1, e[5] - e[4] + 1]
        # The longest axis gets n points, the others in proportion; never more than the source has.
        sampled = [max(2, min(d, round(d * n / max(dims)))) for d in dims]
        source = ResampleToImage(Input=source, SamplingDimensions=sampled)
        name = "smart"
    display = Show(source, view)
    display.SetRepresentationType("Volume")
    display.VolumeRenderingMode = MODES[name]
    return display
