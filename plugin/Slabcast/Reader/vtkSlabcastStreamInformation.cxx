#include "vtkSlabcastStreamInformation.h"

#include "vtkClientServerStream.h"
#include "vtkObjectFactory.h"
#include "vtkSlabcastReader.h"

#include "slabcast/slab_figures_wire.h"

#include <string>
#include <vector>

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
    this->Internals->Slabs = reader->StreamFigures(/*nameReaders=*/true);
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
  const std::string bytes = slabcast::encode_figures(this->Internals->Slabs);
  stream->Reset();
  *stream << vtkClientServerStream::Reply
          << vtkClientServerStream::InsertArray(
               reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()))
          << vtkClientServerStream::End;
}

//------------------------------------------------------------------------------
void vtkSlabcastStreamInformation::CopyFromStream(const vtkClientServerStream* stream)
{
  this->Internals->Slabs.clear();
  vtkTypeUInt32 length = 0;
  std::vector<unsigned char> bytes;
  if (stream->GetNumberOfArguments(0) == 1 && stream->GetArgumentLength(0, 0, &length))
  {
    bytes.resize(length);
    if (!stream->GetArgument(0, 0, bytes.data(), length))
    {
      bytes.clear();
    }
  }
  auto slabs = slabcast::decode_figures(bytes.data(), bytes.size());
  if (!slabs)
  {
    vtkErrorMacro(<< "stream figures from the server are malformed; ignored");
    return;
  }
  this->Internals->Slabs = std::move(*slabs);
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
