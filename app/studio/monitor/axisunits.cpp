#include "app/studio/monitor/axisunits.h"

#include "app/studio/monitor/qcustomplotinclude.h"

#include <cmath>

namespace accel::app {

namespace {

const char *const kByteUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
constexpr int kByteUnitCount = 6;

int bytePower(double magnitude)
{
    int power = 0;
    while (power + 1 < kByteUnitCount && std::fabs(magnitude) >= std::pow(1024.0, power + 1))
        ++power;
    return power;
}

// Ticks on round steps of the largest binary unit below the range's end (0, 256 MiB, 512 MiB, ...),
// labelled with that unit.
class ByteTicker : public QCPAxisTicker {
protected:
    double getTickStep(const QCPRange &range) override
    {
        m_power = bytePower(std::max(std::fabs(range.lower), std::fabs(range.upper)));
        const double unit = std::pow(1024.0, m_power);
        const double step = QCPAxisTicker::getTickStep(QCPRange(range.lower / unit, range.upper / unit));
        m_decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
        return step * unit;
    }
    QString getTickLabel(double tick, const QLocale &locale, QChar, int) override
    {
        const double unit = std::pow(1024.0, m_power);
        return locale.toString(tick / unit, 'f', m_decimals) + QLatin1Char(' ') + QLatin1String(kByteUnits[m_power]);
    }

private:
    int m_power = 0;
    int m_decimals = 0;
};

} // namespace

QString formatBytes(double bytes)
{
    if (!std::isfinite(bytes))
        return QStringLiteral("–");
    const int power = bytePower(bytes);
    const double scaled = bytes / std::pow(1024.0, power);
    const int decimals = power == 0 ? 0 : (std::fabs(scaled) >= 10 ? 1 : 2);
    return QStringLiteral("%1 %2").arg(scaled, 0, 'f', decimals).arg(QLatin1String(kByteUnits[power]));
}

QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return QStringLiteral("–");
    const auto total = qint64(std::llround(seconds));
    if (total < 60)
        return QStringLiteral("%1 s").arg(total);
    if (total < 3600)
        return QStringLiteral("%1 min %2 s").arg(total / 60).arg(total % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 h %2 min").arg(total / 3600).arg((total % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString formatValue(double value, AxisUnit unit)
{
    if (!std::isfinite(value))
        return QStringLiteral("–");
    switch (unit) {
    case AxisUnit::Bytes:
        return formatBytes(value);
    case AxisUnit::Percent:
        return QStringLiteral("%1 %").arg(value, 0, 'f', 1);
    case AxisUnit::PerSecond:
        return QStringLiteral("%1 /s").arg(value, 0, 'g', 4);
    case AxisUnit::Seconds:
        return QStringLiteral("%1 s").arg(value, 0, 'g', 3);
    case AxisUnit::Plain:
        break;
    }
    return QString::number(value, 'g', 5);
}

QSharedPointer<QCPAxisTicker> tickerFor(AxisUnit unit)
{
    if (unit == AxisUnit::Bytes)
        return QSharedPointer<QCPAxisTicker>(new ByteTicker);
    return QSharedPointer<QCPAxisTicker>(new QCPAxisTicker);
}

} // namespace accel::app
