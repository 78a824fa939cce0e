#include "core/config/configio.h"

#include "core/common/fileutil.h"
#include "core/common/huggingfacehome.h"
#include "core/config/configtree.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace accel::config {

ConfigFormat formatForPath(const std::string &path)
{
    const std::string suffix = ".json";
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0
               ? ConfigFormat::Json
               : ConfigFormat::Yaml;
}

std::string defaultCacheDir()
{
    return accelerateConfigFolder();
}

std::string defaultConfigPath()
{
    return accelerateDefaultConfigPath();
}

Result<ClusterConfig> parseConfig(const std::string &text, ConfigFormat format, const std::string &fileName,
                                  Diagnostics *diagnostics)
{
    if (text.size() > kMaxConfigBytes) {
        const std::string message = "the file has " + std::to_string(text.size()) +
                                    " bytes; a config file is at most " + std::to_string(kMaxConfigBytes) +
                                    " bytes (1 MiB; Accelerate's are under 2 KB)";
        if (diagnostics)
            diagnostics->push_back(Diagnostic{Severity::Error, fileName, 0, "", message});
        return makeError(ErrorCode::InvalidInput, message, fileName);
    }
    Diagnostics local;
    Result<ConfigValue> tree =
        format == ConfigFormat::Json ? parseJsonText(text, fileName, &local) : parseYamlText(text, fileName, &local);
    if (!tree) {
        if (diagnostics) {
            // Keep the line the codec reported ("file: line N") as a diagnostic too.
            Diagnostic d;
            d.file = fileName;
            const std::string &context = tree.error().context;
            const size_t at = context.rfind(": line ");
            if (at != std::string::npos)
                d.line = std::atoi(context.c_str() + at + 7);
            d.message = tree.error().message;
            diagnostics->push_back(d);
        }
        return tl::unexpected(tree.error());
    }
    ClusterConfig config = detail::readConfigTree(*tree, fileName, local);
    if (diagnostics)
        diagnostics->insert(diagnostics->end(), local.begin(), local.end());
    size_t errors = 0;
    const Diagnostic *first = nullptr;
    for (const Diagnostic &d : local) {
        if (d.severity != Severity::Error)
            continue;
        if (!first)
            first = &d;
        ++errors;
    }
    if (first) {
        std::string message = first->toString();
        if (errors > 1)
            message += " (and " + std::to_string(errors - 1) + " more problem" + (errors > 2 ? "s" : "") + ")";
        return makeError(ErrorCode::InvalidInput, message);
    }
    return config;
}

Result<ClusterConfig> loadConfigFile(const std::string &path, Diagnostics *diagnostics)
{
    Result<std::string> text = fileutil::readFile(path, kMaxConfigBytes);
    if (!text) {
        // A file that cannot be a config (a FIFO, a device, a folder, too large) is an error for
        // `accel config validate` too, not an empty list of problems.
        if (diagnostics && text.error().code == ErrorCode::InvalidInput)
            diagnostics->push_back(Diagnostic{Severity::Error, path, 0, "", text.error().message});
        return tl::unexpected(text.error());
    }
    return parseConfig(*text, formatForPath(path), path, diagnostics);
}

ConfigValue toDocument(const ClusterConfig &config)
{
    return detail::writeConfigTree(config);
}

std::string serializeConfig(const ClusterConfig &config, ConfigFormat format)
{
    const ConfigValue tree = detail::writeConfigTree(config);
    return format == ConfigFormat::Json ? emitJson(tree) : emitYaml(tree);
}

Result<void> saveConfigFile(const ClusterConfig &config, const std::string &path)
{
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec)
            return makeError(ErrorCode::Io, "cannot create folder " + parent.string() + ": " + ec.message(), path);
    }
    return fileutil::writeFileAtomic(path, serializeConfig(config, formatForPath(path)));
}

} // namespace accel::config
