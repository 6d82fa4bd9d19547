/**
 * @class vtkSlabcastVolumeMapper
 * @brief Renders a float volume on the CPU, in place, at full resolution.
 *
 * A software OpenGL (Mesa's llvmpipe) makes no 3D texture of 1-2 GiB or more,
 * so ParaView's GPU ray caster draws a blank frame at 1024^3, and copies
 * every new step into a texture before it draws at all. This mapper reads
 * the values where the reader mapped them (the received slabs), ray-marches
 * them on every core the rank has (slabcast::render::RayMarcher: one sample
 * lattice per ray, empty bricks skipped, rays stopped once opaque) and draws
 * the picture as one textured quad, premultiplied, for IceT to composite
 * like any other rank's volume (sort-last: Balman et al., 2012, section 4.4).
 *
 * Progressive: at Level L it draws 1/L of the pixels along each axis with
 * samples L times as far apart (1/L^3 of the work): a live renderer draws a
 * new step's first frame coarse and refines it while no newer step arrives.
 */
#ifndef vtkSlabcastVolumeMapper_h
#define vtkSlabcastVolumeMapper_h

#include "SlabcastRenderModule.h"  // export macro
#include "vtkVolumeMapper.h"

#include <memory>

class SLABCASTRENDER_EXPORT vtkSlabcastVolumeMapper : public vtkVolumeMapper
{
public:
  static vtkSlabcastVolumeMapper* New();
  vtkTypeMacro(vtkSlabcastVolumeMapper, vtkVolumeMapper);
  void PrintSelf(ostream& os, vtkIndent indent) override;

  void Render(vtkRenderer* ren, vtkVolume* vol) override;
  void ReleaseGraphicsResources(vtkWindow* window) override;

  /**
   * The whole volume's bounds (xmin, xmax, ymin, ymax, zmin, zmax), every
   * rank's piece together: each ray's samples start where it enters them, so
   * a ray cut at a piece boundary takes the samples an uncut one does. Unset
   * (xmin > xmax, the default): the input's own bounds.
   */
  vtkSetVector6Macro(WholeBounds, double);
  vtkGetVector6Macro(WholeBounds, double);

  ///@{
  /**
   * World units between samples along a ray; 0 (the default) for the
   * smallest spacing of the volume: every voxel sampled.
   */
  vtkSetClampMacro(SampleDistance, double, 0.0, 1e30);
  vtkGetMacro(SampleDistance, double);
  ///@}

  ///@{
  /**
   * The level of detail to draw at: 1/Level of the viewport's pixels along
   * each axis, samples Level times as far apart (1, the default: every pixel
   * and voxel; at most 16). A live renderer draws a new step's first frame
   * coarse and the next ones finer (slabcast_render.py --coarsest): the level
   * is set for a frame, so every rank and every render of that frame (a
   * screenshot renders again) draws the same.
   */
  vtkSetClampMacro(Level, int, 1, 16);
  vtkGetMacro(Level, int);
  ///@}

  /**
   * The level of the last frame drawn (0 before the first).
   */
  int GetRenderedLevel() const;

  /**
   * 1 when the last frame was stopped because a newer step replaced the one
   * it drew (a live slabcast reader's output, slabcast/step_news.h): the
   * frame before it stays on screen, and the renderer draws the new step next.
   */
  int GetFrameCut() const;

  /**
   * Frames this mapper marched rays for (cut ones too). A frame asked again
   * of the same values, table, level and camera (a screenshot, a repaint, the
   * reader running again on another step's news) shows the last picture
   * without a march and does not count.
   */
  int GetMarches() const;

  /**
   * Threads this rank renders on (the SLABCAST_RENDER_THREADS environment
   * variable, else the host's cores shared among its MPI ranks).
   */
  int GetThreads() const;

protected:
  vtkSlabcastVolumeMapper();
  ~vtkSlabcastVolumeMapper() override;

  double SampleDistance = 0.0;
  double WholeBounds[6] = { 1, 0, 1, 0, 1, 0 };
  int Level = 1;

private:
  vtkSlabcastVolumeMapper(const vtkSlabcastVolumeMapper&) = delete;
  void operator=(const vtkSlabcastVolumeMapper&) = delete;

  struct Internals;
  std::unique_ptr<Internals> Internal;
};

#endif
