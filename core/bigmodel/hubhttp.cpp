#include "core/bigmodel/hubhttp.h"

#include "core/common/text.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace accel::bigmodel {

namespace {

struct Transfer {
    HttpResponse *response = nullptr;
    uint64_t maxBytes = 0;
    bool tooLarge = false;
};

size_t onBody(char *data, size_t size, size_t count, void *user)
{
    auto *transfer = static_cast<Transfer *>(user);
    const size_t bytes = size * count;
    if (transfer->response->body.size() + bytes > transfer->maxBytes) {
        transfer->tooLarge = true;
        return 0; // stops the transfer
    }
    transfer->response->body.append(data, bytes);
    return bytes;
}

size_t onHeader(char *data, size_t size, size_t count, void *user)
{
    auto *response = static_cast<HttpResponse *>(user);
    const size_t bytes = size * count;
    std::string line(data, bytes);
    if (line.rfind("HTTP/", 0) == 0) { // a new answer (after a redirect): its own headers only
        response->headers.clear();
        return bytes;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos)
        return bytes;
    response->headers[text::lower(line.substr(0, colon))] = text::trim(std::string_view(line).substr(colon + 1));
    return bytes;
}

} // namespace

std::string HttpResponse::header(const std::string &lowerCaseName) const
{
    const auto it = headers.find(lowerCaseName);
    return it == headers.end() ? std::string() : it->second;
}

HttpResponse httpGet(const HttpRequest &request)
{
    static std::once_flag initialised;
    std::call_once(initialised, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    HttpResponse response;
    CURL *curl = curl_easy_init();
    if (!curl) {
        response.error = "libcurl could not start a transfer";
        return response;
    }
    Transfer transfer{&response, request.maxBytes, false};
    curl_slist *headers = nullptr;
    for (const std::string &header : request.headers)
        headers = curl_slist_append(headers, header.c_str());
    const std::string range =
        request.range ? std::to_string(request.range->first) + "-" + std::to_string(request.range->second) : "";
    curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (!range.empty())
        curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, request.timeoutSeconds);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "accel-studio/" ACCEL_VERSION);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &onBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &onHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
    const CURLcode code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    if (transfer.tooLarge)
        response.error = "the answer is larger than " + std::to_string(request.maxBytes) + " bytes";
    else if (code != CURLE_OK)
        response.error = curl_easy_strerror(code);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return response;
}

} // namespace accel::bigmodel
