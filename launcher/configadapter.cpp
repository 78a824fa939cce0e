#include "launcher/configadapter.h"

#ifdef ACCEL_LAUNCHER_HAVE_CONFIG
#include "core/config/configio.h"
#include "core/config/configvalue.h"
#endif

namespace accel::launcher {

#ifdef ACCEL_LAUNCHER_HAVE_CONFIG
namespace {

// A value as Python's str() would print it after PyYAML loaded it.
ArgValue argFromValue(const config::ConfigValue &value)
{
    using Type = config::ConfigValue::Type;
    ArgValue arg;
    arg.origin = Origin::Config;
    switch (value.type) {
    case Type::Null:
        break;
    case Type::Bool:
        arg.text = value.boolean ? "true" : "false";
        arg.isBool = true;
        break;
    case Type::Int:
        arg.text = std::to_string(value.integer);
        break;
    case Type::Float:
        arg.text = config::pythonFloatRepr(value.real);
        break;
    case Type::String:
        arg.text = value.text;
        break;
    case Type::List:
        for (const config::ConfigValue &item : value.items) {
            const ArgValue itemArg = argFromValue(item);
            arg.list.push_back(itemArg.text);
            arg.text += (arg.text.empty() ? "" : ",") + itemArg.text;
        }
        break;
    case Type::Map:
        break;
    }
    return arg;
}

} // namespace

bool haveConfigSupport()
{
    return true;
}

Result<LoadedConfig> loadLaunchConfig(const std::string &path)
{
    auto loaded = config::loadConfigFile(path);
    if (!loaded)
        return tl::unexpected(loaded.error());
    if (loaded->isSageMaker())
        return makeError(ErrorCode::Unsupported,
                         "compute_environment: AMAZON_SAGEMAKER is not supported by accel launch", path);
    // The tree Accelerate would write (nulls and empty blocks dropped), through the public codec.
    auto tree = config::parseJsonText(config::serializeConfig(*loaded, config::ConfigFormat::Json), path);
    if (!tree)
        return tl::unexpected(tree.error());
    LoadedConfig result;
    result.view.path = path;
    for (const auto &[key, value] : tree->members) {
        if (value.type == config::ConfigValue::Type::Map) {
            ArgMap &block = result.view.blocks[key];
            for (const auto &[member, memberValue] : value.members) {
                if (memberValue.type != config::ConfigValue::Type::Null)
                    block[member] = argFromValue(memberValue);
            }
        } else if (value.type != config::ConfigValue::Type::Null) {
            result.view.top[key] = argFromValue(value);
        }
    }
    result.yamlText = config::serializeConfig(*loaded, config::ConfigFormat::Yaml);
    return result;
}

#else

bool haveConfigSupport()
{
    return false;
}

Result<LoadedConfig> loadLaunchConfig(const std::string &path)
{
    return makeError(ErrorCode::Unsupported, "this build of accel has no config support (core/config missing)", path);
}

#endif

} // namespace accel::launcher
