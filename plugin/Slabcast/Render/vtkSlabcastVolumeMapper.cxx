#include "vtkSlabcastVolumeMapper.h"

#include "slabcast/render/ray_march.h"
#include "slabcast/step_news.h"

#include "vtkCamera.h"
#include "vtkColorTransferFunction.h"
#include "vtkDataArray.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkMatrix3x3.h"
#include "vtkMatrix4x4.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkOpenGLRayCastImageDisplayHelper.h"
#include "vtkPiecewiseFunction.h"
#include "vtkRenderer.h"
#include "vtkTypeInt64Array.h"
#include "vtkTypeUInt64Array.h"
#include "vtkVolume.h"
#include "vtkVolumeProperty.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace render = slabcast::render;

namespace
{
// Which values a piece holds. A live reader's output of a published step
// names it (its news key, step and publication time), and its values stay
// pinned while shown: the reader running again for news of another step's
// first slabs gives the same values a new MTime, and marching them again
// would take the cores the next step's transfer needs (Balman et al., 2012,
// section 4: send to picture). Anything else is known by its MTime.
struct DataKey
{
  vtkMTimeType Time = 0;
  std::uint64_t News = 0;
  std::int64_t Step = 0, Published = 0;
  int Extent[6] = {};
  bool operator==(const DataKey& o) const
  {
    return Time == o.Time && News == o.News && Step == o.Step && Published == o.Published &&
      std::equal(Extent, Extent + 6, o.Extent);
  }
  bool operator!=(const DataKey& o) const { return !(*this == o); }
};

template <class ArrayT>
typename ArrayT::ValueType OneValue(vtkFieldData* fd, const char* name)
{
  auto* a = ArrayT::SafeDownCast(fd->GetArray(name));
  return a && a->GetNumberOfTuples() == 1 ? a->GetValue(0) : 0;
}

DataKey KeyOf(vtkImageData* input, vtkDataArray* values)
{
  vtkFieldData* fd = input->GetFieldData();
  DataKey key;
  input->GetExtent(key.Extent);
  key.News = OneValue<vtkTypeUInt64Array>(fd, "SlabcastNewsKey");
  const std::int64_t published = OneValue<vtkTypeInt64Array>(fd, "StepPublishedNs");
  if (key.News != 0 && published > 0)
  {
    key.Published = published;
    key.Step = OneValue<vtkTypeInt64Array>(fd, "Step");
  }
  else
  {
    key.Time = std::max(input->GetMTime(), values->GetMTime());
  }
  return key;
}
}

struct vtkSlabcastVolumeMapper::Internals
{
  render::WorkerPool Pool{ render::WorkerPool::default_threads() };
  render::RayMarcher Marcher;
  render::TransferTable Table;
  // The last whole frame, shown; the frame being drawn, shown once whole.
  render::Image Image, Drawing;
  vtkNew<vtkOpenGLRayCastImageDisplayHelper> Display;
  vtkNew<vtkMatrix4x4> ToWorld, ToVolume, ToPiece;
  // Filled once: the transfer functions sampled for the table.
  std::vector<float> Rgb = std::vector<float>(3 * render::TransferTable::kEntries);
  std::vector<float> Opacity = std::vector<float>(render::TransferTable::kEntries);

  // What the bricks were measured from, and the table built for.
  DataKey Data;
  const void* DataValues = nullptr;
  vtkMTimeType TableTime = 0;
  double TableSampleDistance = 0.0;

  int RenderedLevel = 0;  // 0: nothing drawn yet
  int Marches = 0;
  bool FrameCut = false;
  // What the picture shown was drawn from: asked for again (a screenshot
  // renders the frame once more, a GUI repaints), it is shown without a march.
  struct DrawnFrom
  {
    DataKey Data;
    vtkMTimeType Table = 0;
    const void* Values = nullptr;
    int Level = 0, Width = 0, Height = 0;
    double Sample = 0.0;
    bool Linear = true;
    double Rays[16] = {};
    double Whole[6] = {};
    bool operator==(const DrawnFrom& o) const
    {
      return Data == o.Data && Table == o.Table && Values == o.Values && Level == o.Level && Width == o.Width &&
        Height == o.Height && Sample == o.Sample && Linear == o.Linear &&
        std::equal(Rays, Rays + 16, o.Rays) && std::equal(Whole, Whole + 6, o.Whole);
    }
  };
  DrawnFrom Shown;
  bool WarnedScalars = false, WarnedSpacing = false, WarnedDirection = false;
};

