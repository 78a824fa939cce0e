#include "core/hardware/blasprobe.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <link.h>

namespace accel::hardware {

namespace {

bool has(const std::vector<std::string> &flags, const char *flag)
{
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// What to ask for per level: the most widely built kernel family of that level.
const char *coreForLevel(int level)
{
    switch (level) {
    case 3:
        return "SkylakeX";
    case 2:
        return "Haswell";
    case 1:
        return "Sandybridge";
    default:
        return "";
    }
}

} // namespace

int openBlasCoreLevel(const std::string &coreName)
{
    std::string name = coreName;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    static const std::vector<std::pair<const char *, int>> levels = {
        {"prescott", 0},  {"core2", 0},      {"penryn", 0},      {"dunnington", 0},    {"nehalem", 0},
        {"atom", 0},      {"opteron", 0},    {"barcelona", 0},   {"bobcat", 0},        {"sandybridge", 1},
        {"bulldozer", 1}, {"piledriver", 1}, {"steamroller", 1}, {"excavator", 1},     {"haswell", 2},
        {"zen", 2},       {"skylakex", 3},   {"cooperlake", 3},  {"sapphirerapids", 3}};
    for (const auto &[known, level] : levels) {
        if (name == known)
            return level;
    }
    return -1;
}

int cpuIsaLevel(const std::vector<std::string> &flags)
{
    if (has(flags, "avx512f") && has(flags, "avx512bw") && has(flags, "avx512vl") && has(flags, "avx512dq"))
        return 3;
    if (has(flags, "avx2") && has(flags, "fma"))
        return 2;
    if (has(flags, "avx"))
        return 1;
    return 0;
}

std::string recommendedOpenBlasCore(const std::string &coreName, const std::vector<std::string> &cpuFlags)
{
    const int chosen = openBlasCoreLevel(coreName);
    const int best = cpuIsaLevel(cpuFlags);
    if (chosen < 0 || best <= chosen)
        return {};
    return coreForLevel(best);
}

std::vector<std::string> runningCpuFlags()
{
    std::vector<std::string> flags;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx"))
        flags.push_back("avx");
    if (__builtin_cpu_supports("avx2"))
        flags.push_back("avx2");
    if (__builtin_cpu_supports("fma"))
        flags.push_back("fma");
    if (__builtin_cpu_supports("avx512f"))
        flags.push_back("avx512f");
    if (__builtin_cpu_supports("avx512bw"))
        flags.push_back("avx512bw");
    if (__builtin_cpu_supports("avx512vl"))
        flags.push_back("avx512vl");
    if (__builtin_cpu_supports("avx512dq"))
        flags.push_back("avx512dq");
#endif
    return flags;
}

BlasReport probeBlas(const std::vector<std::string> &cpuFlags)
{
    BlasReport report;
    if (const char *env = std::getenv("OPENBLAS_CORETYPE"))
        report.coreTypeEnv = env;
    void *handle = dlopen("libblas.so.3", RTLD_LAZY | RTLD_LOCAL);
    if (!handle)
        return report;
    link_map *map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
        std::error_code ec;
        const auto resolved = std::filesystem::canonical(map->l_name, ec);
        report.library = ec ? std::string(map->l_name) : resolved.string();
    }
    using NameFunction = char *(*)();
    auto coreName = reinterpret_cast<NameFunction>(dlsym(handle, "openblas_get_corename"));
    auto config = reinterpret_cast<NameFunction>(dlsym(handle, "openblas_get_config"));
    if (coreName) {
        report.vendor = "OpenBLAS";
        report.coreName = coreName();
        report.config = config ? config() : "";
        // The advice concerns OpenBLAS's own choice; a user's OPENBLAS_CORETYPE is respected.
        if (report.coreTypeEnv.empty()) {
            report.recommended = recommendedOpenBlasCore(report.coreName, cpuFlags);
            if (!report.recommended.empty())
                report.reason = "OpenBLAS chose its " + report.coreName + " kernels, but this CPU runs the " +
                                report.recommended +
                                " ones (a newer CPU model than this OpenBLAS knows); fp32 matmul is several "
                                "times faster with OPENBLAS_CORETYPE=" +
                                report.recommended;
        }
    } else {
        report.vendor = "other";
    }
    dlclose(handle);
    return report;
}

} // namespace accel::hardware
