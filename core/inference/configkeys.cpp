#include "core/inference/configkeys.h"

#include "core/common/jsondocument.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace accel::inference {

namespace {

using Keys = std::set<std::string>;

// What modelconfig.cpp reads for each family.
const Keys &familyKeys(const std::string &modelType)
{
    static const Keys gpt2 = {"vocab_size",
                              "n_positions",
                              "n_embd",
                              "n_layer",
                              "n_head",
                              "n_inner",
                              "layer_norm_epsilon",
                              "activation_function",
                              "scale_attn_weights",
                              "scale_attn_by_inverse_layer_idx",
                              "reorder_and_upcast_attn",
                              "embd_pdrop",
                              "attn_pdrop",
                              "resid_pdrop",
                              "tie_word_embeddings"};
    // Every Llama-like family; sliding_window and attention_bias are read (or noted) by all of them.
    static const Keys common = {
        "vocab_size",          "hidden_size",         "intermediate_size",       "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "max_position_embeddings", "head_dim",
        "rms_norm_eps",        "rope_theta",          "rope_parameters",         "rope_scaling",
        "hidden_act",          "attention_dropout",   "tie_word_embeddings",     "sliding_window",
        "attention_bias"};
    static const std::map<std::string, Keys> extra = {
        {"llama", {"mlp_bias"}},
        {"mistral", {"layer_types"}},
        {"qwen2", {"use_sliding_window", "max_window_layers", "layer_types"}},
        {"qwen3", {"use_sliding_window", "max_window_layers", "layer_types"}},
        {"gemma", {"use_bidirectional_attention", "hidden_activation"}},
        {"gemma2",
         {"hidden_activation", "query_pre_attn_scalar", "layer_types", "final_logit_softcapping",
          "attn_logit_softcapping", "use_bidirectional_attention", "sliding_window_size"}},
        {"phi3", {"resid_pdrop", "original_max_position_embeddings", "partial_rotary_factor"}},
        {"mixtral", {"num_local_experts", "num_experts_per_tok", "router_jitter_noise", "layer_types"}},
        {"qwen2_moe",
         {"use_sliding_window", "max_window_layers", "layer_types", "decoder_sparse_step", "mlp_only_layers",
          "moe_intermediate_size", "norm_topk_prob", "num_experts", "num_experts_per_tok", "qkv_bias",
          "shared_expert_intermediate_size"}},
    };
    static const std::map<std::string, Keys> merged = [] {
        std::map<std::string, Keys> all;
        for (const auto &[type, keys] : extra) {
            Keys combined = common;
            combined.insert(keys.begin(), keys.end());
            all.emplace(type, std::move(combined));
        }
        return all;
    }();
    if (modelType == "gpt2")
        return gpt2;
    auto found = merged.find(modelType);
    return found != merged.end() ? found->second : common;
}

// Keys a family carries that transformers 5 does not read for it: noted when set.
std::string unreadNote(const std::string &modelType, const std::string &key, const nlohmann::json &value)
{
    const bool set = !value.is_null() && !(value.is_boolean() && !value.get<bool>());
    if (!set)
        return {};
    if (key == "attention_bias" && (modelType == "mistral" || modelType == "mixtral" || modelType == "phi3" ||
                                    modelType == "qwen2" || modelType == "qwen2_moe"))
        return "attention_bias is not read by model_type " + modelType + " (its attention biases are fixed)";
    if (key == "hidden_activation" && modelType == "gemma")
        return "hidden_activation is not read by model_type gemma (hidden_act is)";
    if (key == "hidden_act" && modelType == "gemma2")
        return "hidden_act is not read by model_type gemma2 (hidden_activation is)";
    if (key == "sliding_window_size")
        return "sliding_window_size is not read by transformers 5 (sliding_window is)";
    return {};
}

// Keys with no part in a causal LM's forward pass: metadata, training-only settings, generation
// defaults (accel generate takes its own --temperature, --top-k, ...; transformers 5 keeps them in
// generation_config.json), and the heads of other tasks.
const Keys &meaningless()
{
    static const Keys keys = {
        // metadata and library switches
        "model_type", "architectures", "transformers_version", "_name_or_path", "name_or_path", "dtype", "torch_dtype",
        "use_bfloat16", "_commit_hash", "_attn_implementation", "attn_implementation", "_attn_implementation_autoset",
        "_experts_implementation", "torchscript", "tf_legacy_loss", "return_dict", "output_attentions",
        "output_hidden_states", "output_router_logits", "use_cache", "chunk_size_feed_forward", "pruned_heads",
        "tokenizer_class", "prefix",
        // training and other tasks' heads
        "initializer_range", "pretraining_tp", "id2label", "label2id", "num_labels", "problem_type", "finetuning_task",
        "task_specific_params", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
        "summary_first_dropout", "n_ctx", "is_decoder", "tie_encoder_decoder", "cross_attention_hidden_size",
        // token ids (eos_token_id is read) and generation defaults
        "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "max_length",
        "min_length", "max_new_tokens", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
        "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
        "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
        "output_scores", "return_dict_in_generate", "cache_implementation", "router_aux_loss_coef", "embd_pdrop",
        "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty",
        "suppress_tokens", "begin_suppress_tokens"};
    return keys;
}

bool isTrue(const nlohmann::json &value)
{
    return value.is_boolean() && value.get<bool>();
}

} // namespace

Result<ConfigNotes> checkConfigKeys(const nlohmann::json &config, const std::string &modelType, const std::string &path)
{
    const Keys &family = familyKeys(modelType);
    ConfigNotes notes;
    for (auto it = config.begin(); it != config.end(); ++it) {
        const std::string &key = it.key();
        const nlohmann::json &value = it.value();
        if (key == "quantization_config")
            continue; // read by the loader (quantization.h), which refuses what it does not implement
        if (key == "auto_map") {
            // transformers runs its own class for a known model_type unless trust_remote_code is given.
            notes.emplace_back(key, "auto_map names the model's own Python code; the built-in " + modelType +
                                        " implementation runs, as transformers' does without trust_remote_code");
            continue;
        }
        if ((key == "add_cross_attention" || key == "is_encoder_decoder") && isTrue(value))
            return makeError(ErrorCode::Unsupported,
                             key + ": true is not implemented (a causal LM without cross-attention runs here)", path);
        if (key == "add_cross_attention" || key == "is_encoder_decoder")
            continue;
        if (key == "layer_types" && value.is_array()) {
            for (const nlohmann::json &type : value)
                if (!type.is_string() ||
                    (type.get<std::string>() != "full_attention" && type.get<std::string>() != "sliding_attention"))
                    return makeError(ErrorCode::Unsupported,
                                     "layer_types: " + jsonutil::jsonExcerpt(type) +
                                         " is not implemented (full_attention and sliding_attention are)",
                                     path);
        }
        if (family.count(key) || meaningless().count(key)) {
            if (std::string text = unreadNote(modelType, key, value); !text.empty())
                notes.emplace_back(key, text);
            continue;
        }
        return makeError(ErrorCode::Unsupported,
                         "key \"" + key + "\" (" + jsonutil::jsonExcerpt(value) + ") is not known for model_type " +
                             modelType +
                             ": it may change the computation, so the model is not run without it (the keys read "
                             "and the keys without effect on inference are listed in docs/compatibility.md)",
                         path);
    }
    return notes;
}

} // namespace accel::inference