vtkStandardNewMacro(vtkSlabcastVolumeMapper);

vtkSlabcastVolumeMapper::vtkSlabcastVolumeMapper()
  : Internal(new Internals)
{
  this->Internal->Display->SetPreMultipliedColors(1);
}

vtkSlabcastVolumeMapper::~vtkSlabcastVolumeMapper() = default;

int vtkSlabcastVolumeMapper::GetRenderedLevel() const
{
  return this->Internal->RenderedLevel;
}

int vtkSlabcastVolumeMapper::GetFrameCut() const
{
  return this->Internal->FrameCut ? 1 : 0;
}

int vtkSlabcastVolumeMapper::GetMarches() const
{
  return this->Internal->Marches;
}

int vtkSlabcastVolumeMapper::GetThreads() const
{
  return this->Internal->Pool.threads();
}

void vtkSlabcastVolumeMapper::ReleaseGraphicsResources(vtkWindow* window)
{
  this->Internal->Display->ReleaseGraphicsResources(window);
}

namespace
{
// The transfer functions' reach: the table spans both, values beyond take
// the nearest end (VTK's functions clamp by default).
void TableRange(vtkColorTransferFunction* colour, vtkPiecewiseFunction* opacity, double range[2])
{
  double c[2], o[2];
  colour->GetRange(c);
  opacity->GetRange(o);
  range[0] = std::min(c[0], o[0]);
  range[1] = std::max(c[1], o[1]);
  if (!(range[1] > range[0]))
  {
    range[1] = range[0] + 1.0;
  }
}
}

