#include "core/bigmodel/machinebudgets.h"

#include "core/common/jsondocument.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>

namespace accel::bigmodel {

namespace {

// Through the input guard: at most kMaxEnvReportBytes, 64 levels deep (the search below recurses).
Result<nlohmann::json> parseEnvReport(const std::string &text, const std::string &path)
{
    jsonutil::JsonLimits limits;
    limits.maxBytes = kMaxEnvReportBytes;
    return jsonutil::parseJson(text, path, limits);
}

// Byte counts and indices: whole numbers from 0 to 2^63-1.
std::optional<int64_t> count(const nlohmann::json &value)
{
    return jsonutil::integerValue(value, 0);
}

Result<DeviceBudgets> gpuBudgets(nlohmann::json root, const std::string &path)
{
    DeviceBudgets budgets;
    std::string problem;
    // accel env's report keeps them under gpu.gpus; other documents are searched.
    if (root.is_object() && root.contains("gpu") && root["gpu"].is_object() && root["gpu"].contains("gpus"))
        root = root["gpu"]["gpus"];
    std::function<void(const nlohmann::json &)> visit = [&](const nlohmann::json &node) {
        if (!problem.empty())
            return;
        if (node.is_object()) {
            if (node.contains("index") && node.contains("memory_free_bytes")) {
                const auto index = count(node["index"]), bytes = count(node["memory_free_bytes"]);
                if (!index || !bytes)
                    problem = "GPU entry with index " + jsonutil::jsonExcerpt(node["index"]) +
                              " and memory_free_bytes " + jsonutil::jsonExcerpt(node["memory_free_bytes"]) +
                              ": expected whole numbers from 0 to 9223372036854775807";
                else
                    budgets.emplace_back(std::to_string(*index), *bytes);
                return;
            }
            for (const auto &item : node.items())
                visit(item.value());
        } else if (node.is_array()) {
            for (const auto &item : node)
                visit(item);
        }
    };
    visit(root);
    if (!problem.empty())
        return makeError(ErrorCode::InvalidInput, problem, path);
    return orderDeviceBudgets(budgets);
}

} // namespace

Result<DeviceBudgets> gpuBudgetsFromEnvJson(const std::string &text, const std::string &path)
{
    auto root = parseEnvReport(text, path);
    if (!root)
        return tl::unexpected(root.error());
    return gpuBudgets(std::move(*root), path);
}

Result<DeviceBudgets> machineBudgets(const std::string &envJsonText, const std::string &path)
{
    DeviceBudgets budgets;
    int64_t cpu = static_cast<int64_t>(availableSystemMemory());
    if (!envJsonText.empty()) {
        auto root = parseEnvReport(envJsonText, path);
        if (!root)
            return tl::unexpected(root.error());
        auto gpus = gpuBudgets(*root, path);
        if (!gpus)
            return gpus;
        budgets = *gpus;
        const nlohmann::json &report = *root;
        if (report.is_object() && report.contains("memory") && report["memory"].is_object() &&
            report["memory"].contains("available_bytes")) {
            const auto available = count(report["memory"]["available_bytes"]);
            if (!available)
                return makeError(
                    ErrorCode::InvalidInput,
                    "memory.available_bytes=" + jsonutil::jsonExcerpt(report["memory"]["available_bytes"]) +
                        ": expected a whole number from 0 to 9223372036854775807",
                    path);
            cpu = *available;
        }
    }
    budgets.emplace_back("cpu", cpu);
    return budgets;
}

} // namespace accel::bigmodel
