// A tiny random GPT-2 checkpoint for tests that drive the real accel-worker (the Playground, pipeline
// generation across hosts): model.safetensors, config.json and the hand-made byte-level BPE
// tokenizer.json of tests/data/tokenizers/gpt2-tiny.json. Header-only; a test that includes it links
// accel_bigmodel.
#pragma once

#include "core/bigmodel/safetensorswriter.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QString>

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace accel::test {

// A random gpt2 checkpoint with the 269-id vocabulary of the gpt2-tiny tokenizer fixture and room
// for long generations (n_positions 65536).
inline bool writeTinyGpt2(const QString &dir)
{
    QDir().mkpath(dir);
    const int64_t vocab = 269, hidden = 32, positions = 65536, layers = 2;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    std::vector<std::vector<float>> values;
    auto put = [&](const std::string &name, std::vector<int64_t> shape, float scale, float offset = 0.0f) {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        std::vector<float> v(static_cast<size_t>(n));
        for (float &x : v)
            x = offset + scale * normal(rng);
        shapes.emplace_back(name, std::move(shape));
        values.push_back(std::move(v));
    };
    put("transformer.wte.weight", {vocab, hidden}, 0.2f);
    put("transformer.wpe.weight", {positions, hidden}, 0.02f);
    for (int64_t i = 0; i < layers; ++i) {
        const std::string p = "transformer.h." + std::to_string(i) + ".";
        put(p + "ln_1.weight", {hidden}, 0.1f, 1.0f);
        put(p + "ln_1.bias", {hidden}, 0.1f);
        put(p + "attn.c_attn.weight", {hidden, 3 * hidden}, 0.2f);
        put(p + "attn.c_attn.bias", {3 * hidden}, 0.05f);
        put(p + "attn.c_proj.weight", {hidden, hidden}, 0.2f);
        put(p + "attn.c_proj.bias", {hidden}, 0.05f);
        put(p + "ln_2.weight", {hidden}, 0.1f, 1.0f);
        put(p + "ln_2.bias", {hidden}, 0.1f);
        put(p + "mlp.c_fc.weight", {hidden, 4 * hidden}, 0.2f);
        put(p + "mlp.c_fc.bias", {4 * hidden}, 0.05f);
        put(p + "mlp.c_proj.weight", {4 * hidden, hidden}, 0.2f);
        put(p + "mlp.c_proj.bias", {hidden}, 0.05f);
    }
    put("transformer.ln_f.weight", {hidden}, 0.1f, 1.0f);
    put("transformer.ln_f.bias", {hidden}, 0.1f);
    std::vector<accel::bigmodel::TensorToWrite> tensors;
    for (size_t i = 0; i < shapes.size(); ++i)
        tensors.push_back({shapes[i].first, accel::bigmodel::DType::F32, shapes[i].second, values[i].data(),
                           values[i].size() * sizeof(float)});
    if (!accel::bigmodel::writeSafetensors((dir + "/model.safetensors").toStdString(), tensors))
        return false;
    const QByteArray config = R"({"model_type": "gpt2", "vocab_size": 269, "n_positions": 65536, "n_embd": 32,
        "n_layer": 2, "n_head": 4, "layer_norm_epsilon": 1e-05, "activation_function": "gelu_new",
        "tie_word_embeddings": true, "eos_token_id": 267})";
    QFile file(dir + "/config.json");
    if (!file.open(QIODevice::WriteOnly) || file.write(config) != config.size())
        return false;
    file.close();
    return QFile::copy(dataPath(QStringLiteral("tokenizers/gpt2-tiny.json")), dir + "/tokenizer.json");
}

} // namespace accel::test
