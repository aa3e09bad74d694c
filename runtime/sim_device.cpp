// The simulated devices' runtimes: a bounded caching pool each, memcpy copies
// that check both sides live where this device can reach. See sim_device.h.
#include "runtime/sim_device.h"

#include <cstring>

#include "kiln/error.h"
#include "runtime/allocator.h"

namespace kiln::runtime {
namespace {

DeviceProperties sim_properties() {
  DeviceProperties p;
  p.name = "sim (simulated GPU)";
  p.gpu = true;
  p.compute_capability_major = 9;
  p.compute_capability_minor = 0;
  p.sm_count = 132;
  p.warp_size = 32;
  p.shared_memory_per_block = 48 << 10;
  p.shared_memory_per_block_optin = 227 << 10;
  p.max_threads_per_block = 1024;
  p.registers_per_sm = 65536;
  p.total_memory = int64_t(kSimMemoryBytes);
  return p;
}

class SimRuntime final : public DeviceRuntime {
 public:
  explicit SimRuntime(int index)
      : device_(Device::sim(index)),
        properties_(sim_properties()),
        pool_(device_, kSimMemoryBytes) {}

  Device device() const override { return device_; }
  const DeviceProperties& properties() const override { return properties_; }
  std::shared_ptr<Storage> allocate(size_t nbytes) override { return pool_.allocate(nbytes); }

  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t nbytes,
            Stream) override {
    auto reachable = [](Device d) { return d.is_cpu() || d.kind == Device::Kind::Sim; };
    KILN_INTERNAL_CHECK((dst.device() == device_ || src.device() == device_) &&
                            reachable(dst.device()) && reachable(src.device()),
                        device_.str() << " cannot copy from " << src.device().str() << " to "
                                      << dst.device().str());
    check_copy_range(dst, dst_offset, nbytes, "copy destination");
    check_copy_range(src, src_offset, nbytes, "copy source");
    if (nbytes == 0) return;
    std::memmove(static_cast<char*>(dst.data()) + dst_offset,
                 static_cast<const char*>(src.data()) + src_offset, nbytes);
  }

  void synchronize(Stream) override {}  // everything already ran
  void release_cached() override { pool_.release_cached(); }

 private:
  Device device_;
  DeviceProperties properties_;
  CachingAllocator pool_;
};

}  // namespace

DeviceRuntime& sim_runtime(int index) {
  KILN_INTERNAL_CHECK(index >= 0 && index < kNumSimDevices, "sim device " << index);
  // Never destroyed: storages from these pools may be released during exit.
  static SimRuntime* runtimes[kNumSimDevices] = {new SimRuntime(0), new SimRuntime(1)};
  return *runtimes[index];
}

}  // namespace kiln::runtime
