#include "vtkSlabcastReader.h"

#include "SlabPool.h"
#include "SlabSelection.h"

#include "vtkDataObject.h"
#include "vtkDoubleArray.h"
#include "vtkExtentTranslator.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkImageData.h"
#include "vtkInformation.h"
#include "vtkInformationIntegerRequestKey.h" // UPDATE_SPLIT_MODE's key type
#include "vtkInformationVector.h"
#include "vtkIntArray.h"
#include "vtkNew.h"
#include "vtkObjectFactory.h"
#include "vtkPointData.h"
#include "vtkStreamingDemandDrivenPipeline.h"
#include "vtkTypeInt64Array.h"

#include "slabcast/descriptor.h"
#include "slabcast/slab_file.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using slabcast_reader::MappingPtr;

class vtkSlabcastReader::vtkInternals
{
public:
  slabcast::Descriptor Descriptor;
  bool HaveDescriptor = false;
  std::string DescriptorPath;
  slabcast_reader::SlabPool Pool;
  std::vector<MappingPtr> Used; // slabs behind the last output, ascending index

  // Live state: a digest of what the last execution saw, compared against the
  // shared memory now. Attempted: some execution (even a failed one) happened.
  bool Attempted = false;
  std::uint64_t SignatureAtExecute = 0;
  std::uint64_t SignatureSeenByMTime = 0;
  vtkTimeStamp LiveTime;

  // Digest of the slabs' generation counters and of the descriptor file's
  // identity: any new step (start or end) in a used slab, or a receiver that
  // rewrites the descriptor (restart, new slabs), changes it. So does a slab
  // replaced under its name or cut short. This is the live poll, run while
  // nothing else happens: it reads the slabs with pread and stat, never through
  // their mappings, so a file truncated under a mapping cannot end it in SIGBUS.
  std::uint64_t Signature() const
  {
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](std::uint64_t v) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    };
    struct stat st
    {
    };
    if (!this->DescriptorPath.empty() && ::stat(this->DescriptorPath.c_str(), &st) == 0)
    {
      mix(static_cast<std::uint64_t>(st.st_ino));
      mix(static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000ULL +
        static_cast<std::uint64_t>(st.st_mtim.tv_nsec));
    }
    else
    {
      mix(0xdeadULL); // "no descriptor" is a state of its own
    }
    for (const auto& m : this->Used)
    {
      slabcast::SlabHeader header{};
      mix(m->read_header(header) ? header.live.generation.load(std::memory_order_acquire)
                                 : 0xc07ULL); // cut below its header
      mix(m->still_whole() ? 1 : 2);
      mix(::stat(m->path().c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0);
    }
    return h;
  }

  void RecordExecution()
  {
    this->Attempted = true;
    this->SignatureAtExecute = this->Signature();
    this->SignatureSeenByMTime = this->SignatureAtExecute;
  }
};

vtkStandardNewMacro(vtkSlabcastReader);

//------------------------------------------------------------------------------
vtkSlabcastReader::vtkSlabcastReader()
  : Internals(new vtkInternals)
{
  this->SetNumberOfInputPorts(0);
  this->SetNumberOfOutputPorts(1);
}

//------------------------------------------------------------------------------
vtkSlabcastReader::~vtkSlabcastReader()
{
  this->SetFileName(nullptr);
  // Arrays handed out keep their own references to the mappings they use.
  delete this->Internals;
}

//------------------------------------------------------------------------------
vtkMTimeType vtkSlabcastReader::GetMTime()
{
  vtkMTimeType t = this->Superclass::GetMTime();
  vtkInternals& in = *this->Internals;
  if (!this->Pause && in.Attempted)
  {
    // Every rank runs this on its own slabs, so each re-executes exactly when
    // the memory behind its own piece moved to a new step.
    const std::uint64_t now = in.Signature();
    if (now != in.SignatureSeenByMTime)
    {
      in.SignatureSeenByMTime = now;
      in.LiveTime.Modified();
    }
    t = std::max<vtkMTimeType>(t, in.LiveTime.GetMTime());
  }
  return t;
}

//------------------------------------------------------------------------------
bool vtkSlabcastReader::GetNeedsUpdate()
{
  vtkInternals& in = *this->Internals;
  if (this->Pause || !in.Attempted || in.Signature() == in.SignatureAtExecute)
  {
    return false;
  }
  // ParaView's LiveSource behaviour marks the proxy modified but leaves the
  // algorithm's own modification time to the algorithm.
  this->Modified();
  return true;
}

