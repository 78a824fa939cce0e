// Which BLAS libtorch will call, and whether OpenBLAS picked the right kernels for this CPU.
//
// Debian's libtorch calls whatever libblas.so.3 the system selects. OpenBLAS (built with
// DYNAMIC_ARCH) chooses its kernels from the CPU model at load time; a model newer than the
// OpenBLAS release (Debian 12 ships 0.3.21, which does not know e.g. family 6 model 207) falls
// back to the Prescott (SSE3) kernels, which run fp32 matmul several times slower than the AVX2 or
// AVX-512 kernels the CPU can run. OPENBLAS_CORETYPE, read when the library loads, overrides the
// choice. accel-worker sets it for itself (restarting once) and `accel env` reports it.
#pragma once

#include <string>
#include <vector>

namespace accel::hardware {

struct BlasReport {
    std::string library;     // the file libblas.so.3 resolves to; empty when none could be loaded
    std::string vendor;      // "OpenBLAS", or "other" (e.g. the reference BLAS)
    std::string coreName;    // OpenBLAS's kernel family: "Prescott", "Haswell", "SkylakeX", ...
    std::string config;      // openblas_get_config(): version and build options
    std::string coreTypeEnv; // OPENBLAS_CORETYPE as set in the environment, if any
    std::string recommended; // a better OPENBLAS_CORETYPE for this CPU, or empty
    std::string reason;      // why `recommended` is set
};

// The ISA level an OpenBLAS kernel family needs: 0 SSE3, 1 AVX, 2 AVX2+FMA, 3 AVX-512; -1 unknown.
int openBlasCoreLevel(const std::string &coreName);
// The best level the CPU (its /proc/cpuinfo flags) runs: as above.
int cpuIsaLevel(const std::vector<std::string> &flags);
// The OPENBLAS_CORETYPE that runs this CPU's best kernels when OpenBLAS chose a lower family
// (empty otherwise, and for families this table does not know).
std::string recommendedOpenBlasCore(const std::string &coreName, const std::vector<std::string> &cpuFlags);

// The ISA flags of the running CPU that the level needs, as the compiler's CPU detection (which
// also checks that the OS saves the AVX/AVX-512 registers) reports them.
std::vector<std::string> runningCpuFlags();

// Loads libblas.so.3 as libtorch would (then unloads it) and reads OpenBLAS's choice.
BlasReport probeBlas(const std::vector<std::string> &cpuFlags);

} // namespace accel::hardware
