// torch.distributed.checkpoint (DCP) folders without libtorch: what Accelerate's
// SHARDED_STATE_DICT saves (FSDP1 and FSDP2), `pytorch_model_fsdp_0/` with `.metadata` and one
// `__<rank>_0.distcp` per rank (docs/sharding.md). `.metadata` is a pickle of DCP's Metadata, read by
// the restricted unpickler (core/plan/pickle.h) that knows only the classes Metadata holds; every
// chunk of a tensor is a torch.save blob at an offset of a `.distcp` file (torchsaveblob.h).
#pragma once

#include "core/common/result.h"
#include "core/plan/shardedfolder.h"

#include <string>
#include <vector>

namespace accel::runtime {

inline constexpr const char *kDcpMetadataName = ".metadata";

// Every tensor of the folder, whole, named as `accelerate merge-weights` names them: the state
// dict's nesting is rebuilt from the metadata's planner data and a single top-level key ("model")
// is dropped. Non-tensor entries (an optimizer's step) and nesting deeper than names of tensors
// are errors naming the entry, as are chunks that do not tile their tensor.
Result<std::vector<JoinedTensor>> joinDcpFolder(const std::string &folder);

} // namespace accel::runtime
