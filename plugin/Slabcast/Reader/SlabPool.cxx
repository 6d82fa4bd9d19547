#include "SlabPool.h"

#include <sys/stat.h>

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
  const slabcast::SlabGeometry got = m.geometry();
  const auto& h = m.header();
  std::string problem;
  if (!(m.dims() == d.dims))
  {
    problem = "volume " + slabcast::to_string(m.dims()) + ", descriptor says " +
      slabcast::to_string(d.dims);
  }
  else if (h.slab_index != entry.index || h.slab_depth != d.slab_depth)
  {
    problem = "slab " + std::to_string(h.slab_index) + " of depth " + std::to_string(h.slab_depth) +
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
  else if (d.field != h.field)
  {
    problem = std::string("field '") + h.field + "', descriptor says '" + d.field + "'";
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
  struct stat st
  {
  };
  if (::stat(entry.path.c_str(), &st) != 0)
  {
    this->Cache.erase(entry.index);
    throw std::runtime_error(entry.path + ": cannot open slab " + std::to_string(entry.index) +
      " listed in " + descriptor_path + ": " + std::strerror(errno));
  }
  auto it = this->Cache.find(entry.index);
  if (it != this->Cache.end() && it->second.Path == entry.path &&
    it->second.Device == static_cast<unsigned long long>(st.st_dev) &&
    it->second.Inode == static_cast<unsigned long long>(st.st_ino) &&
    it->second.Size == static_cast<unsigned long long>(st.st_size))
  {
    return it->second.Mapping;
  }
  this->Cache.erase(entry.index);
  auto mapping =
    std::make_shared<const slabcast::SlabMapping>(slabcast::SlabMapping::open_read_only(entry.path));
  CheckAgainstDescriptor(*mapping, d, descriptor_path, entry);
  Cached c;
  c.Path = entry.path;
  c.Device = st.st_dev;
  c.Inode = st.st_ino;
  c.Size = st.st_size;
  c.Mapping = mapping;
  this->Cache[entry.index] = c;
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
