#include "core/bigmodel/hubmodel.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/hubhttp.h"
#include "core/bigmodel/modelfamilies.h"
#include "core/common/fileutil.h"
#include "core/common/huggingfacehome.h"
#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <regex>

namespace accel::bigmodel {

namespace fs = std::filesystem;

namespace {

// The first bytes of a shard asked for at once: most headers fit, the rest is a second request.
constexpr uint64_t kFirstHeaderBytes = 64 * 1024;
constexpr uint64_t kMaxConfigBytes = uint64_t(16) << 20;

std::string environment(const char *name)
{
    const char *value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

bool isCommitHash(const std::string &text)
{
    return text.size() == 40 &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

bool endsWith(const std::string &text, const std::string &suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Percent-encodes everything but unreserved characters (a revision "refs/pr/1" is one segment).
std::string urlSegment(const std::string &text)
{
    static const char *hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out += char(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

class HubClient {
public:
    HubClient(const HubModelId &id, const HubSettings &settings) : m_id(id), m_settings(settings) {}

    // resolve/<revision or commit>/<file>
    std::string url(const std::string &file) const
    {
        return m_settings.endpoint + "/" + m_id.repo + "/resolve/" +
               urlSegment(m_commit.empty() ? m_id.revision : m_commit) + "/" + file;
    }

    HttpResponse get(const std::string &file, uint64_t maxBytes,
                     std::optional<std::pair<uint64_t, uint64_t>> range = {})
    {
        HttpRequest request;
        request.url = url(file);
        request.maxBytes = maxBytes;
        request.range = range;
        if (!m_settings.token.empty())
            request.headers.push_back("Authorization: Bearer " + m_settings.token);
        HttpResponse response = httpGet(request);
        if (m_commit.empty() && isCommitHash(response.header("x-repo-commit")))
            m_commit = response.header("x-repo-commit");
        return response;
    }

    // An error for an answer that is not the file: names the model, the URL and what to do.
    Error failure(const HttpResponse &response, const std::string &file) const
    {
        const std::string where = url(file);
        if (response.status == 0)
            return Error{ErrorCode::Failed,
                         "cannot reach the Hugging Face Hub at " + m_settings.endpoint + " for " + m_id.text() + ": " +
                             response.error + " (HF_ENDPOINT names another Hub; HF_HUB_OFFLINE=1 uses the cache only)",
                         where};
        // The Hub's X-Error-Code first: it answers 401 both for a missing repo and for a private or
        // gated one when no token is sent, and 403 for a token without access.
        const std::string code = response.header("x-error-code");
        const std::string status = "HTTP " + std::to_string(response.status);
        if (code == "RevisionNotFound")
            return Error{ErrorCode::NotFound, m_id.text() + ": the Hub has no revision '" + m_id.revision + "'", where};
        if (code == "GatedRepo")
            return Error{ErrorCode::InvalidInput,
                         m_id.text() + " is a gated model and the Hub refused access (" + status + "): " +
                             (m_settings.token.empty()
                                  ? "set HF_TOKEN to a token of an account that accepted its conditions"
                                  : "the token (HF_TOKEN or the token file) has no access: accept the model's "
                                    "conditions on its page first"),
                         where};
        if (response.status == 401 &&
            response.header("x-error-message").find("Invalid credentials") != std::string::npos)
            return Error{ErrorCode::InvalidInput,
                         m_id.text() + ": the Hub refused the token (" + status +
                             ", invalid credentials): check HF_TOKEN or the token file",
                         where};
        if (code == "RepoNotFound" || response.status == 401 || (response.status == 404 && code != "EntryNotFound"))
            return Error{ErrorCode::NotFound,
                         "no model " + m_id.repo + " on " + m_settings.endpoint + " (" + status + ")" +
                             (m_settings.token.empty() ? ": if it is private or gated, set HF_TOKEN"
                                                       : ": if it is private or gated, the token has no access"),
                         where};
        if (response.status == 403)
            return Error{ErrorCode::InvalidInput,
                         m_id.text() + ": the Hub refused access (" + status + ")" +
                             (m_settings.token.empty() ? ": set HF_TOKEN" : ": the token has no access"),
                         where};
        if (!response.error.empty())
            return Error{ErrorCode::Failed, m_id.text() + ": " + file + ": " + response.error, where};
        return Error{ErrorCode::Failed,
                     m_id.text() + ": the Hub answered HTTP " + std::to_string(response.status) + " for " + file,
                     where};
    }

    static bool missing(const HttpResponse &response)
    {
        return response.status == 404 && response.header("x-error-code") == "EntryNotFound";
    }

    // A shard known by its header: the first bytes, then the rest of the header if it is longer.
    Result<std::shared_ptr<const SafetensorsFile>> shardHeader(const std::string &file,
                                                               const HttpResponse *first = nullptr)
    {
        HttpResponse response = first ? *first : get(file, kFirstHeaderBytes, std::make_pair(0, kFirstHeaderBytes - 1));
        if (response.status != 206 && response.status != 200)
            return tl::unexpected(failure(response, file));
        uint64_t fileSize = response.body.size();
        const std::string contentRange = response.header("content-range"); // "bytes 0-65535/123456"
        if (response.status == 206) {
            const size_t slash = contentRange.rfind('/');
            if (slash == std::string::npos || contentRange.compare(slash + 1, std::string::npos, "*") == 0)
                return makeError(ErrorCode::Failed, m_id.text() + ": " + file + ": the Hub gave no file size",
                                 url(file));
            fileSize = std::strtoull(contentRange.c_str() + slash + 1, nullptr, 10);
        }
        std::string &bytes = response.body;
        if (bytes.size() < 8)
            return makeError(ErrorCode::InvalidInput, "not a safetensors file (shorter than 8 bytes)", url(file));
        uint64_t headerSize = 0;
        for (int i = 0; i < 8; ++i)
            headerSize |= uint64_t(static_cast<unsigned char>(bytes[size_t(i)])) << (8 * i);
        if (headerSize > kMaxSafetensorsHeaderSize || headerSize + 8 > fileSize)
            return makeError(ErrorCode::InvalidInput,
                             "safetensors header of " + std::to_string(headerSize) + " bytes in a file of " +
                                 std::to_string(fileSize),
                             url(file));
        const uint64_t wanted = 8 + headerSize;
        if (bytes.size() > wanted)
            bytes.resize(wanted);
        if (bytes.size() < wanted) {
            const HttpResponse rest =
                get(file, wanted - bytes.size(), std::make_pair(uint64_t(bytes.size()), wanted - 1));
            if (rest.status != 206)
                return tl::unexpected(failure(rest, file));
            bytes += rest.body;
            if (bytes.size() != wanted)
                return makeError(ErrorCode::Failed, "the Hub sent a short header", url(file));
        }
        auto header =
            parseSafetensors(reinterpret_cast<const std::byte *>(bytes.data()), bytes.size(), fileSize, url(file));
        if (!header)
            return tl::unexpected(header.error());
        return SafetensorsFile::fromHeader(url(file), std::move(*header));
    }

    const std::string &commit() const { return m_commit; }

private:
    HubModelId m_id;
    HubSettings m_settings;
    std::string m_commit;
};

// The snapshot folder of the id's revision in the cache, or "" when the cache has none.
std::string cachedSnapshot(const HubModelId &id, const HubSettings &settings)
{
    const std::string repo = hubRepoFolder(settings, id.repo);
    std::string commit = id.revision;
    if (!isCommitHash(commit)) {
        auto ref = fileutil::readFile(repo + "/refs/" + id.revision, 4096);
        if (!ref)
            return {};
        commit = text::trim(*ref);
        if (!isCommitHash(commit))
            return {};
    }
    const std::string snapshot = repo + "/snapshots/" + commit;
    std::error_code ec;
    return fs::is_directory(snapshot, ec) ? snapshot : std::string();
}

Result<LoadedModel> fromHub(const HubModelId &id, const HubSettings &settings)
{
    HubClient hub(id, settings);
    LoadedModel model;
    model.name = id.text();
    const HttpResponse config = hub.get("config.json", kMaxConfigBytes);
    if (config.status == 200) {
        auto parsed = parseModelConfig(config.body, hub.url("config.json"));
        if (!parsed && parsed.error().code != ErrorCode::Unsupported)
            return tl::unexpected(parsed.error());
        if (parsed)
            model.config = *parsed;
        else
            model.structure.warnings.push_back(parsed.error().toString() + "; using checkpoint names only");
    } else if (!HubClient::missing(config)) {
        return tl::unexpected(hub.failure(config, "config.json"));
    }

    // Accelerate's order for a folder: model.safetensors, else the index.
    const HttpResponse single =
        hub.get("model.safetensors", kFirstHeaderBytes, std::make_pair(uint64_t(0), kFirstHeaderBytes - 1));
    std::optional<Checkpoint> checkpoint;
    if (!HubClient::missing(single)) {
        auto file = hub.shardHeader("model.safetensors", &single);
        if (!file)
            return tl::unexpected(file.error());
        checkpoint = Checkpoint::fromFile(std::move(*file));
    } else {
        const std::string indexName = "model.safetensors.index.json";
        const HttpResponse index = hub.get(indexName, kMaxIndexBytes);
        if (index.status == 200) {
            auto opened = Checkpoint::fromIndex(hub.url(indexName), index.body,
                                                [&hub](const std::string &name) { return hub.shardHeader(name); });
            if (!opened)
                return tl::unexpected(opened.error());
            checkpoint = std::move(*opened);
        } else if (!HubClient::missing(index)) {
            return tl::unexpected(hub.failure(index, indexName));
        } else if (!model.config) {
            return makeError(ErrorCode::NotFound,
                             id.text() + " has no config.json, model.safetensors or " + indexName + " on the Hub",
                             hub.url(""));
        } else {
            model.structure.warnings.push_back(id.text() + " has no model.safetensors or " + indexName +
                                               " on the Hub: planned from config.json alone");
        }
    }
    return assembleModel(std::move(model), std::move(checkpoint));
}

} // namespace

std::optional<HubModelId> parseHubModelId(const std::string &text)
{
    HubModelId id;
    const size_t at = text.find('@');
    id.repo = text.substr(0, at);
    id.revision = at == std::string::npos ? "main" : text.substr(at + 1);
    // huggingface_hub's rule: one or two names of letters, digits, "-", "_", "." that neither start
    // nor end with "-" or "."; no "--" or "..".
    static const std::regex name("[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?");
    static const std::regex repo("([A-Za-z0-9_.-]+/)?[A-Za-z0-9_.-]+");
    if (id.repo.empty() || id.repo.size() > 96 || !std::regex_match(id.repo, repo) ||
        id.repo.find("--") != std::string::npos || id.repo.find("..") != std::string::npos)
        return std::nullopt;
    const size_t slash = id.repo.find('/');
    if (!std::regex_match(id.repo.substr(0, slash), name) ||
        (slash != std::string::npos && !std::regex_match(id.repo.substr(slash + 1), name)))
        return std::nullopt;
    for (const char *suffix : {".json", ".safetensors", ".yaml", ".yml", ".bin", ".pt", ".pth", ".gguf"}) {
        if (endsWith(id.repo, suffix))
            return std::nullopt; // a file name, not a model
    }
    if (id.revision.empty() || id.revision.find("..") != std::string::npos ||
        std::any_of(id.revision.begin(), id.revision.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)) || c == '\\'; }))
        return std::nullopt;
    return id;
}

HubSettings hubSettingsFromEnvironment()
{
    HubSettings settings;
    const std::string home = huggingFaceHome();
    settings.cache = environment("HF_HUB_CACHE");
    if (settings.cache.empty())
        settings.cache = environment("HUGGINGFACE_HUB_CACHE");
    settings.cache = settings.cache.empty() ? home + "/hub" : fileutil::expandUser(settings.cache);
    settings.endpoint = environment("HF_ENDPOINT");
    if (settings.endpoint.empty())
        settings.endpoint = "https://huggingface.co";
    while (!settings.endpoint.empty() && settings.endpoint.back() == '/')
        settings.endpoint.pop_back();
    settings.token = text::trim(environment("HF_TOKEN"));
    if (settings.token.empty()) {
        std::string file = environment("HF_TOKEN_PATH");
        if (auto text = fileutil::readFile(file.empty() ? home + "/token" : fileutil::expandUser(file), 4096))
            settings.token = text::trim(text->substr(0, text->find('\n')));
    }
    const std::string offline = text::lower(environment("HF_HUB_OFFLINE"));
    settings.offline = offline == "1" || offline == "true" || offline == "yes" || offline == "on";
    return settings;
}

std::string hubRepoFolder(const HubSettings &settings, const std::string &repo)
{
    std::string name = repo;
    for (size_t at = name.find('/'); at != std::string::npos; at = name.find('/', at + 2))
        name.replace(at, 1, "--");
    return settings.cache + "/models--" + name;
}

Result<LoadedModel> loadHubModel(const HubModelId &id, const HubSettings &settings)
{
    const std::string snapshot = cachedSnapshot(id, settings);
    std::error_code ec;
    if (!snapshot.empty() && fs::exists(snapshot + "/config.json", ec)) {
        // A checkpoint in the cache is read from there; one with a shard missing (a partial
        // download) is asked of the Hub instead, unless offline.
        const bool hasCheckpoint = resolveCheckpointPath(snapshot).has_value();
        if (hasCheckpoint || settings.offline) {
            auto model = loadModel(snapshot);
            if (model) {
                model->name = id.text();
                if (!hasCheckpoint)
                    model->structure.warnings.push_back("the cache holds no safetensors checkpoint of " + id.text() +
                                                        " (" + snapshot + "): planned from config.json alone");
                return model;
            }
            if (settings.offline || model.error().code != ErrorCode::NotFound)
                return model;
        }
    }
    if (settings.offline)
        return makeError(ErrorCode::NotFound,
                         id.text() + " is not in the Hugging Face cache " + hubRepoFolder(settings, id.repo) +
                             " and HF_HUB_OFFLINE is set, so the Hub was not asked: fetch it first (hf download " +
                             id.repo + " config.json ...) or unset HF_HUB_OFFLINE");
    return fromHub(id, settings);
}

} // namespace accel::bigmodel
