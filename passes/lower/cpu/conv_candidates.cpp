// The CPU's conv2d candidates in registration order (conv_cpu.h), each given
// its input the way it reads it: every one reads the input as dense NCHW
// rows (conv_input.cpp); the GEMM-based ones version their operand reads
// themselves, and only conv.direct's flat tiles need whole rows.
#include "passes/lower/cpu/conv_cpu.h"

namespace kiln::passes::lower {

int conv_lanes(DType t, const CpuTarget& target) {
  return std::max(1, target.lanes(int(dtype_size(accum_dtype(t)))));
}

std::vector<AlgorithmLowering> cpu_conv_algorithms() {
  std::vector<AlgorithmLowering> v = {conv_direct(), conv_depthwise(), conv_winograd(), conv_1x1(),
                                      conv_im2col()};
  for (AlgorithmLowering& a : v) {
    a.targets = {TargetKind::CPU};
    const bool gemm = a.name == "conv.1x1" || a.name == "conv.im2col";
    DenseInput how = gemm ? DenseInput::Repack : DenseInput::Version;
    if (a.name == "conv.direct") how = DenseInput::VersionRows;
    a.root = with_dense_input(a.root, how);
  }
  return v;
}

}  // namespace kiln::passes::lower
