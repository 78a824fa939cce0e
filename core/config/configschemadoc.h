// The config schema's rendering for the docs: every key an Accelerate config file may hold, with
// its kind, its allowed values or range and the default Accelerate's config dataclasses give an
// absent key. docs/compatibility.md carries it ("Config keys"); tst_configio checks that the page
// holds exactly this rendering. What a native job does with each key is docs/native-keys.md's
// table (nativekeys.h), not repeated here.
#pragma once

#include <string>

namespace accel::config::schema {

// Markdown tables: the top-level keys of a LOCAL_MACHINE config, one table per nested block, then
// the top-level keys of a SageMaker config.
std::string markdownReference();

} // namespace accel::config::schema
