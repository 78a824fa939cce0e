// Where Hugging Face's libraries keep their files, decided as huggingface_hub decides it: one rule
// for Accelerate's config folder, the Hub cache and the token file.
#pragma once

#include <string>

namespace accel {

// $HF_HOME when set and not empty ("~" expanded), else ${XDG_CACHE_HOME:-~/.cache}/huggingface.
std::string huggingFaceHome();
// Accelerate's config folder, <huggingFaceHome()>/accelerate, and its default config file there.
std::string accelerateConfigFolder();
std::string accelerateDefaultConfigPath();

} // namespace accel