//------------------------------------------------------------------------------
int vtkSlabcastReader::RequestInformation(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  vtkInternals& in = *this->Internals;
  in.HaveDescriptor = false;
  in.DescriptorPath = this->FileName ? this->FileName : "";
  if (in.DescriptorPath.empty())
  {
    vtkErrorMacro(<< "no FileName set: give the path of a .slabcast descriptor");
    return 0;
  }
  try
  {
    in.Descriptor = slabcast::read_descriptor(in.DescriptorPath);
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    in.Used.clear();
    in.RecordExecution(); // so that a descriptor appearing later counts as news
    return 0;
  }
  in.HaveDescriptor = true;
  const slabcast::Descriptor& d = in.Descriptor;

  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  const int whole[6] = { 0, static_cast<int>(d.dims.nx - 1), 0, static_cast<int>(d.dims.ny - 1), 0,
    static_cast<int>(d.dims.nz - 1) };
  outInfo->Set(vtkStreamingDemandDrivenPipeline::WHOLE_EXTENT(), whole, 6);
  outInfo->Set(vtkDataObject::ORIGIN(), d.origin, 3);
  outInfo->Set(vtkDataObject::SPACING(), d.spacing, 3);
  vtkDataObject::SetPointDataActiveScalarInfo(outInfo, VTK_FLOAT, 1);
  // Pieces along z: with NZ = slabs x depth, piece k of one-per-slab is exactly
  // slab k's stored planes (owned + one ghost below), see slabcast/volume.h.
  outInfo->Set(CAN_PRODUCE_SUB_EXTENT(), 1);
  outInfo->Set(vtkExtentTranslator::UPDATE_SPLIT_MODE(), vtkExtentTranslator::Z_SLAB_MODE);
  return 1;
}

