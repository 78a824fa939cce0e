// A small logger for the Qt-free core libraries. Programs choose the sink (stderr by default);
// Qt programs route it into QLoggingCategory.
#pragma once

#include <functional>
#include <string>

namespace accel::log {

enum class Level { Debug, Info, Warning, Error };

using Sink = std::function<void(Level, const std::string &category, const std::string &message)>;

void setSink(Sink sink);
void setMinimumLevel(Level level);
void write(Level level, const std::string &category, const std::string &message);

inline void debug(const std::string &category, const std::string &message)
{
    write(Level::Debug, category, message);
}
inline void info(const std::string &category, const std::string &message)
{
    write(Level::Info, category, message);
}
inline void warning(const std::string &category, const std::string &message)
{
    write(Level::Warning, category, message);
}
inline void error(const std::string &category, const std::string &message)
{
    write(Level::Error, category, message);
}

} // namespace accel::log
