// The software side of the report: the embedded runtime (`accel-worker --capabilities --json`)
// and Python on PATH with its torch / accelerate / numpy versions. Both tolerate absence: the
// result then says why it is unavailable.
#pragma once

#include "core/common/programs.h"
#include "core/common/result.h"
#include "core/hardware/hardwarereport.h"

#include <string>

namespace accel::hardware {

// Text shown for a Python module that cannot be found.
inline const char *notInstalled()
{
    return "not installed";
}

// Runs `workerPath --capabilities --json` and parses its answer.
WorkerCapabilities probeWorker(const std::string &workerPath, int timeoutMs = 10000);
// accel-worker capabilities' answer (core/worker/capabilities.cpp writes it).
inline constexpr const char *WorkerCapabilitiesSchema = "accel.worker-capabilities";
inline constexpr int WorkerCapabilitiesVersion = 2;
// Parses {"schema":"accel.worker-capabilities","version":1,"torch_version",...}.
Result<WorkerCapabilities> parseWorkerCapabilities(const std::string &json);

// Runs `python -c <script>` (script: pythonProbeScript()) and parses its answer.
PythonInfo probePython(const std::string &python = defaultPython, int timeoutMs = 15000);
// The Python program printing {"python":"3.11.2","executable":...,"torch":"1.13.1"|null,...}.
const std::string &pythonProbeScript();
Result<PythonInfo> parsePythonProbe(const std::string &json);

} // namespace accel::hardware
