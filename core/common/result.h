// Result<T>: the return type of every operation that can fail for reasons outside the program
// (a file, a host, a user's value). Errors carry a code, a message a person can act on, and
// the context (file, key, line) it happened in.
#pragma once

#include <tl/expected.hpp>

#include <string>
#include <utility>

namespace accel {

enum class ErrorCode {
    InvalidInput, // the user's value, file or flag is wrong: CLI exit code 2
    NotFound,     // a file, run, host or key does not exist
    Io,           // reading or writing failed
    Unsupported,  // valid, but this build or machine cannot do it
    Timeout,
    Cancelled, // not an error for the user; reported so callers can stop quietly
    Failed,    // an operation ran and failed (a rank crashed, a test failed)
    Internal,
};

struct Error {
    ErrorCode code = ErrorCode::Internal;
    std::string message;
    std::string context; // e.g. "config.yaml: line 12" or "host gpu03"

    // "context: message" when there is a context, else the message.
    std::string toString() const { return context.empty() ? message : context + ": " + message; }
};

template <typename T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> makeError(ErrorCode code, std::string message, std::string context = {})
{
    return tl::unexpected<Error>(Error{code, std::move(message), std::move(context)});
}

// Exit codes shared by every command line program of the project.
inline int exitCodeFor(const Error &error)
{
    switch (error.code) {
    case ErrorCode::InvalidInput:
    case ErrorCode::NotFound:
        return 2;
    default:
        return 1;
    }
}

const char *errorCodeName(ErrorCode code);

} // namespace accel
