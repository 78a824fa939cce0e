// A restricted reader of Python pickles (protocols 2 to 5), for the two pickles a
// torch.distributed.checkpoint folder holds: `.metadata` (DCP's Metadata) and the `data.pkl` of
// every torch.save blob inside the `.distcp` files (docs/sharding.md). Nothing is ever called: a
// class is a name, an instance the name with its arguments and state. Only the globals the caller
// allows are read; any other GLOBAL is an error naming it (`os.system`, `builtins.eval`), so a
// crafted file is refused before anything else in it is looked at. Values live in one arena (no
// reference counts: a list that holds itself or a chain a million levels deep is torn down flat),
// at most kMaxPickleValues of them.
#pragma once

#include "core/common/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace accel::runtime {

struct PickleValue;
using PickleRef = PickleValue *; // owned by the PickleDocument

struct PickleValue {
    enum class Kind {
        None,
        Bool,
        Int,
        Float,
        Text,   // str
        Bytes,  // bytes
        List,   // list, set and frozenset
        Tuple,  //
        Dict,   // keys in insertion order, any value as key
        Global, // a class or function, by name: module + "." + name
        Object, // an instance: the class's name, its arguments (REDUCE / NEWOBJ), its state (BUILD)
        PersistentId,
    };
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double real = 0;
    std::string text;                                     // Text, Bytes; Global and Object: "module.name"
    std::vector<PickleRef> items;                         // List, Tuple; Object: the arguments; PersistentId: 1
    std::vector<std::pair<PickleRef, PickleRef>> entries; // Dict
    PickleRef state;                                      // Object: what BUILD set, or null

    // Dict: the value under a Text key, or null.
    PickleRef get(const std::string &key) const;
};

// What a pickle holds: its values and the one STOP returned.
struct PickleDocument {
    std::vector<std::unique_ptr<PickleValue>> values;
    PickleRef root = nullptr;
};

// Values one pickle may make (one per opcode at most), about 150 bytes each: the .metadata of a
// 1024-rank checkpoint of a 70B model (~740,000 chunks) makes about 16 million.
inline constexpr size_t kMaxPickleValues = size_t(32) << 20;

// "module.name" of every global a pickle may name.
using PickleAllowList = std::vector<std::string>;

// The values a pickle holds. `what` names the pickle in errors ("…/.metadata"). Errors: a global
// outside `allowed`, an opcode this reader does not know (with its byte position), truncation,
// more than kMaxPickleValues values.
Result<PickleDocument> readPickle(const std::string &bytes, const PickleAllowList &allowed, const std::string &what);

} // namespace accel::runtime
