// YAML text -> ConfigValue, through yaml-cpp (the one place that calls it and catches its
// exceptions), typing plain scalars the way PyYAML's safe loader does.
#include "core/config/configvalue.h"

// yaml-cpp 0.7's node headers trip GCC 12's dangling-pointer analysis (a false positive in their
// iterator code); silence it for them only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop

#include <exception>

namespace accel::config {

namespace {

constexpr int MaxDepth = 64;

struct Converter {
    const std::string &fileName;
    std::string error;
    int errorLine = 0;

    bool fail(int line, std::string message)
    {
        if (error.empty()) {
            error = std::move(message);
            errorLine = line;
        }
        return false;
    }

    bool scalar(const YAML::Node &node, ConfigValue &out)
    {
        const std::string &tag = node.Tag();
        const std::string &text = node.Scalar();
        if (tag == "?") {
            out = resolvePlainScalar(text);
            return true;
        }
        if (tag == "!" || tag == "tag:yaml.org,2002:str") {
            out = ConfigValue::fromString(text);
            return true;
        }
        const std::string prefix = "tag:yaml.org,2002:";
        if (tag.rfind(prefix, 0) == 0) {
            const std::string kind = tag.substr(prefix.size());
            ConfigValue typed = resolvePlainScalar(text);
            const bool matches = (kind == "int" && typed.type == ConfigValue::Type::Int)
                || (kind == "float" && (typed.type == ConfigValue::Type::Float || typed.type == ConfigValue::Type::Int))
                || (kind == "bool" && typed.type == ConfigValue::Type::Bool)
                || (kind == "null" && typed.type == ConfigValue::Type::Null);
            if (matches) {
                if (kind == "float" && typed.type == ConfigValue::Type::Int) {
                    typed.type = ConfigValue::Type::Float;
                    typed.real = static_cast<double>(typed.integer);
                }
                out = typed;
                return true;
            }
            return fail(node.Mark().line + 1, "'" + text + "' is not a valid !!" + kind);
        }
        return fail(node.Mark().line + 1, "unsupported YAML tag '" + tag + "'");
    }

    bool convert(const YAML::Node &node, ConfigValue &out, int depth)
    {
        if (depth > MaxDepth)
            return fail(node.Mark().line + 1, "nesting is deeper than " + std::to_string(MaxDepth) + " levels");
        switch (node.Type()) {
        case YAML::NodeType::Undefined:
        case YAML::NodeType::Null:
            out = ConfigValue::null();
            return true;
        case YAML::NodeType::Scalar:
            return scalar(node, out);
        case YAML::NodeType::Sequence: {
            out = ConfigValue::list();
            for (const YAML::Node &item : node) {
                ConfigValue child;
                if (!convert(item, child, depth + 1))
                    return false;
                child.line = item.Mark().line + 1;
                out.items.push_back(std::move(child));
            }
            return true;
        }
        case YAML::NodeType::Map: {
            out = ConfigValue::map();
            for (auto it = node.begin(); it != node.end(); ++it) {
                const YAML::Node &key = it->first;
                const int keyLine = key.Mark().line + 1;
                if (!key.IsScalar())
                    return fail(keyLine, "mapping keys must be plain names");
                const std::string name = key.Scalar();
                auto existing = out.members.find(name);
                if (existing != out.members.end())
                    return fail(keyLine, "duplicate key '" + name + "' (first at line " + std::to_string(existing->second.line) + ")");
                ConfigValue child;
                if (!convert(it->second, child, depth + 1))
                    return false;
                child.line = keyLine;
                out.members.emplace(name, std::move(child));
            }
            return true;
        }
        }
        return fail(0, "unreadable node");
    }
};

} // namespace

Result<ConfigValue> parseYamlText(const std::string &text, const std::string &fileName)
{
    try {
        const std::vector<YAML::Node> documents = YAML::LoadAll(text);
        if (documents.size() > 1)
            return makeError(ErrorCode::InvalidInput, "expected a single YAML document, found " + std::to_string(documents.size()), fileName);
        if (documents.empty())
            return ConfigValue::null();
        Converter converter{fileName, {}, 0};
        ConfigValue root;
        if (!converter.convert(documents.front(), root, 0)) {
            const std::string context = converter.errorLine > 0 ? fileName + ": line " + std::to_string(converter.errorLine) : fileName;
            return makeError(ErrorCode::InvalidInput, converter.error, context);
        }
        root.line = 1;
        return root;
    } catch (const YAML::Exception &e) {
        // e.what() repeats the position; e.msg is the bare reason.
        const std::string context = e.mark.is_null() ? fileName : fileName + ": line " + std::to_string(e.mark.line + 1);
        return makeError(ErrorCode::InvalidInput, "invalid YAML: " + e.msg, context);
    } catch (const std::exception &e) {
        return makeError(ErrorCode::InvalidInput, std::string("invalid YAML: ") + e.what(), fileName);
    }
}

} // namespace accel::config
