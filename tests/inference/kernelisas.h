// The kernel instruction sets (kernelisa.h) a test runs each decode kernel at.
#pragma once

#include "core/inference/kernelisa.h"

#include <vector>

namespace accel::test {

// Portable, and AVX2 and AVX-512 where this CPU runs them (the AVX-512 CPUs this runs on have AVX2
// and FMA too).
inline std::vector<inference::KernelIsa> isasThisCpuRuns()
{
    using inference::KernelIsa;
    std::vector<KernelIsa> isas{KernelIsa::Portable};
    const KernelIsa host = inference::hostKernelIsa();
    if (host == KernelIsa::Avx512 || host == KernelIsa::Avx2)
        isas.push_back(KernelIsa::Avx2);
    if (host == KernelIsa::Avx512)
        isas.push_back(KernelIsa::Avx512);
    return isas;
}

} // namespace accel::test
