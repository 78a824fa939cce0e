#include "tests/inference/tinymodels.h"

#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace accel::test {

namespace {

void put(TinyModel &m, const std::string &name, std::vector<int64_t> shape, double scale = 0.2)
{
    m.weights[name] = at::randn(shape) * scale;
}

void putNorm(TinyModel &m, const std::string &name, int64_t size, bool bias)
{
    m.weights[name + ".weight"] = 1.0 + 0.1 * at::randn({size});
    if (bias)
        m.weights[name + ".bias"] = 0.1 * at::randn({size});
}

} // namespace

TinyModel writeTinyModel(const std::string &dir, const std::string &modelType, uint64_t seed, at::ScalarType storeAs,
                         bool tied, bool withoutBasePrefix, int64_t vocab)
{
    at::manual_seed(seed);
    std::filesystem::create_directories(dir);
    TinyModel m;
    m.dir = dir;
    m.tied = tied;
    std::string config;
    if (modelType == "gpt2") {
        m.vocab = vocab > 0 ? vocab : 53;
        m.hidden = 32;
        m.layers = 2;
        m.heads = 4;
        m.kvHeads = 4;
        m.inter = 128;
        m.positions = 128;
        m.eps = 1e-5;
        put(m, "transformer.wte.weight", {m.vocab, m.hidden});
        put(m, "transformer.wpe.weight", {m.positions, m.hidden});
        for (int64_t i = 0; i < m.layers; ++i) {
            const std::string p = "transformer.h." + std::to_string(i) + ".";
            putNorm(m, p + "ln_1", m.hidden, true);
            put(m, p + "attn.c_attn.weight", {m.hidden, 3 * m.hidden});
            put(m, p + "attn.c_attn.bias", {3 * m.hidden}, 0.05);
            put(m, p + "attn.c_proj.weight", {m.hidden, m.hidden});
            put(m, p + "attn.c_proj.bias", {m.hidden}, 0.05);
            putNorm(m, p + "ln_2", m.hidden, true);
            put(m, p + "mlp.c_fc.weight", {m.hidden, m.inter});
            put(m, p + "mlp.c_fc.bias", {m.inter}, 0.05);
            put(m, p + "mlp.c_proj.weight", {m.inter, m.hidden});
            put(m, p + "mlp.c_proj.bias", {m.hidden}, 0.05);
        }
        putNorm(m, "transformer.ln_f", m.hidden, true);
        if (!tied)
            put(m, "lm_head.weight", {m.vocab, m.hidden});
        config = "{\"model_type\": \"gpt2\", \"vocab_size\": " + std::to_string(m.vocab) +
                 ", \"n_positions\": 128, \"n_embd\": 32, \"n_layer\": 2, "
                 "\"n_head\": 4, \"layer_norm_epsilon\": 1e-05, \"activation_function\": \"gelu_new\", "
                 "\"tie_word_embeddings\": " +
                 std::string(tied ? "true" : "false") + ", \"eos_token_id\": 52}";
    } else {
        m.vocab = vocab > 0 ? vocab : 61;
        m.hidden = 48;
        m.layers = 2;
        m.heads = 6;
        m.kvHeads = 2;
        m.inter = 96;
        m.positions = 128;
        m.eps = 1e-6;
        m.theta = 500.0;
        m.qkvBias = modelType == "qwen2";
        const int64_t hd = m.hidden / m.heads;
        put(m, "model.embed_tokens.weight", {m.vocab, m.hidden});
        for (int64_t i = 0; i < m.layers; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            putNorm(m, p + "input_layernorm", m.hidden, false);
            put(m, p + "self_attn.q_proj.weight", {m.heads * hd, m.hidden});
            put(m, p + "self_attn.k_proj.weight", {m.kvHeads * hd, m.hidden});
            put(m, p + "self_attn.v_proj.weight", {m.kvHeads * hd, m.hidden});
            if (m.qkvBias) {
                put(m, p + "self_attn.q_proj.bias", {m.heads * hd}, 0.1);
                put(m, p + "self_attn.k_proj.bias", {m.kvHeads * hd}, 0.1);
                put(m, p + "self_attn.v_proj.bias", {m.kvHeads * hd}, 0.1);
            }
            put(m, p + "self_attn.o_proj.weight", {m.hidden, m.heads * hd});
            putNorm(m, p + "post_attention_layernorm", m.hidden, false);
            put(m, p + "mlp.gate_proj.weight", {m.inter, m.hidden});
            put(m, p + "mlp.up_proj.weight", {m.inter, m.hidden});
            put(m, p + "mlp.down_proj.weight", {m.hidden, m.inter});
        }
        putNorm(m, "model.norm", m.hidden, false);
        if (!tied)
            put(m, "lm_head.weight", {m.vocab, m.hidden});
        config = "{\"model_type\": \"" + modelType + "\", \"vocab_size\": " + std::to_string(m.vocab) +
                 ", \"hidden_size\": 48, \"intermediate_size\": 96, "
                 "\"num_hidden_layers\": 2, \"num_attention_heads\": 6, \"num_key_value_heads\": 2, "
                 "\"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-06, \"rope_theta\": 500.0, \"hidden_act\": "
                 "\"silu\", "
                 "\"tie_word_embeddings\": " +
                 std::string(tied ? "true" : "false") + ", \"eos_token_id\": 60}";
    }
    // Round the stored values so the in-memory references use exactly what the file holds.
    std::vector<at::Tensor> stored;
    std::vector<bigmodel::TensorToWrite> toWrite;
    for (auto &[name, w] : m.weights) {
        at::Tensor s = w.to(storeAs).contiguous();
        w = s.to(at::kFloat);
        stored.push_back(s);
        std::string key = name;
        if (withoutBasePrefix && key.rfind("transformer.", 0) == 0)
            key = key.substr(12);
        toWrite.push_back({key, storeAs == at::kBFloat16 ? bigmodel::DType::BF16 : bigmodel::DType::F32,
                           s.sizes().vec(), s.data_ptr(), static_cast<uint64_t>(s.nbytes())});
    }
    if (!bigmodel::writeSafetensors(dir + "/model.safetensors", toWrite))
        throw std::runtime_error("cannot write " + dir + "/model.safetensors");
    if (!fileutil::writeFileAtomic(dir + "/config.json", config))
        throw std::runtime_error("cannot write " + dir + "/config.json");
    return m;
}

