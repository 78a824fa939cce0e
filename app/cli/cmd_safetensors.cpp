// accel inspect CHECKPOINT: validates a safetensors checkpoint (single file, folder or sharded
// index) and shows its files, metadata, dtypes, the module tree with parameter counts and sizes,
// tied weights and the family's no-split block; optionally every tensor.
#include "app/cli/argparser.h"
#include "app/cli/command.h"
#include "core/bigmodel/memorysize.h"
#include "core/bigmodel/modelloader.h"
#include "core/bigmodel/modulesizes.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>

namespace {

using namespace accel;
using namespace accel::bigmodel;

struct ModuleRow {
    std::string name;
    std::string className;
    uint64_t parameters = 0;
    uint64_t bytes = 0;
};

// Modules down to `depth` dots (depth 1 = the root's children), in registration order.
std::vector<ModuleRow> moduleRows(const ModelStructure &s, int depth)
{
    std::map<std::string, uint64_t> parameters;
    for (const ModelTensor &t : s.tensors()) {
        if (t.buffer || !t.aliasOf.empty())
            continue;
        for (std::string p = parentName(t.name);; p = parentName(p)) {
            parameters[p] += t.elements;
            if (p.empty())
                break;
        }
    }
    const ModuleSizes sizes(s, std::nullopt);
    std::vector<ModuleRow> rows;
    for (const ModuleInfo &m : s.modules()) {
        const int dots = m.name.empty() ? 0 : 1 + static_cast<int>(std::count(m.name.begin(), m.name.end(), '.'));
        if (dots > depth)
            continue;
        rows.push_back({m.name, m.className, parameters[m.name], sizes.of(m.name)});
    }
    return rows;
}

std::string shapeText(const std::vector<int64_t> &shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int runInspect(int argc, char **argv)
{
    cli::ArgParser parser("accel inspect",
                          "Validate a safetensors checkpoint and show its files, metadata, dtypes, module tree, tied "
                          "weights and no-split block (headers only; no tensor data is read).");
    parser.addPositional({"CHECKPOINT",
                          "model folder, .safetensors file, *.safetensors.index.json, or a Hugging "
                          "Face Hub id ORG/NAME[@REVISION] (the local cache, else the Hub: headers only)"});
    parser.addValue("depth", "N", "module tree depth to show", "2");
    parser.addFlag("tensors", "list every tensor (name, dtype, shape, bytes, file)");
    parser.addFlag("json", "print a JSON object (schema accel.inspect)");
    if (!parser.parse(argc, argv, 1)) {
        if (parser.helpRequested()) {
            std::fputs(parser.helpText().c_str(), stdout);
            return cli::ExitOk;
        }
        std::fprintf(stderr, "accel inspect: %s\n", parser.error().c_str());
        return cli::ExitBadInput;
    }
    char *end = nullptr;
    const std::string depthText = parser.valueOr("depth", "2");
    const long depth = std::strtol(depthText.c_str(), &end, 10);
    if (!end || *end != '\0' || depth < 0) {
        std::fprintf(stderr, "accel inspect: --depth takes a non-negative integer, got '%s'\n", depthText.c_str());
        return cli::ExitBadInput;
    }
    const std::string path = *parser.firstPositional("CHECKPOINT");
    auto model = loadModel(path);
    if (!model) {
        std::fprintf(stderr, "accel inspect: %s\n", model.error().toString().c_str());
        return exitCodeFor(model.error());
    }
    if (!model->checkpoint) {
        std::fprintf(stderr,
                     "accel inspect: %s: no safetensors checkpoint here (config.json alone: use estimate-memory)\n",
                     path.c_str());
        return cli::ExitBadInput;
    }
    const Checkpoint &checkpoint = *model->checkpoint;
    const ModelStructure &s = model->structure;
    std::vector<std::string> warnings = s.warnings;
    for (const auto &shard : checkpoint.shards()) {
        std::string warning;
        if (auto ok = checkTorchFormat(*shard, &warning); !ok)
            warnings.push_back(ok.error().toString());
        else if (!warning.empty())
            warnings.push_back(warning);
    }
    for (const std::string &w : warnings)
        std::fprintf(stderr, "accel inspect: warning: %s\n", w.c_str());
    const auto rows = moduleRows(s, static_cast<int>(depth));
    std::map<std::string, std::pair<uint64_t, uint64_t>> byDtype; // code → (tensors, bytes)
    for (const TensorInfo *t : checkpoint.tensors()) {
        auto &entry = byDtype[dtypeCode(t->dtype)];
        entry.first += 1;
        entry.second += t->byteSize();
    }

    if (parser.isSet("json")) {
        nlohmann::ordered_json j;
        j["schema"] = "accel.inspect";
        j["version"] = 1;
        j["path"] = path;
        j["index"] =
            checkpoint.isSharded() ? nlohmann::ordered_json(checkpoint.indexPath()) : nlohmann::ordered_json(nullptr);
        nlohmann::ordered_json files = nlohmann::ordered_json::array();
        for (const auto &shard : checkpoint.shards())
            files.push_back({{"file", shard->path()},
                             {"tensors", shard->tensors().size()},
                             {"bytes", shard->header().dataSize},
                             {"metadata", shard->metadata()}});
        j["files"] = files;
        nlohmann::ordered_json dtypes = nlohmann::ordered_json::object();
        for (const auto &[code, entry] : byDtype)
            dtypes[code] = {{"tensors", entry.first}, {"bytes", entry.second}};
        j["dtypes"] = dtypes;
        j["family"] = s.family.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.family);
        j["parameters"] = s.parameterCount();
        j["bytes"] = checkpoint.totalBytes();
        j["no_split"] = s.noSplitClasses;
        j["tied"] = s.tiedGroups();
        j["warnings"] = warnings;
        nlohmann::ordered_json modules = nlohmann::ordered_json::array();
        for (const ModuleRow &r : rows)
            modules.push_back(
                {{"name", r.name}, {"class", r.className}, {"parameters", r.parameters}, {"bytes", r.bytes}});
        j["modules"] = modules;
        if (parser.isSet("tensors")) {
            nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
            for (const TensorInfo *t : checkpoint.tensors())
                tensors.push_back({{"name", t->name},
                                   {"dtype", dtypeCode(t->dtype)},
                                   {"shape", t->shape},
                                   {"bytes", t->byteSize()},
                                   {"file", checkpoint.shardOf(t->name)->path()}});
            j["tensors"] = tensors;
        }
        std::printf("%s\n", j.dump(2).c_str());
        return cli::ExitOk;
    }

    std::printf("checkpoint: %s (%zu file%s%s)\n", path.c_str(), checkpoint.shards().size(),
                checkpoint.shards().size() == 1 ? "" : "s", checkpoint.isSharded() ? ", sharded" : "");
    for (const auto &shard : checkpoint.shards()) {
        std::string metadata;
        for (const auto &[key, value] : shard->metadata())
            metadata += " " + key + "=" + value;
        std::printf("  %s: %zu tensors, %s%s%s\n", shard->path().c_str(), shard->tensors().size(),
                    formatBinarySize(shard->header().dataSize).c_str(), metadata.empty() ? "" : ", metadata",
                    metadata.c_str());
    }
    std::printf("dtypes:");
    for (const auto &[code, entry] : byDtype)
        std::printf(" %s (%llu tensors, %s)", code.c_str(), static_cast<unsigned long long>(entry.first),
                    formatBinarySize(entry.second).c_str());
    std::printf("\nfamily: %s%s%s; parameters: %llu; no-split: %s\n", s.family.empty() ? "unknown" : s.family.c_str(),
                s.architecture.empty() ? "" : " ", s.architecture.c_str(),
                static_cast<unsigned long long>(s.parameterCount()),
                s.noSplitClasses.empty() ? "none" : s.noSplitClasses.front().c_str());
    for (const auto &group : s.tiedGroups()) {
        std::string names;
        for (const std::string &n : group)
            names += (names.empty() ? "" : " = ") + n;
        std::printf("tied: %s\n", names.c_str());
    }
    std::printf("\nmodules (depth %ld):\n", depth);
    for (const ModuleRow &r : rows) {
        const int dots = r.name.empty() ? 0 : 1 + static_cast<int>(std::count(r.name.begin(), r.name.end(), '.'));
        const std::string label =
            std::string(static_cast<size_t>(dots) * 2, ' ') + (r.name.empty() ? "(model)" : r.name);
        std::printf("  %-48s %-28s %16llu params  %s\n", label.c_str(), r.className.c_str(),
                    static_cast<unsigned long long>(r.parameters), formatBinarySize(r.bytes).c_str());
    }
    if (parser.isSet("tensors")) {
        std::printf("\ntensors:\n");
        for (const TensorInfo *t : checkpoint.tensors())
            std::printf("  %-56s %-8s %-20s %12llu  %s\n", t->name.c_str(), dtypeCode(t->dtype),
                        shapeText(t->shape).c_str(), static_cast<unsigned long long>(t->byteSize()),
                        checkpoint.shardOf(t->name)->path().c_str());
    }
    return cli::ExitOk;
}

} // namespace

static accel::cli::Registrar registrar({"inspect", "validate a safetensors checkpoint and show its structure",
                                        &runInspect});
