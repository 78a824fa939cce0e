// The causal_lm recipe's data (docs/finetune.md), read and tokenized without libtorch:
//   text: a .txt file (documents separated by blank lines), a .jsonl file (one document per line,
//         in the field data.text_key), or a folder of such files (sorted by path). Each document is
//         tokenized without special tokens and followed by the EOS id; the results are joined in
//         file order and cut into consecutive windows of block_size tokens (the last partial one
//         dropped). Sample k is window k.
//   instruction: .jsonl lines {"prompt": ..., "completion": ...}; sample k is example k, its ids
//         prompt + completion + EOS (no packing), cut to block_size, labels -100 on the prompt.
// Errors name the key, the file and the line. Tokenization runs on several threads.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace accel::tokenizer {
class Tokenizer;
}

namespace accel::worker {

enum class LmDataFormat { Auto, Text, Instruction };

struct LmDataOptions {
    std::string key = "data.train"; // names the data in errors
    std::string textKey = "text";
    int64_t blockSize = 0;
    LmDataFormat format = LmDataFormat::Auto;
    int threads = 0; // 0: the machine's cores
};

// The label of a token that is not predicted (Transformers' ignore_index).
constexpr int32_t kIgnoreLabel = -100;

struct LmData {
    LmDataFormat format = LmDataFormat::Text; // Text or Instruction
    int64_t blockSize = 0;
    int64_t files = 0;
    int64_t documents = 0; // text documents or instruction examples read
    int64_t tokens = 0;    // tokens read (before windows are cut, examples cut or dropped)
    // Text: the joined tokens; sample k = tokens[k * blockSize, (k + 1) * blockSize).
    std::vector<int32_t> packed;
    // Instruction: per example its ids and how many of them are the prompt.
    std::vector<std::vector<int32_t>> examples;
    std::vector<int32_t> promptLengths;
    int64_t cutExamples = 0;     // longer than block_size, cut to it
    int64_t droppedExamples = 0; // no completion token left within block_size
    double seconds = 0;          // reading and tokenizing

    int64_t samples() const;
    // Sample k's ids and labels (labels: the ids, kIgnoreLabel on an instruction's prompt).
    std::vector<int32_t> ids(int64_t sample) const;
    std::vector<int32_t> labels(int64_t sample) const;
};

// The id that follows every document and pads instruction batches: the tokenizer's EOS token
// (tokenizer_config.json's eos_token), else config.json's first eos_token_id (`configEosIds`); an
// error naming `modelDir` when the model has neither.
Result<int32_t> documentEndId(const tokenizer::Tokenizer &tokenizer, const std::vector<int64_t> &configEosIds,
                              const std::string &modelDir);

// Reads `path` (a file or a folder) and tokenizes it with `tokenizer`, EOS id `eos`.
Result<LmData> loadLmData(const std::string &path, const tokenizer::Tokenizer &tokenizer, int32_t eos,
                          const LmDataOptions &options);

// "auto" | "text" | "instruction".
Result<LmDataFormat> parseLmDataFormat(const std::string &text);

} // namespace accel::worker