namespace {

// Softmax attention over all positions with an explicit causal mask, one head at a time.
at::Tensor naiveAttention(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v)
{
    // q [T, D], k [T, D], v [T, D]
    const int64_t t = q.size(0);
    auto scores = at::matmul(q, k.t()) / std::sqrt(static_cast<double>(q.size(1)));
    auto mask = at::ones({t, t}).triu(1).to(at::kBool);
    scores = scores.masked_fill(mask, -1e30);
    return at::matmul(at::softmax(scores, -1), v);
}

at::Tensor w(const TinyModel &m, const std::string &name)
{
    return m.weights.at(name);
}

} // namespace

at::Tensor referenceGpt2(const TinyModel &m, const at::Tensor &ids)
{
    std::vector<at::Tensor> batchOut;
    const int64_t hd = m.hidden / m.heads;
    for (int64_t b = 0; b < ids.size(0); ++b) {
        auto tok = ids[b];
        const int64_t t = tok.size(0);
        auto h = w(m, "transformer.wte.weight").index_select(0, tok) + w(m, "transformer.wpe.weight").narrow(0, 0, t);
        for (int64_t l = 0; l < m.layers; ++l) {
            const std::string p = "transformer.h." + std::to_string(l) + ".";
            auto x = at::layer_norm(h, {m.hidden}, w(m, p + "ln_1.weight"), w(m, p + "ln_1.bias"), m.eps);
            auto qkv = at::matmul(x, w(m, p + "attn.c_attn.weight")) + w(m, p + "attn.c_attn.bias");
            std::vector<at::Tensor> heads;
            for (int64_t hIdx = 0; hIdx < m.heads; ++hIdx) {
                auto q = qkv.narrow(1, hIdx * hd, hd);
                auto k = qkv.narrow(1, m.hidden + hIdx * hd, hd);
                auto v = qkv.narrow(1, 2 * m.hidden + hIdx * hd, hd);
                heads.push_back(naiveAttention(q, k, v));
            }
            auto attn = at::matmul(at::cat(heads, 1), w(m, p + "attn.c_proj.weight")) + w(m, p + "attn.c_proj.bias");
            h = h + attn;
            x = at::layer_norm(h, {m.hidden}, w(m, p + "ln_2.weight"), w(m, p + "ln_2.bias"), m.eps);
            auto f = at::matmul(x, w(m, p + "mlp.c_fc.weight")) + w(m, p + "mlp.c_fc.bias");
            f = 0.5 * f * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (f + 0.044715 * f.pow(3))));
            h = h + at::matmul(f, w(m, p + "mlp.c_proj.weight")) + w(m, p + "mlp.c_proj.bias");
        }
        h = at::layer_norm(h, {m.hidden}, w(m, "transformer.ln_f.weight"), w(m, "transformer.ln_f.bias"), m.eps);
        auto head = m.tied ? w(m, "transformer.wte.weight") : w(m, "lm_head.weight");
        batchOut.push_back(at::matmul(h, head.t()));
    }
    return at::stack(batchOut);
}

