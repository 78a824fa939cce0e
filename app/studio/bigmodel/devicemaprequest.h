// What the Device Map page and the Playground plan: a model (folder, checkpoint or config.json)
// against device budgets (this machine's, typed ones, or another host's `accel env --json`) with
// a strategy, dtype and no-split classes. computeDeviceMap loads the model and plans it with
// inferAutoDeviceMap; it touches no widgets, so it runs on a worker thread.
#pragma once

#include "app/studio/bigmodel/devicemapplan.h"

#include <QString>
#include <QStringList>

namespace accel::app {

struct DeviceMapRequest {
    QString modelPath;
    QString budgetSpec;  // typed budgets; empty = this machine
    QString envJsonPath; // used when budgetSpec is empty: another host's `accel env --json`
    QString strategy = QStringLiteral("auto");
    QString dtype;        // empty = as stored
    QStringList noSplit;  // empty = the family's block
    QString quantization; // empty = none; int8, nf4, fp4: planned at the quantized bytes (the Playground's choice)
};

struct DeviceMapOutcome {
    DeviceMapPlan plan;
    QString error;
    qint64 elapsedMs = 0;
};

// Loads the model and plans it (any thread).
DeviceMapOutcome computeDeviceMap(const DeviceMapRequest &request);

} // namespace accel::app
