// Code point ranges of the Unicode general categories (L, Lu, Ll, Lt, Lm, Lo, M, Mn, Mc, Me, N,
// Nd, Nl, No, P, S, Z) and of whitespace ("space": what \s matches) as Hugging Face tokenizers
// matches them. unicodetables.cpp is generated from the tokenizers package by
// make_unicode_tables.py, so pre-tokenization does not depend on the Unicode version of the
// installed PCRE2 (which may lack the letters of Unicode 15 and 16, or count U+180E as a space).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace accel::tokenizer::unicode {

struct CodePointRange {
    char32_t first;
    char32_t last; // inclusive
};

struct RangeList {
    const CodePointRange *ranges;
    size_t size;
};

// The ranges of a property by its pattern name ("L", "Nd", "space"), or nullopt.
std::optional<RangeList> propertyRanges(std::string_view name);

// Where the tables came from ("tokenizers 0.23.3").
const char *tablesSource();

} // namespace accel::tokenizer::unicode
