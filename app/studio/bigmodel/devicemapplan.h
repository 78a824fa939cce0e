// An editable device map for the studio: one block per device-map entry (module or tensor) with its
// bytes and parameter count, one lane per device with its budget, and the exports (JSON and a
// Python `device_map = {...}` snippet). Built from inferAutoDeviceMap's answer; moving a block
// re-checks the budgets.
#pragma once

#include "core/bigmodel/devicemap.h"

#include <QString>
#include <QStringList>
#include <QVector>

#include <cstdint>
#include <optional>

namespace accel::app {

struct MapBlock {
    QString name;   // "" is the whole model
    QString device; // "0", "1", "mps", "cpu", "disk"
    uint64_t bytes = 0;
    uint64_t params = 0;
};

struct MapLane {
    QString device;
    int64_t budget = -1; // bytes; -1 = unlimited (disk)
    uint64_t used = 0;
    QVector<int> blocks; // indices into DeviceMapPlan::blocks(), in map order
    bool overBudget() const { return budget >= 0 && used > static_cast<uint64_t>(budget); }
};

class DeviceMapPlan {
public:
    DeviceMapPlan() = default;
    // `budgets` are the limits lanes are checked against (the user's or the machine's).
    DeviceMapPlan(const bigmodel::ModelStructure &structure, const bigmodel::DeviceMapResult &result,
                  const bigmodel::DeviceBudgets &budgets, const std::optional<bigmodel::TargetDType> &dtype,
                  const bigmodel::QuantizedLoad *quantization = nullptr); // blocks at the quantized bytes

    bool isEmpty() const { return m_blocks.isEmpty(); }
    const QVector<MapBlock> &blocks() const { return m_blocks; }
    QVector<MapLane> lanes() const; // one per budget device, in budget order
    QStringList devices() const { return m_devices; }
    int blockIndex(const QString &name) const;
    QStringList overBudgetDevices() const;
    uint64_t totalBytes() const;

    // Sends a block to another device; false when the block or device is unknown.
    bool moveBlock(const QString &name, const QString &device);

    QString model;
    QString strategy;
    QString dtypeName;    // empty = as stored
    QString quantization; // empty = none; else the method the blocks' bytes are quantized with
    QStringList warnings;

    // {"schema": "accel.device-map-plan", "version": 1, "model", "strategy", "dtype", "device_map",
    //  "lanes": [{"device", "budget_bytes"|null, "used_bytes", "over_budget"}]}; GPU indices as integers.
    QByteArray toJson() const;
    // `device_map = {"transformer.wte": 0, ...}` ready for from_pretrained(device_map=...).
    QString toPython() const;

private:
    QVector<MapBlock> m_blocks;
    QStringList m_devices;
    QVector<int64_t> m_budgets;
};

} // namespace accel::app
