#include "core/inference/configkeys.h"

#include "core/common/jsondocument.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace accel::inference {

namespace {

using Keys = std::set<std::string>;

// What modelconfig.cpp reads for each family (rope_scaling / rope_parameters types other than the
// default and sliding windows are read and warned about until they are implemented).
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
    static const Keys llama = {"vocab_size",
                               "hidden_size",
                               "intermediate_size",
                               "num_hidden_layers",
                               "num_attention_heads",
                               "num_key_value_heads",
                               "max_position_embeddings",
                               "head_dim",
                               "rms_norm_eps",
                               "rope_theta",
                               "rope_parameters",
                               "rope_scaling",
                               "hidden_act",
                               "attention_bias",
                               "mlp_bias",
                               "attention_dropout",
                               "sliding_window",
                               "use_sliding_window",
                               "max_window_layers",
                               "layer_types",
                               "tie_word_embeddings"};
    return modelType == "gpt2" ? gpt2 : llama;
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
        "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
        "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens"};
    return keys;
}

bool isTrue(const nlohmann::json &value)
{
    return value.is_boolean() && value.get<bool>();
}

} // namespace

Result<void> checkConfigKeys(const nlohmann::json &config, const std::string &modelType, const std::string &path)
{
    const Keys &family = familyKeys(modelType);
    for (auto it = config.begin(); it != config.end(); ++it) {
        const std::string &key = it.key();
        const nlohmann::json &value = it.value();
        if (key == "quantization_config")
            return makeError(ErrorCode::Unsupported,
                             "quantization_config " + jsonutil::jsonExcerpt(value) +
                                 ": quantized checkpoints are not loaded yet (the weights would be read as they "
                                 "are stored); use the unquantized checkpoint",
                             path);
        if (key == "auto_map")
            return makeError(ErrorCode::Unsupported,
                             "auto_map: the model brings its own Python code (trust_remote_code), which the C++ " +
                                 modelType + " model cannot run",
                             path);
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
            continue;
        }
        if (family.count(key) || meaningless().count(key))
            continue;
        return makeError(ErrorCode::Unsupported,
                         "key \"" + key + "\" (" + jsonutil::jsonExcerpt(value) + ") is not known for model_type " +
                             modelType +
                             ": it may change the computation, so the model is not run without it (the keys read "
                             "and the keys without effect on inference are listed in docs/compatibility.md)",
                         path);
    }
    return {};
}

} // namespace accel::inference
