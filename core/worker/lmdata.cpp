#include "core/worker/lmdata.h"

#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/common/text.h"
#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

namespace accel::worker {

namespace fs = std::filesystem;

namespace {

// Data files may be far larger than the configuration files readFile's default is meant for.
constexpr uint64_t kMaxDataFileBytes = uint64_t(1) << 40;

bool hasExtension(const fs::path &path, const char *extension)
{
    return path.extension() == extension;
}

bool isBlank(const std::string &line)
{
    return text::trim(line).empty();
}

// The files of `path` in reading order, or an error naming the key and the file.
Result<std::vector<fs::path>> dataFiles(const std::string &path, const std::string &key)
{
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(path, ec)) {
        for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec)) {
            if (it->path().filename().string().rfind('.', 0) == 0) {
                if (it->is_directory())
                    it.disable_recursion_pending();
                continue; // hidden files and folders
            }
            if (it->is_regular_file())
                files.push_back(it->path());
        }
        if (ec)
            return makeError(ErrorCode::Io, key + ": cannot list the folder: " + ec.message(), path);
        std::sort(files.begin(), files.end());
        if (files.empty())
            return makeError(ErrorCode::InvalidInput, key + ": the folder holds no .txt or .jsonl file", path);
    } else if (fs::is_regular_file(path, ec)) {
        files.push_back(path);
    } else {
        return makeError(ErrorCode::NotFound, key + ": " + path + " does not exist");
    }
    for (const auto &file : files) {
        if (!hasExtension(file, ".txt") && !hasExtension(file, ".jsonl"))
            return makeError(ErrorCode::InvalidInput,
                             key + ": " + file.string() +
                                 " is neither a .txt file (documents separated by blank lines) nor a .jsonl file "
                                 "(one JSON object per line)");
    }
    return files;
}

// One record of a file: a text document, or an instruction example.
struct Record {
    std::string text, completion; // instruction: text is the prompt
};

// Blank-line-separated documents: each is its lines joined by "\n" (line ends and a trailing "\r" cut).
void readText(const std::string &content, std::vector<Record> &out)
{
    std::string document;
    bool inDocument = false;
    size_t start = 0;
    while (start <= content.size()) {
        size_t end = content.find('\n', start);
        if (end == std::string::npos)
            end = content.size();
        std::string line = content.substr(start, end - start);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (isBlank(line)) {
            if (inDocument)
                out.push_back({std::move(document), {}});
            document.clear();
            inDocument = false;
        } else {
            if (inDocument)
                document += '\n';
            document += line;
            inDocument = true;
        }
        start = end + 1;
    }
    if (inDocument)
        out.push_back({std::move(document), {}});
}

Result<std::string> stringField(const nlohmann::json &object, const std::string &field, const std::string &where,
                                const std::string &what)
{
    auto it = object.find(field);
    if (it == object.end() || !it->is_string())
        return makeError(ErrorCode::InvalidInput, where + ": no string field \"" + field + "\" (" + what + "); got " +
                                                      jsonutil::jsonExcerpt(object));
    return it->get<std::string>();
}

Result<void> readJsonl(const std::string &content, const std::string &file, const LmDataOptions &options,
                       LmDataFormat &format, std::vector<Record> &out)
{
    size_t start = 0;
    int64_t lineNumber = 0;
    while (start < content.size()) {
        size_t end = content.find('\n', start);
        if (end == std::string::npos)
            end = content.size();
        ++lineNumber;
        const std::string line = content.substr(start, end - start);
        start = end + 1;
        if (isBlank(line))
            continue;
        const std::string where = options.key + ": " + file + ": line " + std::to_string(lineNumber);
        auto parsed = jsonutil::parseJson(line, where);
        if (!parsed)
            return makeError(ErrorCode::InvalidInput, parsed.error().message, where);
        if (!parsed->is_object())
            return makeError(ErrorCode::InvalidInput,
                             where + ": expected a JSON object; got " + jsonutil::jsonExcerpt(*parsed));
        if (format == LmDataFormat::Auto)
            format = parsed->contains("prompt") && parsed->contains("completion") ? LmDataFormat::Instruction
                                                                                  : LmDataFormat::Text;
        if (format == LmDataFormat::Instruction) {
            auto prompt = stringField(*parsed, "prompt", where, "instruction data: prompt and completion");
            if (!prompt)
                return tl::unexpected(prompt.error());
            auto completion = stringField(*parsed, "completion", where, "instruction data: prompt and completion");
            if (!completion)
                return tl::unexpected(completion.error());
            out.push_back({std::move(*prompt), std::move(*completion)});
        } else {
            auto text = stringField(*parsed, options.textKey, where, "data.text_key");
            if (!text)
                return tl::unexpected(text.error());
            out.push_back({std::move(*text), {}});
        }
    }
    return {};
}

// Tokenizes records [0, n) on `threads` threads, each into its own slot.
template <typename Work>
void parallelFor(size_t n, int threads, const Work &work)
{
    const size_t count = std::max<size_t>(1, std::min<size_t>(size_t(threads), n / 64 + 1));
    std::vector<std::thread> pool;
    for (size_t t = 0; t < count; ++t)
        pool.emplace_back([&, t] {
            for (size_t i = t * n / count; i < (t + 1) * n / count; ++i)
                work(i);
        });
    for (auto &thread : pool)
        thread.join();
}

} // namespace