at::Tensor referenceLlama(const TinyModel &m, const at::Tensor &ids)
{
    const int64_t hd = m.hidden / m.heads;
    const int64_t groups = m.heads / m.kvHeads;
    auto rms = [&](const at::Tensor &x, const at::Tensor &weight) {
        return weight * (x / at::sqrt(x.pow(2).mean(-1, true) + m.eps));
    };
    auto rope = [&](const at::Tensor &x) { // x [T, hd]; pairs (i, i + hd/2) rotate by pos * theta^(-2i/hd)
        auto out = x.clone();
        for (int64_t pos = 0; pos < x.size(0); ++pos)
            for (int64_t i = 0; i < hd / 2; ++i) {
                const double angle = pos * std::pow(m.theta, -2.0 * i / hd);
                auto a = x[pos][i], b = x[pos][i + hd / 2];
                out[pos][i] = a * std::cos(angle) - b * std::sin(angle);
                out[pos][i + hd / 2] = b * std::cos(angle) + a * std::sin(angle);
            }
        return out;
    };
    std::vector<at::Tensor> batchOut;
    for (int64_t b = 0; b < ids.size(0); ++b) {
        auto h = w(m, "model.embed_tokens.weight").index_select(0, ids[b]);
        for (int64_t l = 0; l < m.layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            auto x = rms(h, w(m, p + "input_layernorm.weight"));
            auto lin = [&](const std::string &n, const at::Tensor &in) {
                auto y = at::matmul(in, w(m, p + n + ".weight").t());
                if (m.weights.count(p + n + ".bias"))
                    y = y + w(m, p + n + ".bias");
                return y;
            };
            auto q = lin("self_attn.q_proj", x), k = lin("self_attn.k_proj", x), v = lin("self_attn.v_proj", x);
            std::vector<at::Tensor> heads;
            for (int64_t hIdx = 0; hIdx < m.heads; ++hIdx) {
                const int64_t kvIdx = hIdx / groups;
                heads.push_back(naiveAttention(rope(q.narrow(1, hIdx * hd, hd)), rope(k.narrow(1, kvIdx * hd, hd)),
                                               v.narrow(1, kvIdx * hd, hd)));
            }
            h = h + lin("self_attn.o_proj", at::cat(heads, 1));
            x = rms(h, w(m, p + "post_attention_layernorm.weight"));
            auto g = lin("mlp.gate_proj", x);
            h = h + lin("mlp.down_proj", g * at::sigmoid(g) * lin("mlp.up_proj", x));
        }
        h = rms(h, w(m, "model.norm.weight"));
        auto head = m.tied ? w(m, "model.embed_tokens.weight") : w(m, "lm_head.weight");
        batchOut.push_back(at::matmul(h, head.t()));
    }
    return at::stack(batchOut);
}

} // namespace accel::test
