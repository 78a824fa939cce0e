#include "launcher/export/shellquote.h"

namespace accel::launcher::exporting {

std::string shellQuote(const std::string &word)
{
    if (word.empty())
        return "''";
    bool safe = true;
    for (char c : word) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '-' || c == '.' || c == '/' || c == ':' || c == ',' || c == '=' || c == '@' || c == '+' ||
                        c == '%';
        if (!ok) {
            safe = false;
            break;
        }
    }
    if (safe)
        return word;
    std::string out = "'";
    for (char c : word) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += "'";
    return out;
}

std::string shellJoin(const std::vector<std::string> &words)
{
    std::string out;
    for (const std::string &word : words) {
        if (!out.empty())
            out += ' ';
        out += shellQuote(word);
    }
    return out;
}

Result<std::vector<std::string>> shellSplit(const std::string &text)
{
    std::vector<std::string> words;
    std::string current;
    bool inWord = false;
    size_t i = 0;
    const size_t n = text.size();
    while (i < n) {
        const char c = text[i];
        if (c == '\\') {
            if (i + 1 < n && text[i + 1] == '\n') {
                i += 2;
                continue;
            }
            if (i + 1 < n)
                current += text[i + 1];
            inWord = true;
            i += 2;
            continue;
        }
        if (c == '\'') {
            const size_t end = text.find('\'', i + 1);
            if (end == std::string::npos)
                return makeError(ErrorCode::InvalidInput, "unterminated single quote", "offset " + std::to_string(i));
            current += text.substr(i + 1, end - i - 1);
            inWord = true;
            i = end + 1;
            continue;
        }
        if (c == '"') {
            size_t j = i + 1;
            bool closed = false;
            while (j < n) {
                if (text[j] == '\\' && j + 1 < n &&
                    (text[j + 1] == '"' || text[j + 1] == '\\' || text[j + 1] == '$' || text[j + 1] == '`')) {
                    current += text[j + 1];
                    j += 2;
                    continue;
                }
                if (text[j] == '\\' && j + 1 < n && text[j + 1] == '\n') {
                    j += 2;
                    continue;
                }
                if (text[j] == '"') {
                    closed = true;
                    break;
                }
                current += text[j++];
            }
            if (!closed)
                return makeError(ErrorCode::InvalidInput, "unterminated double quote", "offset " + std::to_string(i));
            inWord = true;
            i = j + 1;
            continue;
        }
        if (c == '#' && !inWord) {
            while (i < n && text[i] != '\n')
                ++i;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (inWord) {
                words.push_back(current);
                current.clear();
                inWord = false;
            }
            ++i;
            continue;
        }
        current += c;
        inWord = true;
        ++i;
    }
    if (inWord)
        words.push_back(current);
    return words;
}

} // namespace accel::launcher::exporting
