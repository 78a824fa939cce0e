#include "app/studio/bigmodel/devicemapplan.h"

#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/modulesizes.h"

#include <nlohmann/json.hpp>

#include <unordered_map>

namespace accel::app {

namespace {

nlohmann::ordered_json deviceValue(const QString &device)
{
    if (bigmodel::isGpuDevice(device.toStdString()))
        return device.toLongLong();
    return device.toStdString();
}

QString pythonString(const QString &text)
{
    QString out = QStringLiteral("\"");
    for (const QChar c : text) {
        if (c == QLatin1Char('"') || c == QLatin1Char('\\'))
            out += QLatin1Char('\\');
        out += c;
    }
    return out + QLatin1Char('"');
}

} // namespace

DeviceMapPlan::DeviceMapPlan(const bigmodel::ModelStructure &structure, const bigmodel::DeviceMapResult &result,
                             const bigmodel::DeviceBudgets &budgets, const std::optional<bigmodel::TargetDType> &dtype,
                             const bigmodel::QuantizedLoad *quantization)
{
    std::optional<bigmodel::QuantizedSizer> sizer;
    if (quantization) {
        sizer.emplace(structure, *quantization);
        this->quantization = QString::fromStdString(quantization->method);
    }
    for (const auto &[device, bytes] : budgets) {
        m_devices << QString::fromStdString(device);
        m_budgets << (device == "disk" ? -1 : bytes);
    }
    if (!m_devices.contains(QStringLiteral("disk"))) {
        m_devices << QStringLiteral("disk");
        m_budgets << -1;
    }
    std::unordered_map<std::string, int> index;
    for (const auto &[name, device] : result.map) {
        index[name] = static_cast<int>(m_blocks.size());
        m_blocks.push_back(MapBlock{QString::fromStdString(name), QString::fromStdString(device), 0, 0});
        if (!m_devices.contains(m_blocks.back().device)) {
            m_devices << m_blocks.back().device;
            m_budgets << -1;
        }
    }
    // Each tensor belongs to the entry with the longest matching prefix; tied aliases count once.
    for (const bigmodel::ModelTensor &tensor : structure.tensors()) {
        if (!tensor.aliasOf.empty())
            continue;
        std::string key = tensor.name;
        auto it = index.find(key);
        while (it == index.end() && !key.empty()) {
            const size_t dot = key.rfind('.');
            key = dot == std::string::npos ? std::string() : key.substr(0, dot);
            it = index.find(key);
        }
        if (it == index.end())
            continue;
        MapBlock &block = m_blocks[it->second];
        block.bytes += bigmodel::loadedTensorBytes(tensor, dtype, sizer ? &*sizer : nullptr);
        if (!tensor.buffer)
            block.params += tensor.elements;
    }
    for (const std::string &w : result.warnings)
        warnings << QString::fromStdString(w);
}

QVector<MapLane> DeviceMapPlan::lanes() const
{
    QVector<MapLane> lanes;
    for (int i = 0; i < m_devices.size(); ++i) {
        MapLane lane;
        lane.device = m_devices[i];
        lane.budget = m_budgets[i];
        lanes << lane;
    }
    for (int b = 0; b < m_blocks.size(); ++b) {
        const int l = static_cast<int>(m_devices.indexOf(m_blocks[b].device));
        if (l < 0)
            continue;
        lanes[l].blocks << b;
        lanes[l].used += m_blocks[b].bytes;
    }
    return lanes;
}

int DeviceMapPlan::blockIndex(const QString &name) const
{
    for (int i = 0; i < m_blocks.size(); ++i) {
        if (m_blocks[i].name == name)
            return i;
    }
    return -1;
}

QStringList DeviceMapPlan::overBudgetDevices() const
{
    QStringList over;
    for (const MapLane &lane : lanes()) {
        if (lane.overBudget())
            over << lane.device;
    }
    return over;
}

uint64_t DeviceMapPlan::totalBytes() const
{
    uint64_t total = 0;
    for (const MapBlock &b : m_blocks)
        total += b.bytes;
    return total;
}

bool DeviceMapPlan::moveBlock(const QString &name, const QString &device)
{
    const int i = blockIndex(name);
    if (i < 0 || !m_devices.contains(device))
        return false;
    m_blocks[i].device = device;
    return true;
}

QByteArray DeviceMapPlan::toJson() const
{
    nlohmann::ordered_json j;
    j["schema"] = bigmodel::DeviceMapPlanSchema;
    j["version"] = bigmodel::DeviceMapVersion;
    j["model"] = model.toStdString();
    j["strategy"] = strategy.toStdString();
    j["dtype"] =
        dtypeName.isEmpty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(dtypeName.toStdString());
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const MapBlock &b : m_blocks)
        map[b.name.toStdString()] = deviceValue(b.device);
    j["device_map"] = map;
    nlohmann::ordered_json lanesJson = nlohmann::ordered_json::array();
    for (const MapLane &lane : lanes()) {
        lanesJson.push_back(
            {{"device", deviceValue(lane.device)},
             {"budget_bytes", lane.budget < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(lane.budget)},
             {"used_bytes", lane.used},
             {"over_budget", lane.overBudget()}});
    }
    j["lanes"] = lanesJson;
    return QByteArray::fromStdString(j.dump(2) + "\n");
}

QString DeviceMapPlan::toPython() const
{
    QString out = QStringLiteral("device_map = {\n");
    for (const MapBlock &b : m_blocks) {
        const QString value = bigmodel::isGpuDevice(b.device.toStdString()) ? b.device : pythonString(b.device);
        out += QStringLiteral("    %1: %2,\n").arg(pythonString(b.name), value);
    }
    return out + QStringLiteral("}\n");
}

} // namespace accel::app
