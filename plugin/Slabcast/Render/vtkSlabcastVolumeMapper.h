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
 * Progressive: a new step's first frame is drawn at 1/CoarsestLevel of the
 * pixels along each axis (and samples as far apart), each later frame of the
 * same step at half that, down to every pixel: the first picture of a step
 * comes fast and refines while no newer one arrives.
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
   * The first frame of a new step is drawn at 1/CoarsestLevel of the pixels
   * along each axis (a power of two, 1 to 16; 1: every frame in full).
   */
  vtkSetClampMacro(CoarsestLevel, int, 1, 16);
  vtkGetMacro(CoarsestLevel, int);
  ///@}

  /**
   * The level of the last frame drawn: 1 for full resolution, else the
   * factor its pixels and samples were coarser by.
   */
  int GetRenderedLevel() const;

  /**
   * Whether a frame rendered now would be finer than the last one (the
   * step is still being refined).
   */
  bool GetRefining() const;

  /**
   * Threads this rank renders on (the SLABCAST_RENDER_THREADS environment
   * variable, else the host's cores shared among its MPI ranks).
   */
  int GetThreads() const;

protected:
  vtkSlabcastVolumeMapper();
  ~vtkSlabcastVolumeMapper() override;

  double SampleDistance = 0.0;
  int CoarsestLevel = 4;

private:
  vtkSlabcastVolumeMapper(const vtkSlabcastVolumeMapper&) = delete;
  void operator=(const vtkSlabcastVolumeMapper&) = delete;

  struct Internals;
  std::unique_ptr<Internals> Internal;
};

#endif
