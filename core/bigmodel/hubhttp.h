// The few HTTP requests the Hub resolver makes (hubmodel.h), through Debian's libcurl: GET with
// optional headers and byte range, redirects followed (an Authorization header is sent to the
// first host only, never to the storage host a file redirects to), proxies from the usual
// environment variables, bounded in size and time.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace accel::bigmodel {

struct HttpRequest {
    std::string url;
    std::vector<std::string> headers;                   // "Name: value"
    std::optional<std::pair<uint64_t, uint64_t>> range; // first and last byte, inclusive
    uint64_t maxBytes = uint64_t(16) << 20;             // a longer body is an error
    long timeoutSeconds = 60;
};

struct HttpResponse {
    long status = 0; // 0: no answer (see error)
    std::string body;
    std::map<std::string, std::string> headers; // of the last answer, names in lower case
    std::string error;                          // transport error (connection, timeout, too large)
    std::string header(const std::string &lowerCaseName) const;
};

HttpResponse httpGet(const HttpRequest &request);

} // namespace accel::bigmodel
