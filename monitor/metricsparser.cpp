#include "monitor/metricsparser.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>

#include <charconv>
#include <cmath>
#include <cstring>

namespace accel::monitor {

namespace {

enum class Field { Version, Time, Rank, Step, Kind, Scalar };

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

inline const char *skipSpace(const char *p, const char *end)
{
    while (p < end && isSpace(*p))
        ++p;
    return p;
}

Field classify(const char *key, size_t length)
{
    if (length == 1 && key[0] == 'v')
        return Field::Version;
    if (length == 4) {
        if (std::memcmp(key, "time", 4) == 0)
            return Field::Time;
        if (std::memcmp(key, "rank", 4) == 0)
            return Field::Rank;
        if (std::memcmp(key, "step", 4) == 0)
            return Field::Step;
        if (std::memcmp(key, "kind", 4) == 0)
            return Field::Kind;
    }
    return Field::Scalar;
}

SampleKind kindFromName(const char *name, size_t length)
{
    auto is = [&](const char *word) { return std::strlen(word) == length && std::memcmp(name, word, length) == 0; };
    if (is("train"))
        return SampleKind::Train;
    if (is("eval"))
        return SampleKind::Eval;
    if (is("system"))
        return SampleKind::System;
    return SampleKind::Other;
}

inline bool isDigit(char c)
{
    return static_cast<unsigned>(c - '0') < 10u;
}

// Clinger's fast path: a decimal with at most 15 significant digits and a power of ten within
// 1e+-22 is exactly mantissa * 10^k or mantissa / 10^k, correctly rounded by one IEEE operation.
// Returns nullptr when the number needs the general parser.
const char *scanSimpleDouble(const char *p, const char *end, double &value)
{
    static constexpr double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *q = p;
    const bool negative = q < end && *q == '-';
    if (negative)
        ++q;
    std::uint64_t mantissa = 0;
    int digits = 0;
    const char *integerStart = q;
    while (q < end && isDigit(*q)) {
        mantissa = mantissa * 10 + static_cast<unsigned>(*q - '0');
        ++digits;
        ++q;
        if (digits > 15)
            return nullptr;
    }
    if (q == integerStart)
        return nullptr;
    int exponent = 0;
    if (q < end && *q == '.') {
        const char *fractionStart = ++q;
        while (q < end && isDigit(*q)) {
            mantissa = mantissa * 10 + static_cast<unsigned>(*q - '0');
            ++digits;
            ++q;
            if (digits > 15)
                return nullptr;
        }
        if (q == fractionStart)
            return nullptr;
        exponent = -static_cast<int>(q - fractionStart);
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        ++q;
        const bool negativeExponent = q < end && *q == '-';
        if (q < end && (*q == '-' || *q == '+'))
            ++q;
        const char *exponentStart = q;
        int written = 0;
        while (q < end && isDigit(*q) && q - exponentStart < 4) {
            written = written * 10 + (*q - '0');
            ++q;
        }
        if (q == exponentStart || (q < end && isDigit(*q)))
            return nullptr;
        exponent += negativeExponent ? -written : written;
    }
    if (exponent < -22 || exponent > 22)
        return nullptr;
    const double m = static_cast<double>(mantissa);
    value = exponent < 0 ? m / powers[-exponent] : m * powers[exponent];
    if (negative)
        value = -value;
    return q;
}

// A JSON number (or NaN / Infinity as Python's json module writes them). Values beyond double's
// range become +-inf (or +-0 for tiny ones) instead of failing the line.
const char *scanDouble(const char *p, const char *end, double &value)
{
    if (const char *after = scanSimpleDouble(p, end, value))
        return after;
    const auto result = std::from_chars(p, end, value);
    if (result.ec == std::errc())
        return result.ptr;
    if (result.ec != std::errc::result_out_of_range)
        return nullptr;
    const bool negative = *p == '-';
    bool tiny = false;
    for (const char *q = p; q < result.ptr; ++q) {
        if ((*q == 'e' || *q == 'E') && q + 1 < result.ptr && q[1] == '-')
            tiny = true;
    }
    value = tiny ? (negative ? -0.0 : 0.0)
                 : (negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
    return result.ptr;
}

// An integer written either plainly or as an integral double ("12.0", "1e3").
const char *scanInteger(const char *p, const char *end, std::int64_t &value)
{
    const auto result = std::from_chars(p, end, value);
    if (result.ec == std::errc() &&
        (result.ptr == end || (*result.ptr != '.' && *result.ptr != 'e' && *result.ptr != 'E')))
        return result.ptr;
    double asDouble = 0.0;
    const char *after = scanDouble(p, end, asDouble);
    if (!after || !std::isfinite(asDouble) || asDouble != std::floor(asDouble) || std::fabs(asDouble) > 9.0e18)
        return nullptr;
    value = static_cast<std::int64_t>(asDouble);
    return after;
}

bool isFutureVersion(double version)
{
    return std::isfinite(version) && std::floor(version) > 1.0;
}

} // namespace

int MetricsParser::nameId(const char *begin, const char *end)
{
    m_key.assign(begin, end);
    const auto found = m_nameIds.find(m_key);
    if (found != m_nameIds.end())
        return found->second;
    const int id = static_cast<int>(m_names.size());
    m_names.emplace_back(begin, static_cast<qsizetype>(end - begin));
    m_nameIds.emplace(m_key, id);
    return id;
}

MetricsParser::LineResult MetricsParser::parseLine(const char *begin, const char *end, MetricBatch &out)
{
    const char *p = skipSpace(begin, end);
    while (end > p && isSpace(end[-1]))
        --end;
    if (p == end)
        return LineResult::Empty;
    if (*p != '{' || end[-1] != '}')
        return LineResult::Junk;

    const size_t valuesStart = out.values.size();
    MetricRow row;
    row.rank = m_defaultRank;
    row.firstValue = static_cast<std::uint32_t>(valuesStart);
    auto junk = [&] {
        out.values.resize(valuesStart);
        return LineResult::Junk;
    };
    auto slow = [&] {
        out.values.resize(valuesStart);
        return parseSlow(begin, end, out);
    };

    p = skipSpace(p + 1, end);
    if (p < end && *p == '}')
        return junk(); // {} carries nothing
    size_t position = 0;
    for (;;) {
        if (p >= end || *p != '"')
            return junk();
        const char *keyBegin = p + 1;
        const char *keyEnd = static_cast<const char *>(std::memchr(keyBegin, '"', static_cast<size_t>(end - keyBegin)));
        if (!keyEnd)
            return junk();
        const size_t keyLength = static_cast<size_t>(keyEnd - keyBegin);
        if (std::memchr(keyBegin, '\\', keyLength))
            return slow();
        p = skipSpace(keyEnd + 1, end);
        if (p >= end || *p != ':')
            return junk();
        p = skipSpace(p + 1, end);
        if (p >= end)
            return junk();

        const Field field = classify(keyBegin, keyLength);
        const char c = *p;
        if (c == '"') {
            const char *valueBegin = p + 1;
            const char *valueEnd =
                static_cast<const char *>(std::memchr(valueBegin, '"', static_cast<size_t>(end - valueBegin)));
            if (!valueEnd)
                return junk();
            if (std::memchr(valueBegin, '\\', static_cast<size_t>(valueEnd - valueBegin)))
                return slow();
            if (field == Field::Kind)
                row.kind = kindFromName(valueBegin, static_cast<size_t>(valueEnd - valueBegin));
            else if (field != Field::Scalar)
                return junk();
            p = valueEnd + 1; // string scalars are not plotted: skipped
        } else if (c == '{' || c == '[') {
            return slow();
        } else if (c == 'n' || c == 't' || c == 'f') {
            const bool isNull = end - p >= 4 && std::memcmp(p, "null", 4) == 0;
            const bool isTrue = end - p >= 4 && std::memcmp(p, "true", 4) == 0;
            const bool isFalse = end - p >= 5 && std::memcmp(p, "false", 5) == 0;
            if (!isNull && !isTrue && !isFalse)
                return junk();
            p += isFalse ? 5 : 4;
            if (isNull) {
                if (field == Field::Scalar)
                    out.values.push_back({nameIdAt(position++, keyBegin, keyEnd), kNaN});
                else if (field == Field::Version || field == Field::Rank)
                    return junk();
                // null time stays NaN, null step stays absent
            } else if (field != Field::Scalar && field != Field::Kind) {
                return junk();
            }
        } else if (field == Field::Rank || field == Field::Step) {
            std::int64_t integer = 0;
            p = scanInteger(p, end, integer);
            if (!p)
                return junk();
            if (field == Field::Rank) {
                if (integer < -1 || integer > std::numeric_limits<int>::max())
                    return junk();
                row.rank = static_cast<int>(integer);
            } else {
                row.step = integer;
            }
        } else {
            double number = 0.0;
            p = scanDouble(p, end, number);
            if (!p)
                return junk();
            switch (field) {
            case Field::Version:
                if (isFutureVersion(number)) {
                    out.values.resize(valuesStart);
                    return LineResult::FutureVersion;
                }
                break;
            case Field::Time:
                row.time = number;
                break;
            case Field::Kind:
                return junk();
            default:
                out.values.push_back({nameIdAt(position++, keyBegin, keyEnd), std::isfinite(number) ? number : kNaN});
                break;
            }
        }
        p = skipSpace(p, end);
        if (p < end && *p == ',') {
            p = skipSpace(p + 1, end);
            continue;
        }
        if (p < end && *p == '}' && p + 1 == end)
            break;
        return junk();
    }
    row.valueCount = static_cast<std::uint32_t>(out.values.size() - valuesStart);
    out.rows.push_back(row);
    return LineResult::Sample;
}

MetricsParser::LineResult MetricsParser::parseSlow(const char *begin, const char *end, MetricBatch &out)
{
    ++m_stats.slowPath;
    QJsonParseError error;
    const QJsonDocument document =
        QJsonDocument::fromJson(QByteArray::fromRawData(begin, static_cast<qsizetype>(end - begin)), &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return LineResult::Junk;
    const QJsonObject object = document.object();
    const size_t valuesStart = out.values.size();
    MetricRow row;
    row.rank = m_defaultRank;
    row.firstValue = static_cast<std::uint32_t>(valuesStart);
    auto junk = [&] {
        out.values.resize(valuesStart);
        return LineResult::Junk;
    };
    if (object.isEmpty())
        return junk();
    const QJsonValue version = object.value(QLatin1String("v"));
    if (version.isDouble() && isFutureVersion(version.toDouble()))
        return LineResult::FutureVersion;
    if (!version.isUndefined() && !version.isDouble())
        return junk();
    for (auto it = object.begin(); it != object.end(); ++it) {
        const QByteArray key = it.key().toUtf8();
        const Field field = classify(key.constData(), static_cast<size_t>(key.size()));
        const QJsonValue value = it.value();
        switch (field) {
        case Field::Version:
            break;
        case Field::Time:
            if (value.isDouble())
                row.time = value.toDouble();
            else if (!value.isNull())
                return junk();
            break;
        case Field::Rank:
        case Field::Step: {
            if (value.isNull() && field == Field::Step)
                break;
            const double number = value.toDouble(kNaN);
            if (!value.isDouble() || number != std::floor(number) || std::fabs(number) > 9.0e18)
                return junk();
            if (field == Field::Rank) {
                if (number < -1 || number > std::numeric_limits<int>::max())
                    return junk();
                row.rank = static_cast<int>(number);
            } else {
                row.step = static_cast<std::int64_t>(number);
            }
            break;
        }
        case Field::Kind: {
            if (!value.isString())
                return junk();
            const QByteArray kind = value.toString().toUtf8();
            row.kind = kindFromName(kind.constData(), static_cast<size_t>(kind.size()));
            break;
        }
        case Field::Scalar:
            if (value.isDouble())
                out.values.push_back({nameId(key.constData(), key.constData() + key.size()),
                                      std::isfinite(value.toDouble()) ? value.toDouble() : kNaN});
            else if (value.isNull())
                out.values.push_back({nameId(key.constData(), key.constData() + key.size()), kNaN});
            break;
        }
    }
    row.valueCount = static_cast<std::uint32_t>(out.values.size() - valuesStart);
    out.rows.push_back(row);
    return LineResult::Sample;
}

int MetricsParser::nameIdAt(size_t position, const char *begin, const char *end)
{
    const auto length = static_cast<qsizetype>(end - begin);
    if (position < m_recentIds.size()) {
        const int cached = m_recentIds[position];
        if (cached >= 0) {
            const QByteArray &name = m_names[static_cast<size_t>(cached)];
            if (name.size() == length && std::memcmp(name.constData(), begin, static_cast<size_t>(length)) == 0)
                return cached;
        }
    } else {
        m_recentIds.resize(position + 1, -1);
    }
    const int id = nameId(begin, end);
    m_recentIds[position] = id;
    return id;
}

void MetricsParser::consumeLine(const char *begin, const char *end, MetricBatch &out)
{
    // The limit holds for whole lines too, not only for partial ones waiting for their newline.
    const LineResult result = end - begin > m_maximumLineLength ? LineResult::Junk : parseLine(begin, end, out);
    switch (result) {
    case LineResult::Empty:
        return;
    case LineResult::Sample:
        ++m_stats.samples;
        break;
    case LineResult::Junk:
        ++m_stats.junk;
        break;
    case LineResult::FutureVersion:
        ++m_stats.futureVersion;
        break;
    }
    ++m_stats.lines;
}

void MetricsParser::feed(QByteArrayView chunk, MetricBatch &out)
{
    const char *p = chunk.data();
    const char *end = p + chunk.size();
    if (!m_pending.isEmpty() || m_dropping) {
        const char *newline =
            p < end ? static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p))) : nullptr;
        if (!newline) {
            if (!m_dropping) {
                m_pending.append(p, static_cast<qsizetype>(end - p));
                if (m_pending.size() > m_maximumLineLength) {
                    m_pending.clear();
                    m_dropping = true;
                    ++m_stats.junk;
                    ++m_stats.lines;
                }
            }
            out.names = m_names;
            return;
        }
        if (m_dropping) {
            m_dropping = false;
        } else {
            m_pending.append(p, static_cast<qsizetype>(newline - p));
            consumeLine(m_pending.constData(), m_pending.constData() + m_pending.size(), out);
            m_pending.clear();
        }
        p = newline + 1;
    }
    while (p < end) {
        const char *newline = static_cast<const char *>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
        if (!newline)
            break;
        consumeLine(p, newline, out);
        p = newline + 1;
    }
    if (p < end) {
        if (end - p > m_maximumLineLength) {
            m_dropping = true;
            ++m_stats.junk;
            ++m_stats.lines;
        } else {
            m_pending.append(p, static_cast<qsizetype>(end - p));
        }
    }
    out.names = m_names;
}

void MetricsParser::finish(MetricBatch &out)
{
    if (!m_pending.isEmpty())
        consumeLine(m_pending.constData(), m_pending.constData() + m_pending.size(), out);
    m_pending.clear();
    m_dropping = false;
    out.names = m_names;
}

void MetricsParser::resetStream()
{
    m_pending.clear();
    m_dropping = false;
}

} // namespace accel::monitor
