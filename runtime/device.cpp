// The host's DeviceRuntime, the registry of device runtimes, and copies
// between any two storages. See device.h.
#include "runtime/device.h"

#include <unistd.h>

#include <cstring>

#include "kiln/error.h"
#include "runtime/allocator.h"
#include "runtime/cuda/cuda_runtime.h"
#include "runtime/cuda_driver.h"
#include "runtime/sim_device.h"

namespace kiln::runtime {
namespace {

class HostRuntime final : public DeviceRuntime {
 public:
  HostRuntime() {
    properties_.name = "cpu";
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    properties_.total_memory = pages > 0 && page > 0 ? int64_t(pages) * page : 0;
  }

  Device device() const override { return Device::cpu(); }
  const DeviceProperties& properties() const override { return properties_; }
  std::shared_ptr<Storage> allocate(size_t nbytes) override {
    return CachingAllocator::global().allocate(nbytes);
  }

  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t nbytes,
            Stream) override {
    KILN_INTERNAL_CHECK(
        dst.device().is_cpu() && src.device().is_cpu(),
        "the host cannot copy from " << src.device().str() << " to " << dst.device().str());
    check_copy_range(dst, dst_offset, nbytes, "copy destination");
    check_copy_range(src, src_offset, nbytes, "copy source");
    if (nbytes == 0) return;
    std::memmove(static_cast<char*>(dst.data()) + dst_offset,
                 static_cast<const char*>(src.data()) + src_offset, nbytes);
  }

  void synchronize(Stream) override {}
  void release_cached() override { CachingAllocator::global().release_cached(); }

 private:
  DeviceProperties properties_;
};

DeviceRuntime& host_runtime() {
  static HostRuntime* r = new HostRuntime;  // outlives every Storage
  return *r;
}

}  // namespace

std::string device_unavailable_reason(Device device) {
  switch (device.kind) {
    case Device::Kind::CPU:
      return device.index == 0 ? ""
                               : "cpu:" + std::to_string(device.index) +
                                     " does not exist (the host is the one cpu device)";
    case Device::Kind::Sim:
      if (device.index >= 0 && device.index < kNumSimDevices) return "";
      return device.str() + " does not exist (" + std::to_string(kNumSimDevices) + " sim devices)";
    case Device::Kind::CUDA:
      return cuda::unavailable_reason(device.index);
  }
  return "unknown device kind";
}

DeviceRuntime& device_runtime(Device device) {
  // The host and the sim devices first, without building a message: this is
  // on the per-call path of every plan.
  if (device.kind == Device::Kind::CPU && device.index == 0) return host_runtime();
  if (device.kind == Device::Kind::Sim && device.index >= 0 && device.index < kNumSimDevices) {
    return sim_runtime(device.index);
  }
  // Says why when the device is unavailable; no lock once the device is in use.
  if (device.kind == Device::Kind::CUDA) return cuda::cuda_runtime(device.index);
  KILN_USER_ERROR("cannot use " << device.str() << ": " << device_unavailable_reason(device));
}

void check_copy_range(const Storage& s, size_t offset, size_t nbytes, const char* what) {
  KILN_INTERNAL_CHECK(offset <= s.nbytes() && nbytes <= s.nbytes() - offset,
                      what << ": bytes [" << offset << ", " << offset + nbytes
                           << ") outside a storage of " << s.nbytes() << " bytes on "
                           << s.device().str());
}

void copy_bytes(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset,
                size_t nbytes, Stream stream) {
  const Device to = dst.device(), from = src.device();
  if (to.is_cpu()) {
    device_runtime(from).copy(dst, dst_offset, src, src_offset, nbytes, stream);
    return;
  }
  KILN_USER_CHECK(from.is_cpu() || from.kind == to.kind, "cannot copy from "
                                                             << from.str() << " to " << to.str()
                                                             << " directly; copy through the host");
  device_runtime(to).copy(dst, dst_offset, src, src_offset, nbytes, stream);
}

}  // namespace kiln::runtime
