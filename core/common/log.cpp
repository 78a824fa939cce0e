#include "core/common/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace accel::log {
namespace {

std::mutex &mutex()
{
    static std::mutex m;
    return m;
}

Sink &sink()
{
    static Sink s;
    return s;
}

Level initialLevel()
{
    const char *env = std::getenv("ACCEL_LOG_LEVEL");
    if (!env)
        return Level::Warning;
    const std::string value(env);
    if (value == "debug" || value == "DEBUG")
        return Level::Debug;
    if (value == "info" || value == "INFO")
        return Level::Info;
    if (value == "error" || value == "ERROR")
        return Level::Error;
    return Level::Warning;
}

Level &minimumLevel()
{
    static Level level = initialLevel();
    return level;
}

const char *levelName(Level level)
{
    switch (level) {
    case Level::Debug:
        return "debug";
    case Level::Info:
        return "info";
    case Level::Warning:
        return "warning";
    case Level::Error:
        return "error";
    }
    return "?";
}

} // namespace

void setSink(Sink s)
{
    std::lock_guard<std::mutex> lock(mutex());
    sink() = std::move(s);
}

void setMinimumLevel(Level level)
{
    std::lock_guard<std::mutex> lock(mutex());
    minimumLevel() = level;
}

void write(Level level, const std::string &category, const std::string &message)
{
    std::lock_guard<std::mutex> lock(mutex());
    if (level < minimumLevel())
        return;
    if (sink()) {
        sink()(level, category, message);
        return;
    }
    std::fprintf(stderr, "%s: %s: %s\n", category.c_str(), levelName(level), message.c_str());
}

} // namespace accel::log
