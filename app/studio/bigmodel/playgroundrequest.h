// What the Playground sends its `accel-worker serve` and what it says about memory, built from
// what the page shows (no widgets): the load options, the prompt as text or token ids, and the
// line of bytes per device (planned) and where the worker put the tensors (loaded).
#pragma once

#include "app/studio/bigmodel/devicemapplan.h"

#include <QJsonObject>
#include <QString>

namespace accel::app {

// The planned (and possibly edited) device map when `planIsForFolder`, else "auto" (the worker
// plans); "threads" when above 0.
QJsonObject playgroundLoadOptions(const DeviceMapPlan &plan, bool planIsForFolder, int threads);
// What bounds decode for the loaded model (the "loaded" event's quantization and decode_bound):
// "int8: 48 Linear layers quantized (85.0 MiB for 340.0 MiB in float32). Decode reads 162.4 MiB of
// weights per token; this machine's memory bandwidth (10.3 GB/s) bounds it at 63.2 tokens/s."
QString playgroundDecodeBoundText(const QJsonObject &loaded);
// Puts the prompt into a generate request: "prompt", or "input_ids" for a model without
// tokenizer.json ("1, 2 3"). Returns why it cannot be sent (empty text, not only ids); empty on success.
QString addPlaygroundPrompt(QJsonObject &request, const QString &text, bool asTokenIds);
// "Planned: GPU 0: 1.2 GiB in 12 entries, cpu: ….", then, once loaded, "Worker (pid N): …".
QString playgroundMemoryText(const DeviceMapPlan &plan, const QJsonObject &loaded, qint64 workerPid);

} // namespace accel::app
