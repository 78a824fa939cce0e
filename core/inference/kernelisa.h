// The instruction set the quantized-weight kernels (int8gemv.h, quantkernels.h) run at: the widest
// the CPU's /proc/cpuinfo flags (hardware::parseCpuInfo) name. Each kernel file compiles every
// variant with function-level target attributes, so the build runs on any x86-64 CPU.
#pragma once

#include <string>
#include <vector>

namespace accel::inference {

enum class KernelIsa { Portable, Avx2, Avx512 };
const char *kernelIsaName(KernelIsa isa); // "portable", "avx2", "avx512"

// avx512f: Avx512; else avx2 with fma: Avx2; else the portable loops.
KernelIsa kernelIsaForFlags(const std::vector<std::string> &cpuFlags);
// This CPU's, from hostCpuFlags(); the portable loops when /proc/cpuinfo cannot be read.
KernelIsa hostKernelIsa();
// This CPU's flags (hardware::parseCpuInfo's) from /proc/cpuinfo, read once; none when it cannot be read.
const std::vector<std::string> &hostCpuFlags();

// The CPU flags of instructions libtorch's bfloat16 GEMM runs on: AMX tiles (amx_bf16) or
// AVX512_BF16's dot pairs (avx512_bf16). Without either it widens every value in software.
inline constexpr const char *kBf16GemmFlags[] = {"amx_bf16", "avx512_bf16"};
// Whether cpuFlags name any of kBf16GemmFlags.
bool hasBf16GemmFlags(const std::vector<std::string> &cpuFlags);
// This CPU's (hostCpuFlags()), read once.
bool bf16GemmHere();

} // namespace accel::inference
