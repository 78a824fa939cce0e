// Hugging Face Hub model ids ("meta-llama/Llama-3.1-8B", "gpt2", "ORG/NAME@REVISION") for the
// planning commands (estimate-memory, device-map, inspect) and the studio, through loadModel():
//   1. the local Hugging Face cache, laid out as huggingface_hub keeps it
//      (<cache>/models--ORG--NAME/refs/<revision> holds a commit, snapshots/<commit>/<file> the
//      files): used when it holds the model's config.json and a whole checkpoint;
//   2. otherwise the Hub's HTTP API at $HF_ENDPOINT (default https://huggingface.co), fetching only
//      what planning needs: config.json, the safetensors index, and each shard's header through
//      HTTP range requests (no tensor data). $HF_TOKEN (else the token file huggingface_hub
//      writes) is sent as a bearer token. Nothing is written to the cache.
// With HF_HUB_OFFLINE set, a model the cache lacks is an error naming the cache folder.
#pragma once

#include "core/bigmodel/modelloader.h"
#include "core/common/result.h"

#include <optional>
#include <string>

namespace accel::bigmodel {

struct HubModelId {
    std::string repo;     // "ORG/NAME" or "NAME"
    std::string revision; // branch, tag or commit; "main" unless given after "@"
    std::string text() const { return revision == "main" ? repo : repo + "@" + revision; }
};
// "ORG/NAME" or "NAME" (letters, digits, "-", "_", "."; no "--" or ".."; at most 96 characters),
// optionally "@REVISION"; nullopt for anything else (paths, file names such as config.json).
std::optional<HubModelId> parseHubModelId(const std::string &text);

struct HubSettings {
    std::string cache;    // $HF_HUB_CACHE, else $HF_HOME/hub
    std::string endpoint; // $HF_ENDPOINT, else https://huggingface.co (no trailing "/")
    std::string token;    // $HF_TOKEN, else $HF_TOKEN_PATH's or $HF_HOME/token's first line; may be empty
    bool offline = false; // HF_HUB_OFFLINE is 1, true, yes or on
};
HubSettings hubSettingsFromEnvironment();

// <cache>/models--ORG--NAME
std::string hubRepoFolder(const HubSettings &settings, const std::string &repo);

// The model of a Hub id: from the cache, else from the Hub (config.json, index, shard headers).
Result<LoadedModel> loadHubModel(const HubModelId &id, const HubSettings &settings);

} // namespace accel::bigmodel
