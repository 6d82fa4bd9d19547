#include "vtkSlabcastStreamInformation.h"

#include "vtkClientServerStream.h"
#include "vtkObjectFactory.h"
#include "vtkSlabcastReader.h"

#include "slabcast/slab_figures.h"

#include <string>
#include <vector>

namespace
{
// A stream from a server is checked like anything that arrives: a count past
// this is refused, not used to size anything.
constexpr int kMaxSlabs = 65536;
// Values per slab on the stream, after the count.
constexpr int kFieldsPerSlab = 17;
} // namespace

class vtkSlabcastStreamInformation::vtkInternals
{
public:
  std::vector<slabcast::SlabFigures> Slabs;
};

vtkStandardNewMacro(vtkSlabcastStreamInformation);

//------------------------------------------------------------------------------
vtkSlabcastStreamInformation::vtkSlabcastStreamInformation()
  : Internals(new vtkInternals)
{
  this->RootOnly = 0; // every rank's slabs
}

vtkSlabcastStreamInformation::~vtkSlabcastStreamInformation() = default;

//------------------------------------------------------------------------------
void vtkSlabcastStreamInformation::CopyFromObject(vtkObject* object)
{
  this->Internals->Slabs.clear();
  if (auto* reader = vtkSlabcastReader::SafeDownCast(object))
  {
    this->Internals->Slabs = reader->StreamFigures();
  }
}

//------------------------------------------------------------------------------
void vtkSlabcastStreamInformation::AddInformation(vtkPVInformation* other)
{
  if (auto* o = vtkSlabcastStreamInformation::SafeDownCast(other))
  {
    slabcast::merge_figures(this->Internals->Slabs, o->Internals->Slabs);
  }
}

//------------------------------------------------------------------------------
void vtkSlabcastStreamInformation::CopyToStream(vtkClientServerStream* stream)
{
  stream->Reset();
  *stream << vtkClientServerStream::Reply << static_cast<int>(this->Internals->Slabs.size());
  for (const auto& f : this->Internals->Slabs)
  {
    *stream << f.slab << f.host.c_str() << static_cast<vtkTypeInt64>(f.shown_step) << f.shown_age_ms
            << f.shown_completeness << static_cast<vtkTypeInt64>(f.writing_step)
            << static_cast<vtkTypeInt64>(f.last_step) << f.last_step_loss_percent << f.gbps
            << static_cast<vtkTypeInt64>(f.rate_ns) << static_cast<vtkTypeUInt64>(f.bytes)
            << static_cast<vtkTypeUInt64>(f.packets) << static_cast<vtkTypeUInt64>(f.rejected)
            << static_cast<vtkTypeUInt64>(f.stale) << static_cast<vtkTypeUInt64>(f.duplicates)
            << static_cast<vtkTypeUInt64>(f.dropped_steps) << static_cast<int>(f.receiving);
  }
  *stream << vtkClientServerStream::End;
}

//------------------------------------------------------------------------------
void vtkSlabcastStreamInformation::CopyFromStream(const vtkClientServerStream* stream)
{
  this->Internals->Slabs.clear();
  int count = 0;
  if (!stream->GetArgument(0, 0, &count) || count < 0 || count > kMaxSlabs ||
    stream->GetNumberOfArguments(0) != 1 + count * kFieldsPerSlab)
  {
    vtkErrorMacro(<< "stream figures from the server are malformed; ignored");
    return;
  }
  std::vector<slabcast::SlabFigures> slabs(static_cast<std::size_t>(count));
  int a = 1;
  for (auto& f : slabs)
  {
    const char* host = nullptr;
    vtkTypeInt64 shown = 0, writing = 0, last = 0, rateNs = 0;
    vtkTypeUInt64 bytes = 0, packets = 0, rejected = 0, stale = 0, duplicates = 0, dropped = 0;
    int receiving = 0;
    const bool ok = stream->GetArgument(0, a++, &f.slab) && stream->GetArgument(0, a++, &host) &&
      stream->GetArgument(0, a++, &shown) && stream->GetArgument(0, a++, &f.shown_age_ms) &&
      stream->GetArgument(0, a++, &f.shown_completeness) && stream->GetArgument(0, a++, &writing) &&
      stream->GetArgument(0, a++, &last) && stream->GetArgument(0, a++, &f.last_step_loss_percent) &&
      stream->GetArgument(0, a++, &f.gbps) && stream->GetArgument(0, a++, &rateNs) &&
      stream->GetArgument(0, a++, &bytes) && stream->GetArgument(0, a++, &packets) &&
      stream->GetArgument(0, a++, &rejected) && stream->GetArgument(0, a++, &stale) &&
      stream->GetArgument(0, a++, &duplicates) && stream->GetArgument(0, a++, &dropped) &&
      stream->GetArgument(0, a++, &receiving);
    if (!ok)
    {
      vtkErrorMacro(<< "stream figures from the server are malformed; ignored");
      return;
    }
    f.host = host ? host : "";
    f.shown_step = shown;
    f.writing_step = writing;
    f.last_step = last;
    f.rate_ns = rateNs;
    f.bytes = bytes;
    f.packets = packets;
    f.rejected = rejected;
    f.stale = stale;
    f.duplicates = duplicates;
    f.dropped_steps = dropped;
    f.receiving = receiving != 0;
  }
  this->Internals->Slabs = std::move(slabs);
}

//------------------------------------------------------------------------------
int vtkSlabcastStreamInformation::GetNumberOfSlabs()
{
  return static_cast<int>(this->Internals->Slabs.size());
}

const slabcast::SlabFigures& vtkSlabcastStreamInformation::GetSlab(int i)
{
  return this->Internals->Slabs.at(static_cast<std::size_t>(i));
}

//------------------------------------------------------------------------------
void vtkSlabcastStreamInformation::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "Slabs: " << this->Internals->Slabs.size() << "\n";
}
