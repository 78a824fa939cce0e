#include "core/bigmodel/machinebudgets.h"

#include <nlohmann/json.hpp>

#include <functional>

namespace accel::bigmodel {

Result<DeviceBudgets> gpuBudgetsFromEnvJson(const std::string &text, const std::string &path)
{
    nlohmann::json root;
    try {
        root = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("not valid JSON: ") + e.what(), path);
    }
    DeviceBudgets budgets;
    // accel env's report keeps them under gpu.gpus; other documents are searched.
    if (root.is_object() && root.contains("gpu") && root["gpu"].is_object() && root["gpu"].contains("gpus"))
        root = root["gpu"]["gpus"];
    std::function<void(const nlohmann::json &)> visit = [&](const nlohmann::json &node) {
        if (node.is_object()) {
            if (node.contains("index") && node.contains("memory_free_bytes") && node["index"].is_number_integer() &&
                node["memory_free_bytes"].is_number()) {
                budgets.emplace_back(std::to_string(node["index"].get<int64_t>()),
                                     node["memory_free_bytes"].get<int64_t>());
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
    return orderDeviceBudgets(budgets);
}

Result<DeviceBudgets> machineBudgets(const std::string &envJsonText, const std::string &path)
{
    DeviceBudgets budgets;
    int64_t cpu = static_cast<int64_t>(availableSystemMemory());
    if (!envJsonText.empty()) {
        auto gpus = gpuBudgetsFromEnvJson(envJsonText, path);
        if (!gpus)
            return gpus;
        budgets = *gpus;
        const auto root = nlohmann::json::parse(envJsonText, nullptr, false);
        if (root.is_object() && root.contains("memory") && root["memory"].is_object() &&
            root["memory"].contains("available_bytes") && root["memory"]["available_bytes"].is_number_integer())
            cpu = root["memory"]["available_bytes"].get<int64_t>();
    }
    budgets.emplace_back("cpu", cpu);
    return budgets;
}

} // namespace accel::bigmodel
