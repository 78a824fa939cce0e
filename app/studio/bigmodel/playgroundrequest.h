// What the Playground sends its `accel-worker serve` and what it says about memory, built from
// what the page shows (no widgets): the load options, the prompt as text or token ids, and the
// line of bytes per device (planned) and where the worker put the tensors (loaded).
#pragma once

#include "app/studio/bigmodel/devicemapplan.h"

#include <QJsonObject>
#include <QString>

namespace accel::app {

// The planned (and possibly edited) device map when `planIsForFolder`, else "auto" (the worker
// plans). PlaygroundLoadOptions adds the threads, quantization, dtype and pinning.
QJsonObject playgroundLoadOptions(const DeviceMapPlan &plan, bool planIsForFolder);
// What bounds decode for the loaded model (the "loaded" event's quantization and decode_bound):
// "int8: 48 Linear layers quantized (85.0 MiB for 340.0 MiB in float32). Decode reads 162.4 MiB of
// weights per token; this machine's memory bandwidth (10.3 GB/s) bounds it at 63.2 tokens/s."
QString playgroundDecodeBoundText(const QJsonObject &loaded);
// The dtype the worker chose for "dtype": "auto" and its reason, and the CPUs of pinned threads (the
// "loaded" event's dtype_choice and pinned_cpus): "dtype auto: float32 (the CPU has neither ...).
// 2 intra-op threads pinned to CPUs 0, 1." Empty when the load asked for neither.
QString playgroundDecodeChoiceText(const QJsonObject &loaded);
// A generation split across hosts (PlaygroundCluster): "Generated across 2 hosts, one pipeline stage
// each: gpu1: layers 0-5 (1.2 GiB); gpu2: layers 6-11 (1.3 GiB). 32 tokens, 4.1 tokens/s." from the
// last stage's accel.generate object and the accel.hosts-launch report (the host of each rank).
QString playgroundClusterText(const QJsonObject &result, const QJsonObject &launchReport);
// Puts the prompt into a generate request: "prompt", or "input_ids" for a model without
// tokenizer.json ("1, 2 3"). Returns why it cannot be sent (empty text, not only ids); empty on success.
QString addPlaygroundPrompt(QJsonObject &request, const QString &text, bool asTokenIds);
// "Planned: GPU 0: 1.2 GiB in 12 entries, cpu: ….", then, once loaded, "Worker (pid N): …".
QString playgroundMemoryText(const DeviceMapPlan &plan, const QJsonObject &loaded, qint64 workerPid);

} // namespace accel::app