Result<LmDataFormat> parseLmDataFormat(const std::string &text)
{
    if (text == "auto" || text.empty())
        return LmDataFormat::Auto;
    if (text == "text")
        return LmDataFormat::Text;
    if (text == "instruction")
        return LmDataFormat::Instruction;
    return makeError(ErrorCode::InvalidInput, "data.format: expected one of auto, text, instruction; got " + text);
}

int64_t LmData::samples() const
{
    if (format == LmDataFormat::Instruction)
        return int64_t(examples.size());
    return blockSize > 0 ? int64_t(packed.size()) / blockSize : 0;
}

std::vector<int32_t> LmData::ids(int64_t sample) const
{
    if (format == LmDataFormat::Instruction)
        return examples.at(size_t(sample));
    const auto begin = packed.begin() + sample * blockSize;
    return std::vector<int32_t>(begin, begin + blockSize);
}

std::vector<int32_t> LmData::labels(int64_t sample) const
{
    std::vector<int32_t> out = ids(sample);
    if (format == LmDataFormat::Instruction)
        std::fill(out.begin(), out.begin() + promptLengths.at(size_t(sample)), kIgnoreLabel);
    return out;
}

Result<int32_t> documentEndId(const tokenizer::Tokenizer &tokenizer, const std::vector<int64_t> &configEosIds,
                              const std::string &modelDir)
{
    int32_t eos = tokenizer.eosId();
    if (eos < 0 && !configEosIds.empty())
        eos = int32_t(configEosIds.front());
    if (eos < 0)
        return makeError(ErrorCode::InvalidInput,
                         "the model has no EOS token (tokenizer_config.json's eos_token, config.json's eos_token_id): "
                         "documents cannot be separated",
                         modelDir);
    return eos;
}

Result<LmData> loadLmData(const std::string &path, const tokenizer::Tokenizer &tokenizer, int32_t eos,
                          const LmDataOptions &options)
{
    const auto started = std::chrono::steady_clock::now();
    if (options.blockSize < 2)
        return makeError(ErrorCode::InvalidInput, "data.block_size: at least 2 tokens");
    auto files = dataFiles(path, options.key);
    if (!files)
        return tl::unexpected(files.error());
    LmData data;
    data.blockSize = options.blockSize;
    data.files = int64_t(files->size());
    LmDataFormat format = options.format;
    std::vector<Record> records;
    for (const auto &file : *files) {
        auto content = fileutil::readFile(file.string(), kMaxDataFileBytes);
        if (!content)
            return makeError(content.error().code, options.key + ": " + content.error().message, file.string());
        if (hasExtension(file, ".txt")) {
            if (format == LmDataFormat::Instruction)
                return makeError(ErrorCode::InvalidInput,
                                 options.key + ": " + file.string() +
                                     ": instruction data is .jsonl with prompt and completion, not a .txt file");
            format = LmDataFormat::Text;
            readText(*content, records);
        } else if (auto read = readJsonl(*content, file.string(), options, format, records); !read) {
            return tl::unexpected(read.error());
        }
    }
    if (records.empty())
        return makeError(ErrorCode::InvalidInput, options.key + ": no document in " + path);
    data.format = format == LmDataFormat::Instruction ? LmDataFormat::Instruction : LmDataFormat::Text;
    data.documents = int64_t(records.size());
    const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));

    std::vector<std::vector<int32_t>> encoded(records.size()), prompts;
    if (data.format == LmDataFormat::Instruction)
        prompts.resize(records.size());
    parallelFor(records.size(), threads, [&](size_t i) {
        encoded[i] =
            tokenizer.encode(data.format == LmDataFormat::Instruction ? records[i].completion : records[i].text,
                             /*addSpecialTokens=*/false);
        encoded[i].push_back(eos);
        if (data.format == LmDataFormat::Instruction)
            prompts[i] = tokenizer.encode(records[i].text, /*addSpecialTokens=*/false);
    });
    records.clear();
    records.shrink_to_fit();

    if (data.format == LmDataFormat::Text) {
        size_t total = 0;
        for (const auto &ids : encoded)
            total += ids.size();
        data.packed.reserve(total);
        for (auto &ids : encoded) {
            data.packed.insert(data.packed.end(), ids.begin(), ids.end());
            std::vector<int32_t>().swap(ids);
        }
        data.tokens = int64_t(total);
        data.packed.resize(size_t(data.samples() * data.blockSize)); // the last partial window dropped
        if (data.samples() == 0)
            return makeError(
                ErrorCode::InvalidInput,
                options.key + ": " + std::to_string(total) +
                    " tokens, fewer than one window of data.block_size = " + std::to_string(options.blockSize),
                path);
    } else {
        for (size_t i = 0; i < encoded.size(); ++i) {
            std::vector<int32_t> ids = std::move(prompts[i]);
            const auto promptLength = int32_t(ids.size());
            ids.insert(ids.end(), encoded[i].begin(), encoded[i].end());
            data.tokens += int64_t(ids.size());
            if (int64_t(ids.size()) > options.blockSize) {
                ids.resize(size_t(options.blockSize));
                ++data.cutExamples;
            }
            if (promptLength >= int64_t(ids.size())) {
                ++data.droppedExamples;
                continue;
            }
            data.examples.push_back(std::move(ids));
            data.promptLengths.push_back(promptLength);
        }
        if (data.examples.empty())
            return makeError(ErrorCode::InvalidInput,
                             options.key + ": no example keeps a completion token within data.block_size = " +
                                 std::to_string(options.blockSize),
                             path);
    }
    data.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return data;
}

} // namespace accel::worker
