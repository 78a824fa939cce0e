#include "monitor/stdoutmetricsparser.h"

#include <QRegularExpression>

#include <cmath>

namespace accel::monitor {

namespace {

const QString kNumber = QStringLiteral("([-+]?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][-+]?\\d+)?|nan|inf|-inf)");

bool isKnownMetric(const QString &key)
{
    static const QStringList known = {QStringLiteral("loss"),          QStringLiteral("train_loss"),
                                      QStringLiteral("eval_loss"),     QStringLiteral("lr"),
                                      QStringLiteral("learning_rate"), QStringLiteral("grad_norm"),
                                      QStringLiteral("epoch"),         QStringLiteral("step"),
                                      QStringLiteral("accuracy"),      QStringLiteral("acc"),
                                      QStringLiteral("ppl"),           QStringLiteral("perplexity"),
                                      QStringLiteral("samples_per_s"), QStringLiteral("tokens_per_s"),
                                      QStringLiteral("step_time_s")};
    return known.contains(key.toLower());
}

double toNumber(const QString &text)
{
    bool ok = false;
    const double value = text.toDouble(&ok);
    return ok && std::isfinite(value) ? value : std::nan("");
}

QString canonicalName(const QString &key)
{
    if (key == QLatin1String("learning_rate"))
        return QStringLiteral("lr");
    return key;
}

} // namespace

int StdoutMetricsParser::nameId(const QString &name)
{
    const auto found = m_nameIds.constFind(name);
    if (found != m_nameIds.constEnd())
        return found.value();
    const int id = static_cast<int>(m_names.size());
    m_names.push_back(name.toUtf8());
    m_nameIds.insert(name, id);
    return id;
}

int StdoutMetricsParser::parseLine(const QString &line, double time, MetricBatch &out)
{
    int rows = 0;
    for (const QStringView segment : QStringView(line).split(QLatin1Char('\r'), Qt::SkipEmptyParts))
        rows += parseSegment(segment, time, out);
    out.names = m_names;
    return rows;
}

int StdoutMetricsParser::parseSegment(QStringView segment, double time, MetricBatch &out)
{
    static const QRegularExpression trainerDict(QStringLiteral("\\{\\s*'[A-Za-z_][^']*'\\s*:.*\\}"));
    static const QRegularExpression dictPair(QStringLiteral("'([A-Za-z_][^']*)'\\s*:\\s*") + kNumber);
    static const QRegularExpression plainPair(QStringLiteral("(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\\s*[=:]\\s*") +
                                              kNumber + QStringLiteral("(?![A-Za-z0-9_:])"));
    static const QRegularExpression tqdmProgress(QStringLiteral("(\\d+)/(\\d+)\\s*\\["));
    static const QRegularExpression tqdmRate(QStringLiteral("(\\d+\\.?\\d*|\\.\\d+)\\s*(it/s|s/it)"));

    std::vector<std::pair<QString, double>> pairs;
    std::int64_t step = kNoStep;

    if (trainerDict.match(segment).hasMatch()) {
        auto it = dictPair.globalMatch(segment);
        while (it.hasNext()) {
            const auto match = it.next();
            pairs.emplace_back(canonicalName(match.captured(1)), toNumber(match.captured(2)));
        }
    } else {
        const auto progress = tqdmProgress.match(segment);
        const auto rate = tqdmRate.match(segment);
        if (progress.hasMatch() && rate.hasMatch()) {
            step = progress.captured(1).toLongLong();
            const double value = toNumber(rate.captured(1));
            if (rate.captured(2) == QLatin1String("it/s"))
                pairs.emplace_back(QStringLiteral("it_per_s"), value);
            else
                pairs.emplace_back(QStringLiteral("step_time_s"), value);
        } else if (progress.hasMatch()) {
            step = progress.captured(1).toLongLong();
        }
        bool known = false;
        std::vector<std::pair<QString, double>> candidates;
        auto it = plainPair.globalMatch(segment);
        while (it.hasNext()) {
            const auto match = it.next();
            const QString key = match.captured(1);
            known = known || isKnownMetric(key);
            candidates.emplace_back(canonicalName(key.toLower()), toNumber(match.captured(2)));
        }
        if (known) {
            for (auto &candidate : candidates) {
                if (candidate.first == QLatin1String("step") && std::isfinite(candidate.second))
                    step = static_cast<std::int64_t>(candidate.second);
                else
                    pairs.push_back(std::move(candidate));
            }
        }
    }
    if (step != kNoStep)
        m_lastStep = step; // printed by the script (progress bar or step=)
    if (pairs.empty())
        return 0;
    if (step == kNoStep)
        step = m_lastStep != kNoStep ? m_lastStep : ++m_lineCount;

    MetricRow row;
    row.time = time;
    row.rank = m_rank;
    row.step = step;
    row.firstValue = static_cast<std::uint32_t>(out.values.size());
    for (const auto &[name, value] : pairs)
        out.values.push_back({nameId(name), value});
    row.valueCount = static_cast<std::uint32_t>(pairs.size());
    out.rows.push_back(row);
    return 1;
}

} // namespace accel::monitor