void vtkSlabcastVolumeMapper::Render(vtkRenderer* ren, vtkVolume* vol)
{
  Internals& in = *this->Internal;
  vtkImageData* input = vtkImageData::SafeDownCast(this->GetInput());
  vtkVolumeProperty* property = vol->GetProperty();
  if (!input || !property)
  {
    return;
  }
  int cellFlag = 0;
  vtkDataArray* scalars = vtkAbstractMapper::GetScalars(input, this->ScalarMode, this->ArrayAccessMode,
    this->ArrayId, this->ArrayName, cellFlag);
  vtkFloatArray* values = vtkFloatArray::SafeDownCast(scalars);
  if (!values || values->GetNumberOfComponents() != 1 || cellFlag)
  {
    if (!in.WarnedScalars)
    {
      vtkWarningMacro("renders one float32 value a point; this volume's array is "
        << (scalars ? scalars->GetDataTypeAsString() : "missing") << " with "
        << (scalars ? scalars->GetNumberOfComponents() : 0) << " component(s)"
        << (cellFlag ? " on cells" : ""));
      in.WarnedScalars = true;
    }
    return;
  }
  vtkMatrix3x3* direction = input->GetDirectionMatrix();
  if (direction && !direction->IsIdentity() && !in.WarnedDirection)
  {
    vtkWarningMacro("the image's direction matrix is not the identity: drawn as if it were");
    in.WarnedDirection = true;
  }

  int extent[6];
  input->GetExtent(extent);
  double origin[3], spacing[3];
  input->GetOrigin(origin);
  input->GetSpacing(spacing);
  if (!(spacing[0] > 0 && spacing[1] > 0 && spacing[2] > 0 && spacing[0] < 1e30 && spacing[1] < 1e30 &&
        spacing[2] < 1e30))
  {
    if (!in.WarnedSpacing)
    {
      vtkWarningMacro("renders images of positive, finite spacing; this one's is " << spacing[0] << ", "
                                                                                 << spacing[1] << ", " << spacing[2]);
      in.WarnedSpacing = true;
    }
    return;
  }
  render::Piece piece;
  piece.values = values->GetPointer(0);
  piece.nx = extent[1] - extent[0] + 1;
  piece.ny = extent[3] - extent[2] + 1;
  piece.nz = extent[5] - extent[4] + 1;
  if (values->GetNumberOfTuples() < piece.nx * piece.ny * piece.nz)
  {
    return;
  }
  for (int a = 0; a < 3; ++a)
  {
    piece.origin[a] = origin[a] + extent[2 * a] * spacing[a];
    piece.spacing[a] = spacing[a];
    piece.whole_lo[a] = this->WholeBounds[2 * a];
    piece.whole_hi[a] = this->WholeBounds[2 * a + 1];
  }

  // A new step: its bricks to measure again (where skipping pays).
  const DataKey dataKey = KeyOf(input, values);
  if (dataKey != in.Data || piece.values != in.DataValues)
  {
    in.Marcher.new_values();
    in.Data = dataKey;
    in.DataValues = piece.values;
  }
  const int level = this->Level;

  render::March march;
  const double voxel = std::min({ spacing[0], spacing[1], spacing[2] });
  march.sample_distance = (this->SampleDistance > 0 ? this->SampleDistance : voxel) * level;
  march.linear = property->GetInterpolationType() != VTK_NEAREST_INTERPOLATION;
  march.may_measure = level == 1;

  vtkColorTransferFunction* colour = property->GetRGBTransferFunction(0);
  vtkPiecewiseFunction* opacity = property->GetScalarOpacity(0);
  const vtkMTimeType tableTime = std::max({ property->GetMTime(), colour->GetMTime(), opacity->GetMTime() });
  if (tableTime != in.TableTime || march.sample_distance != in.TableSampleDistance)
  {
    double range[2];
    TableRange(colour, opacity, range);
    colour->GetTable(range[0], range[1], render::TransferTable::kEntries, in.Rgb.data());
    opacity->GetTable(range[0], range[1], render::TransferTable::kEntries, in.Opacity.data());
    in.Table.set(static_cast<float>(range[0]), static_cast<float>(range[1]), in.Rgb.data(), in.Opacity.data(),
      march.sample_distance, property->GetScalarOpacityUnitDistance(0));
    in.TableTime = tableTime;
    in.TableSampleDistance = march.sample_distance;
  }

  // The rays: the viewport's pixels back to world coordinates, then into the
  // volume's own (its prop may be moved, turned or scaled).
  int width, height, x0, y0;
  ren->GetTiledSizeAndOrigin(&width, &height, &x0, &y0);
  if (width <= 0 || height <= 0)
  {
    return;
  }
  vtkMatrix4x4* projection = ren->GetActiveCamera()->GetCompositeProjectionTransformMatrix(
    ren->GetTiledAspectRatio(), -1, 1);
  vtkMatrix4x4::Invert(projection, in.ToWorld);
  vtkMatrix4x4::Invert(vol->GetMatrix(), in.ToVolume);
  vtkMatrix4x4::Multiply4x4(in.ToVolume, in.ToWorld, in.ToPiece);
  render::Rays rays;
  for (int r = 0; r < 4; ++r)
  {
    for (int c = 0; c < 4; ++c)
    {
      rays.to_world[4 * r + c] = in.ToPiece->GetElement(r, c);
    }
  }

  // A live reader's output names its key: once a newer step replaces the one
  // drawn, the frame stops and the last whole one stays on screen.
  const std::uint64_t key = dataKey.News;
  if (key != 0)
  {
    march.stop = [key] { return slabcast::StepNews::instance().newer(key); };
  }
  Internals::DrawnFrom from;
  from.Data = dataKey;
  from.Values = piece.values;
  from.Table = in.TableTime;
  from.Level = level;
  from.Width = width;
  from.Height = height;
  from.Sample = march.sample_distance;
  from.Linear = march.linear;
  std::copy(rays.to_world, rays.to_world + 16, from.Rays);
  std::copy(this->WholeBounds, this->WholeBounds + 6, from.Whole);
  if (!(from == in.Shown) || in.FrameCut || in.RenderedLevel == 0)
  {
    in.Drawing.resize((width + level - 1) / level, (height + level - 1) / level);
    in.FrameCut = !in.Marcher.render(piece, in.Table, rays, march, in.Drawing, in.Pool);
    ++in.Marches;
    if (!in.FrameCut || in.RenderedLevel == 0)
    {
      std::swap(in.Image, in.Drawing);
      in.RenderedLevel = level;
      in.Shown = from;
    }
  }
  int size[2] = { in.Image.width, in.Image.height };
  int at[2] = { 0, 0 };
  in.Display->RenderTexture(vol, ren, size, size, size, at, -1.0f, in.Image.rgba.data());
}

void vtkSlabcastVolumeMapper::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "SampleDistance: " << this->SampleDistance << "\n";
  os << indent << "Level: " << this->Level << "\n";
  os << indent << "RenderedLevel: " << this->Internal->RenderedLevel << "\n";
  os << indent << "Threads: " << this->Internal->Pool.threads() << "\n";
}
