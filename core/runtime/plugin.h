// The entry point of an accel-worker plugin (job recipe `plugin`, docs/jobs.md): a shared
// library built against the runtime's public headers (accelerator.h, training.h, tensorio.h)
// and linked with libaccel_runtime. accel-worker dlopen()s it and calls accel_plugin_run once
// per rank with an Accelerator that has already joined the process group.
#pragma once

#include <cstddef>

#define ACCEL_PLUGIN_API_VERSION 1

namespace accel::runtime {

class Accelerator;

struct PluginContext {
    int apiVersion = ACCEL_PLUGIN_API_VERSION;
    const char *jobPath = nullptr;   // the job file
    const char *outputDir = nullptr; // where the plugin writes results (exists)
    // The job's `plugin.settings` section as "key=value" lines (dotted keys for nesting).
    const char *settings = nullptr;
    unsigned long long seed = 0;
    char *error = nullptr; // on failure, write a message here (NUL-terminated)
    std::size_t errorSize = 0;
};

} // namespace accel::runtime

// Implemented by the plugin. Returns 0 on success, non-zero on failure (with context->error set).
extern "C" int accel_plugin_run(accel::runtime::Accelerator *accelerator, accel::runtime::PluginContext *context);
// Implemented by the plugin: must return ACCEL_PLUGIN_API_VERSION it was built with.
extern "C" int accel_plugin_api_version();
