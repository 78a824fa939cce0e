#include "core/bigmodel/memorysize.h"

#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace accel::bigmodel {

namespace {

bool endsWithIgnoringCase(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && text::equalsIgnoringCase(s.substr(s.size() - suffix.size()), suffix);
}

bool parseNumber(const std::string &text, double *value)
{
    if (text.empty())
        return false;
    char *end = nullptr;
    *value = std::strtod(text.c_str(), &end);
    return end && *end == '\0' && std::isfinite(*value);
}

using text::trim;

// Python's repr of round(x, 2) for a float: shortest form, at least one decimal.
std::string pythonRound2(double x)
{
    // Python's round(x, 2) rounds the exact binary value, ties to even (72.125 -> 72.12), as
    // printf's "%.2f" does; multiplying by 100 first would round 72.125 up.
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.2f", x);
    std::string s = buffer;
    while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.')
        s.pop_back();
    return s;
}

} // namespace

Result<int64_t> parseMemorySize(const std::string &given)
{
    const std::string text = trim(given);
    const auto bad = [&] {
        return makeError(ErrorCode::InvalidInput,
                         "\"" + given +
                             "\" is not a memory size: use an integer number of bytes or a "
                             "number with GiB, MiB, KiB (powers of 2) or GB, MB, KB (powers of 10)");
    };
    struct Unit {
        const char *suffix;
        double factor;
        bool decimal;
    };
    static const Unit units[] = {{"GIB", 1073741824.0, false},
                                 {"MIB", 1048576.0, false},
                                 {"KIB", 1024.0, false},
                                 {"GB", 1e9, true},
                                 {"MB", 1e6, true},
                                 {"KB", 1e3, true}};
    bool allDigits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (allDigits) {
        if (text.size() > 18)
            return bad();
        return static_cast<int64_t>(std::stoll(text));
    }
    for (const Unit &u : units) {
        if (!endsWithIgnoringCase(text, u.suffix))
            continue;
        const size_t n = std::string(u.suffix).size();
        double value = 0;
        if (!parseNumber(trim(text.substr(0, text.size() - n)), &value) || value < 0 || value * u.factor > 9.2e18)
            return bad();
        int64_t bytes = static_cast<int64_t>(value * u.factor);
        // Accelerate's quirk: a lower-case final "b" (5Gb, 5gb) means bits.
        if (u.decimal && text.back() == 'b')
            bytes /= 8;
        return bytes;
    }
    return bad();
}

std::string formatAccelerateSize(double size)
{
    static const char *labels[] = {"bytes", "KB", "MB", "GB", "TB"};
    bool integral = std::floor(size) == size;
    for (const char *label : labels) {
        if (size < 1024.0) {
            if (integral)
                return std::to_string(static_cast<int64_t>(size)) + " " + label;
            return pythonRound2(size) + " " + label;
        }
        size /= 1024.0;
        integral = false;
    }
    return pythonRound2(size) + " PB";
}

std::string formatBinarySize(uint64_t bytes)
{
    static const char *labels[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double size = static_cast<double>(bytes);
    int unit = 0;
    while (size >= 1024.0 && unit < 5) {
        size /= 1024.0;
        ++unit;
    }
    char buffer[64];
    if (unit == 0)
        std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buffer, sizeof buffer, "%.2f %s", size, labels[unit]);
    return buffer;
}

bool isGpuDevice(const std::string &device)
{
    return !device.empty() && std::all_of(device.begin(), device.end(),
                                          [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

Result<DeviceBudgets> orderDeviceBudgets(const DeviceBudgets &budgets)
{
    std::map<long, int64_t> gpus;
    std::map<std::string, int64_t> others;
    for (const auto &[device, budget] : budgets) {
        const bool gpu = isGpuDevice(device) && device.size() < 6;
        if (!gpu && device != "mps" && device != "cpu" && device != "disk") {
            std::string hint;
            const size_t colon = device.find(':');
            if (colon != std::string::npos && isGpuDevice(device.substr(colon + 1)))
                hint = "; for " + device + " write " + device.substr(colon + 1);
            return makeError(ErrorCode::InvalidInput,
                             "max_memory: device \"" + device +
                                 "\" is not recognized; as in Accelerate, the devices are integers (the index of "
                                 "each GPU, XPU, NPU, MLU, MUSA or HPU device), mps, cpu and disk" +
                                 hint);
        }
        const bool repeated = gpu ? gpus.count(std::stol(device)) > 0 : others.count(device) > 0;
        if (repeated)
            return makeError(ErrorCode::InvalidInput, "max_memory: device " + device + " is given twice");
        if (gpu)
            gpus[std::stol(device)] = budget;
        else
            others[device] = budget;
    }
    DeviceBudgets ordered;
    for (const auto &[index, budget] : gpus)
        ordered.emplace_back(std::to_string(index), budget);
    for (const char *name : {"mps", "cpu", "disk"}) {
        if (others.count(name))
            ordered.emplace_back(name, others[name]);
    }
    return ordered;
}

Result<DeviceBudgets> parseMaxMemory(const std::string &spec)
{
    DeviceBudgets budgets;
    std::stringstream stream(spec);
    std::string item;
    while (std::getline(stream, item, ',')) {
        item = trim(item);
        if (item.empty())
            continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos)
            return makeError(ErrorCode::InvalidInput,
                             "max_memory: \"" + item + "\" is not DEVICE=SIZE (e.g. 0=10GiB,cpu=30GiB)");
        const std::string device = trim(item.substr(0, eq));
        auto size = parseMemorySize(item.substr(eq + 1));
        if (!size)
            return makeError(ErrorCode::InvalidInput, "max_memory for " + device + ": " + size.error().message);
        budgets.emplace_back(device, *size);
    }
    if (budgets.empty())
        return makeError(ErrorCode::InvalidInput, "max_memory is empty (e.g. 0=10GiB,cpu=30GiB)");
    return orderDeviceBudgets(budgets);
}

uint64_t availableSystemMemory()
{
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t value = 0;
    std::string unit;
    while (meminfo >> key >> value) {
        std::getline(meminfo, unit);
        if (key == "MemAvailable:")
            return value * 1024;
    }
    return 0;
}

} // namespace accel::bigmodel