namespace
{

// The array points into the mapping; the mapping outlives the array.
vtkFloatArray* ZeroCopyArray(const MappingPtr& mapping, const slabcast::Dims& dims, int z0, int z1)
{
  // The pages are handed to VTK as they are: the file must still cover them.
  if (!mapping->still_whole())
  {
    throw std::runtime_error(mapping->path() + ": truncated under the reader (the file shrank)");
  }
  const float* first =
    mapping->values() + (z0 - mapping->geometry().stored_z_begin) * dims.plane();
  const vtkIdType n = static_cast<vtkIdType>(dims.plane()) * (z1 - z0 + 1);
  vtkFloatArray* a = vtkFloatArray::New();
  slabcast_reader::RetainForArray(mapping, first);
  // VTK's arrays are not const-aware; the memory is mapped read-only.
  a->SetArray(const_cast<float*>(first), n, 0, vtkAbstractArray::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&slabcast_reader::ReleaseFromArray);
  return a;
}

// The memory of a copied extent comes straight from mmap and goes back with
// munmap. Through malloc, glibc's adaptive threshold moves such blocks (8 MiB
// for a 128^3 volume, one per new step) from mmap into the heap after the
// first few frees, and a renderer's private memory then rose by a block's size
// during a soak (docs/performance.md, section 7). The first page holds the
// mapping's length, so the values stay page-aligned.
constexpr std::size_t kPage = 4096;

void UnmapValues(void* values)
{
  auto* base = static_cast<std::uint8_t*>(values) - kPage;
  std::size_t length = 0;
  std::memcpy(&length, base, sizeof length);
  ::munmap(base, length);
}

float* MapValues(vtkIdType count)
{
  const std::size_t length = kPage + static_cast<std::size_t>(count) * sizeof(float);
  const std::size_t memory =
    static_cast<std::size_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (length > memory)
  {
    throw std::runtime_error("the copied extent needs " + std::to_string(length >> 20) +
      " MiB, more than this host's " + std::to_string(memory >> 20) + " MiB of memory");
  }
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
  {
    throw std::runtime_error("cannot allocate " + std::to_string(length >> 20) + " MiB for the copied extent");
  }
  std::memcpy(p, &length, sizeof length);
  return reinterpret_cast<float*>(static_cast<std::uint8_t*>(p) + kPage);
}

// Assembles the extent from each plane's source slab: one copy per plane when
// the extent has whole rows, one per row otherwise. Through the mappings, once
// fstat has found each file whole (pread would close the last window in which
// a file cut short by someone else faults, but copied 3x slower: 21 against
// 7 ms per 64 MiB on this project's machine).
vtkFloatArray* CopiedArray(const slabcast_reader::SlabSelection& sel,
  const std::map<int, MappingPtr>& mappings, const slabcast::Dims& dims, const int ext[6])
{
  for (const auto& kv : mappings)
  {
    if (!kv.second->still_whole())
    {
      throw std::runtime_error(kv.second->path() + ": truncated under the reader (the file shrank)");
    }
  }
  const vtkIdType rowLength = ext[1] - ext[0] + 1;
  const vtkIdType rows = ext[3] - ext[2] + 1;
  const vtkIdType count = rowLength * rows * (ext[5] - ext[4] + 1);
  float* out = MapValues(count);
  vtkFloatArray* a = vtkFloatArray::New();
  a->SetArray(out, count, 0, vtkAbstractArray::VTK_DATA_ARRAY_USER_DEFINED);
  a->SetArrayFreeFunction(&UnmapValues);
  const bool wholeRows = rowLength == dims.nx;
  for (int z = ext[4]; z <= ext[5]; ++z)
  {
    const MappingPtr& m = mappings.at(sel.Planes[z - ext[4]].Slab);
    const slabcast::SlabGeometry& g = m->geometry();
    for (int y = ext[2]; y <= ext[3]; y += wholeRows ? static_cast<int>(rows) : 1)
    {
      const vtkIdType n = wholeRows ? rowLength * rows : rowLength;
      std::memcpy(out, m->values() + slabcast::slab_offset(dims, g, ext[0], y, z),
        static_cast<std::size_t>(n) * sizeof(float));
      out += n;
    }
  }
  return a;
}

// The headers of the slabs behind an output, read with pread as they are now.
struct Headers
{
  explicit Headers(const std::vector<MappingPtr>& used)
    : Count(used.size())
    , Items(new slabcast::SlabHeader[used.size()]())
  {
    for (std::size_t i = 0; i < used.size(); ++i)
    {
      if (!used[i]->read_header(this->Items[i]))
      {
        throw std::runtime_error(used[i]->path() + ": truncated under the reader (the file shrank)");
      }
    }
  }
  std::size_t Count;
  std::unique_ptr<slabcast::SlabHeader[]> Items;
};

template <class ArrayT, class Fn>
void AddPerSlab(vtkFieldData* fd, const char* name, const Headers& heads, Fn value)
{
  vtkNew<ArrayT> a;
  a->SetName(name);
  for (std::size_t i = 0; i < heads.Count; ++i)
  {
    a->InsertNextValue(value(heads.Items[i].live));
  }
  fd->AddArray(a);
}

// Step and per-slab counters, so the GUI's Information panel and scripts can
// show which step is on screen and how much of it arrived.
void AddFieldData(vtkFieldData* fd, const std::vector<MappingPtr>& used, const Headers& heads,
  vtkIdType step, int zeroCopy)
{
  vtkNew<vtkTypeInt64Array> s;
  s->SetName("Step");
  s->InsertNextValue(step);
  fd->AddArray(s);
  vtkNew<vtkIntArray> z;
  z->SetName("ZeroCopy");
  z->InsertNextValue(zeroCopy);
  fd->AddArray(z);
  vtkNew<vtkIntArray> idx;
  idx->SetName("SlabIndex");
  for (const auto& m : used)
  {
    idx->InsertNextValue(m->geometry().index);
  }
  fd->AddArray(idx);
  using L = slabcast::SlabLive;
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabStep", heads, [](const L& l) { return l.step.load(); });
  AddPerSlab<vtkTypeInt64Array>(
    fd, "SlabLastStep", heads, [](const L& l) { return l.last_step.load(); });
  AddPerSlab<vtkDoubleArray>(fd, "SlabLossPercent", heads,
    [](const L& l) { return l.last_step_loss_ppm.load() / 1e4; });
  AddPerSlab<vtkDoubleArray>(fd, "SlabProgress", heads, [](const L& l) {
    const double expected = static_cast<double>(l.step_expected.load());
    return expected > 0 ? static_cast<double>(l.step_records.load()) / expected : 0.0;
  });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabPackets", heads,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.packets.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabRejected", heads,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.rejected.load()); });
  AddPerSlab<vtkTypeInt64Array>(
    fd, "SlabStale", heads, [](const L& l) { return static_cast<vtkTypeInt64>(l.stale.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabDuplicates", heads,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.duplicates.load()); });
  AddPerSlab<vtkTypeInt64Array>(fd, "SlabGeneration", heads,
    [](const L& l) { return static_cast<vtkTypeInt64>(l.generation.load()); });
}

} // namespace

//------------------------------------------------------------------------------
int vtkSlabcastReader::RequestData(
  vtkInformation*, vtkInformationVector**, vtkInformationVector* outputVector)
{
  vtkInternals& in = *this->Internals;
  this->Step = -1;
  this->ZeroCopy = 0;
  this->ArrayAddress = this->MappingBegin = this->MappingEnd = 0;

  vtkInformation* outInfo = outputVector->GetInformationObject(0);
  vtkImageData* output = vtkImageData::GetData(outInfo);
  output->Initialize();
  if (!in.HaveDescriptor)
  {
    return 0; // RequestInformation has reported why
  }
  const slabcast::Descriptor& d = in.Descriptor;
  int ext[6];
  outInfo->Get(vtkStreamingDemandDrivenPipeline::UPDATE_EXTENT(), ext);
  output->SetOrigin(d.origin);
  output->SetSpacing(d.spacing);
  if (ext[0] > ext[1] || ext[2] > ext[3] || ext[4] > ext[5])
  {
    // More pieces than planes: this piece is empty, which is not an error.
    in.Used.clear();
    in.RecordExecution();
    return 1;
  }
  if (ext[0] < 0 || ext[1] >= d.dims.nx || ext[2] < 0 || ext[3] >= d.dims.ny || ext[4] < 0 ||
    ext[5] >= d.dims.nz)
  {
    vtkErrorMacro(<< in.DescriptorPath << ": requested extent " << ext[0] << ".." << ext[1] << ", "
                  << ext[2] << ".." << ext[3] << ", " << ext[4] << ".." << ext[5]
                  << " lies outside the volume " << slabcast::to_string(d.dims));
    return 0;
  }

  vtkFloatArray* array = nullptr;
  std::unique_ptr<Headers> heads;
  try
  {
    const slabcast_reader::SlabSelection sel =
      slabcast_reader::SelectSlabs(d, in.DescriptorPath, ext);
    std::set<int> needed{ sel.ZeroCopySlab };
    for (const auto& p : sel.Planes)
    {
      needed.insert(p.Slab);
    }
    std::map<int, MappingPtr> mappings;
    for (const auto& e : d.slabs)
    {
      if (needed.count(e.index))
      {
        mappings[e.index] = in.Pool.Get(d, in.DescriptorPath, e);
      }
    }
    in.Used.clear();
    if (sel.ZeroCopySlab >= 0)
    {
      in.Used.push_back(mappings.at(sel.ZeroCopySlab));
    }
    else
    {
      for (const auto& kv : mappings)
      {
        in.Used.push_back(kv.second);
      }
    }
    // Before the values are touched: a step that starts while we copy shows up
    // as news on the next poll instead of being lost.
    in.RecordExecution();

    if (sel.ZeroCopySlab >= 0)
    {
      const MappingPtr& m = in.Used.front();
      array = ZeroCopyArray(m, d.dims, ext[4], ext[5]);
      this->ZeroCopy = 1;
      this->MappingBegin = static_cast<vtkIdType>(reinterpret_cast<std::uintptr_t>(m->base()));
      this->MappingEnd = this->MappingBegin + static_cast<vtkIdType>(m->mapped_bytes());
    }
    else
    {
      array = CopiedArray(sel, mappings, d.dims, ext);
    }
    heads.reset(new Headers(in.Used));
  }
  catch (const std::exception& e)
  {
    vtkErrorMacro(<< e.what());
    if (array)
    {
      array->Delete();
    }
    this->ZeroCopy = 0;
    this->MappingBegin = this->MappingEnd = 0;
    in.Used.clear();
    in.RecordExecution();
    output->Initialize();
    return 0;
  }

  output->SetExtent(ext);
  array->SetName(d.field.c_str());
  output->GetPointData()->SetScalars(array);
  this->ArrayAddress = static_cast<vtkIdType>(reinterpret_cast<std::uintptr_t>(array->GetVoidPointer(0)));
  array->Delete();

  vtkIdType step = -1;
  for (std::size_t i = 0; i < heads->Count; ++i)
  {
    const vtkIdType s = heads->Items[i].live.step.load();
    step = i == 0 ? s : std::min(step, s);
  }
  this->Step = step;
  AddFieldData(output->GetFieldData(), in.Used, *heads, step, this->ZeroCopy);
  return 1;
}

//------------------------------------------------------------------------------
void vtkSlabcastReader::PrintSelf(ostream& os, vtkIndent indent)
{
  this->Superclass::PrintSelf(os, indent);
  os << indent << "FileName: " << (this->FileName ? this->FileName : "(none)") << "\n";
  os << indent << "Pause: " << this->Pause << "\n";
  os << indent << "Step: " << this->Step << "\n";
  os << indent << "ZeroCopy: " << this->ZeroCopy << "\n";
}
