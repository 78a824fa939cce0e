#include "core/common/result.h"

namespace accel {

const char *errorCodeName(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidInput:
        return "invalid_input";
    case ErrorCode::NotFound:
        return "not_found";
    case ErrorCode::Io:
        return "io";
    case ErrorCode::Unsupported:
        return "unsupported";
    case ErrorCode::Timeout:
        return "timeout";
    case ErrorCode::Cancelled:
        return "cancelled";
    case ErrorCode::Failed:
        return "failed";
    case ErrorCode::Internal:
        return "internal";
    }
    return "internal";
}

} // namespace accel
