#include "SlabPool.h"

#include "slabcast/confined_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace slabcast_reader
{
namespace
{

// The slab must be the one the descriptor describes; a mismatch (a stale file
// left by another run, a hand-edited descriptor) would otherwise show as a
// scrambled volume or an out-of-range read.
void CheckAgainstDescriptor(const slabcast::SlabMapping& m, const slabcast::Descriptor& d,
  const std::string& descriptor_path, const slabcast::SlabEntry& entry)
{
  const slabcast::SlabGeometry want =
    slabcast::slab_geometry(d.dims, d.slab_depth, entry.index, d.ghost_planes);
  const slabcast::SlabGeometry& got = m.geometry();
  std::string problem;
  if (!(m.dims() == d.dims))
  {
    problem = "volume " + slabcast::to_string(m.dims()) + ", descriptor says " +
      slabcast::to_string(d.dims);
  }
  else if (got.index != entry.index || m.slab_depth() != d.slab_depth)
  {
    problem = "slab " + std::to_string(got.index) + " of depth " + std::to_string(m.slab_depth()) +
      ", descriptor says slab " + std::to_string(entry.index) + " of depth " +
      std::to_string(d.slab_depth);
  }
  else if (got.z_begin != want.z_begin || got.z_end != want.z_end ||
    got.stored_z_begin != want.stored_z_begin)
  {
    problem = "stores planes " + std::to_string(got.stored_z_begin) + ".." +
      std::to_string(got.z_end - 1) + ", descriptor implies " + std::to_string(want.stored_z_begin) +
      ".." + std::to_string(want.z_end - 1);
  }
  else if (d.field != m.field())
  {
    problem = "field '" + m.field() + "', descriptor says '" + d.field + "'";
  }
  if (!problem.empty())
  {
    throw std::runtime_error(
      m.path() + ": does not match descriptor " + descriptor_path + ": " + problem);
  }
}

struct KeepAlive
{
  std::mutex Mutex;
  // Several arrays may point at the same address (successive outputs of one
  // unchanged piece), hence a multimap: each release drops one reference.
  std::unordered_multimap<const void*, MappingPtr> Owners;
};

KeepAlive& Registry()
{
  // Never destroyed: arrays may be released during static destruction.
  static KeepAlive* registry = new KeepAlive;
  return *registry;
}

} // namespace

MappingPtr SlabPool::Get(const slabcast::Descriptor& d, const std::string& descriptor_path,
  const slabcast::SlabEntry& entry)
{
  const std::string directory = slabcast::directory_of(descriptor_path);
  const std::string path = directory + "/" + entry.file;
  // Every slab is opened beneath the descriptor's directory, never through a
  // symbolic link (SlabMapping::open_read_only with this directory's fd).
  const int dir = ::open(directory.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct stat st
  {
  };
  if (dir < 0 || ::fstatat(dir, entry.file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
  {
    const std::string why = std::strerror(errno);
    if (dir >= 0)
    {
      ::close(dir);
    }
    this->Cache.erase(entry.index);
    throw std::runtime_error(path + ": cannot open slab " + std::to_string(entry.index) +
      " listed in " + descriptor_path + ": " + why);
  }
  // The mapping in hand while the name still leads to its file and the file
  // still covers it; else (a receiver that replaced the slab, a file cut
  // short under us) a fresh one, validated anew.
  MappingPtr mapping;
  auto it = this->Cache.find(entry.index);
  if (it != this->Cache.end() && it->second.File == entry.file &&
    it->second.Mapping->device() == static_cast<unsigned long long>(st.st_dev) &&
    it->second.Mapping->inode() == static_cast<unsigned long long>(st.st_ino) &&
    it->second.Mapping->still_whole())
  {
    mapping = it->second.Mapping;
  }
  else
  {
    this->Cache.erase(entry.index);
    try
    {
      mapping = std::make_shared<const slabcast::SlabMapping>(
        slabcast::SlabMapping::open_read_only(dir, entry.file, path));
    }
    catch (...)
    {
      ::close(dir);
      throw;
    }
    this->Cache[entry.index] = Cached{ entry.file, mapping };
  }
  ::close(dir);
  // Also for a mapping kept from before: the descriptor may have changed.
  CheckAgainstDescriptor(*mapping, d, descriptor_path, entry);
  return mapping;
}

void RetainForArray(const MappingPtr& mapping, const void* values)
{
  KeepAlive& r = Registry();
  std::lock_guard<std::mutex> lock(r.Mutex);
  r.Owners.emplace(values, mapping);
}

void ReleaseFromArray(void* values)
{
  MappingPtr last; // unmapped outside the lock, if this was the last reference
  KeepAlive& r = Registry();
  std::lock_guard<std::mutex> lock(r.Mutex);
  auto it = r.Owners.find(values);
  if (it != r.Owners.end())
  {
    last = std::move(it->second);
    r.Owners.erase(it);
  }
}

std::size_t ArraysHoldingMappings()
{
  KeepAlive& r = Registry();
  std::lock_guard<std::mutex> lock(r.Mutex);
  return r.Owners.size();
}

} // namespace slabcast_reader
