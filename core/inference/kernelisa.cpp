#include "core/inference/kernelisa.h"

#include "core/common/fileutil.h"
#include "core/hardware/procparsers.h"

#include <algorithm>

namespace accel::inference {

const char *kernelIsaName(KernelIsa isa)
{
    switch (isa) {
    case KernelIsa::Avx512:
        return "avx512";
    case KernelIsa::Avx2:
        return "avx2";
    case KernelIsa::Portable:
        break;
    }
    return "portable";
}

KernelIsa kernelIsaForFlags(const std::vector<std::string> &cpuFlags)
{
    auto has = [&](const char *flag) { return std::find(cpuFlags.begin(), cpuFlags.end(), flag) != cpuFlags.end(); };
    if (has("avx512f"))
        return KernelIsa::Avx512;
    if (has("avx2") && has("fma"))
        return KernelIsa::Avx2;
    return KernelIsa::Portable;
}

KernelIsa hostKernelIsa()
{
    static const KernelIsa isa = kernelIsaForFlags(hostCpuFlags());
    return isa;
}

const std::vector<std::string> &hostCpuFlags()
{
    static const std::vector<std::string> flags = [] {
        auto cpuinfo = fileutil::readFile("/proc/cpuinfo");
        return cpuinfo ? hardware::parseCpuInfo(*cpuinfo).flags : std::vector<std::string>{};
    }();
    return flags;
}

bool hasBf16GemmFlags(const std::vector<std::string> &cpuFlags)
{
    for (const char *flag : kBf16GemmFlags)
        if (std::find(cpuFlags.begin(), cpuFlags.end(), flag) != cpuFlags.end())
            return true;
    return false;
}

bool bf16GemmHere()
{
    static const bool here = hasBf16GemmFlags(hostCpuFlags());
    return here;
}

} // namespace accel::inference
