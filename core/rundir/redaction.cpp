#include "core/rundir/redaction.h"

#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace accel::rundir {

namespace {

bool isWordChar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

bool isTokenChar(char c)
{
    return isWordChar(c) || c == '_' || c == '-';
}

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Where the run of token characters from `from` ends.
size_t tokenEnd(std::string_view text, size_t from)
{
    while (from < text.size() && isTokenChar(text[from]))
        ++from;
    return from;
}

// A span of `text` to replace by kRedacted.
struct Span {
    size_t begin;
    size_t end;
};

// The credential of "Bearer <credential>" / "Basic <credential>" (an Authorization header's
// schemes): a run of at least 8 token68 characters (RFC 7235), so "Basic model" stays.
void authorizationCredentials(std::string_view text, const std::string &lower, std::vector<Span> &out)
{
    const auto token68 = [](char c) {
        return isWordChar(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
    };
    for (const char *scheme : {"bearer", "basic"}) {
        const size_t length = std::strlen(scheme);
        for (size_t at = lower.find(scheme); at != std::string::npos; at = lower.find(scheme, at + 1)) {
            const bool startsWord = at == 0 || isSpace(text[at - 1]) || text[at - 1] == ':' || text[at - 1] == '=' ||
                                    text[at - 1] == '"' || text[at - 1] == '\'';
            size_t credential = at + length;
            if (!startsWord || credential >= text.size() || !isSpace(text[credential]))
                continue;
            while (credential < text.size() && isSpace(text[credential]))
                ++credential;
            size_t end = credential;
            while (end < text.size() && token68(text[end]))
                ++end;
            if (end - credential >= 8)
                out.push_back({credential, end});
        }
    }
}

// scheme://user:PASSWORD@host
void urlPasswords(std::string_view text, std::vector<Span> &out)
{
    for (size_t at = text.find("://"); at != std::string::npos; at = text.find("://", at + 3)) {
        const size_t authority = at + 3;
        size_t end = authority;
        while (end < text.size() && !isSpace(text[end]) && text[end] != '/' && text[end] != '?' && text[end] != '#')
            ++end;
        const std::string_view part = text.substr(authority, end - authority);
        const size_t atSign = part.rfind('@');
        if (atSign == std::string_view::npos)
            continue;
        const size_t colon = part.substr(0, atSign).find(':');
        if (colon != std::string_view::npos && colon + 1 < atSign)
            out.push_back({authority + colon + 1, authority + atSign});
    }
}

// Tokens by the prefixes their issuers publish, followed by at least `minimum` token characters.
void prefixedTokens(std::string_view text, std::vector<Span> &out)
{
    static const struct {
        const char *prefix;
        size_t minimum;
    } kinds[] = {{"hf_", 20},    {"ghp_", 20},        {"gho_", 20},  {"ghu_", 20},  {"ghs_", 20},  {"ghr_", 20},
                 {"glpat-", 16}, {"github_pat_", 20}, {"xoxb-", 10}, {"xoxp-", 10}, {"xoxa-", 10}, {"xoxr-", 10},
                 {"xoxs-", 10},  {"sk-", 20},         {"AKIA", 16},  {"ASIA", 16}};
    for (const auto &kind : kinds) {
        const size_t length = std::strlen(kind.prefix);
        for (size_t at = text.find(kind.prefix); at != std::string::npos; at = text.find(kind.prefix, at + 1)) {
            if (at > 0 && isTokenChar(text[at - 1]))
                continue;
            const size_t end = tokenEnd(text, at + length);
            if (end - (at + length) >= kind.minimum)
                out.push_back({at, end});
        }
    }
    // JSON web tokens: three base64url parts, the first two JSON objects ("eyJ" is "{\"").
    for (size_t at = text.find("eyJ"); at != std::string::npos; at = text.find("eyJ", at + 1)) {
        if (at > 0 && isTokenChar(text[at - 1]))
            continue;
        size_t end = tokenEnd(text, at);
        int parts = 1;
        while (parts < 3 && end + 1 < text.size() && text[end] == '.' && isTokenChar(text[end + 1])) {
            end = tokenEnd(text, end + 1);
            ++parts;
        }
        if (parts == 3 && end - at >= 20)
            out.push_back({at, end});
    }
}

} // namespace

bool isSecretName(std::string_view name)
{
    const std::string lower = text::lower(std::string(name));
    for (const char *word : {"secret", "token", "password", "passwd", "key"}) {
        if (lower.find(word) != std::string::npos)
            return true;
    }
    return false;
}

std::string redactValue(std::string_view value)
{
    if (value.find("PRIVATE KEY-----") != std::string_view::npos)
        return kRedacted;
    std::vector<Span> spans;
    authorizationCredentials(value, text::lower(std::string(value)), spans);
    urlPasswords(value, spans);
    prefixedTokens(value, spans);
    if (spans.empty())
        return std::string(value);
    std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
    std::string out;
    size_t kept = 0;
    for (const Span &span : spans) {
        if (span.end <= kept)
            continue; // inside a span already replaced
        out.append(value.substr(kept, std::max(span.begin, kept) - kept));
        out += kRedacted;
        kept = span.end;
    }
    out.append(value.substr(kept));
    return out;
}

std::vector<std::string> redactArguments(const std::vector<std::string> &arguments)
{
    std::vector<std::string> out;
    out.reserve(arguments.size());
    bool redactNext = false;
    for (const std::string &argument : arguments) {
        if (redactNext) {
            redactNext = false;
            if (argument.rfind("-", 0) != 0 || argument == "-") {
                out.emplace_back(kRedacted);
                continue;
            }
        }
        const size_t equals = argument.find('=');
        if (equals != std::string::npos && equals > 0) {
            const std::string_view name(argument.data(), equals);
            if (isSecretName(name)) {
                out.push_back(argument.substr(0, equals + 1) + kRedacted);
                continue;
            }
        } else if (argument.size() > 1 && argument[0] == '-' && isSecretName(argument)) {
            redactNext = true; // "--api_key VALUE"
        }
        out.push_back(redactValue(argument));
    }
    return out;
}

std::string redactEnvironmentValue(std::string_view name, std::string_view value)
{
    return isSecretName(name) ? std::string(kRedacted) : redactValue(value);
}

} // namespace accel::rundir
