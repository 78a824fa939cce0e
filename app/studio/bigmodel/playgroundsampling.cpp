#include "app/studio/bigmodel/playgroundsampling.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QJsonArray>
#include <QPlainTextEdit>
#include <QSpinBox>

namespace accel::app {

PlaygroundSampling::PlaygroundSampling(QWidget *parent) : QWidget(parent)
{
    auto *form = new QFormLayout(this);
    form->setContentsMargins(0, 0, 0, 0);
    m_greedy = new QCheckBox(tr("Greedy (always the most likely token)"), this);
    m_greedy->setObjectName(QStringLiteral("greedy"));
    form->addRow(m_greedy);

    m_temperature = new QDoubleSpinBox(this);
    m_temperature->setObjectName(QStringLiteral("temperature"));
    m_temperature->setRange(0.0, 5.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setDecimals(2);
    m_temperature->setValue(1.0);
    m_temperature->setToolTip(tr("0 is greedy"));
    form->addRow(tr("Temperature"), m_temperature);

    m_topK = new QSpinBox(this);
    m_topK->setObjectName(QStringLiteral("topK"));
    m_topK->setRange(0, 1000000);
    m_topK->setSpecialValueText(tr("off"));
    form->addRow(tr("Top-k"), m_topK);

    m_topP = new QDoubleSpinBox(this);
    m_topP->setObjectName(QStringLiteral("topP"));
    m_topP->setRange(0.01, 1.0);
    m_topP->setSingleStep(0.05);
    m_topP->setValue(1.0);
    m_topP->setToolTip(tr("1 is off"));
    form->addRow(tr("Top-p"), m_topP);

    m_repetition = new QDoubleSpinBox(this);
    m_repetition->setObjectName(QStringLiteral("repetitionPenalty"));
    m_repetition->setRange(0.1, 10.0);
    m_repetition->setSingleStep(0.05);
    m_repetition->setValue(1.0);
    m_repetition->setToolTip(tr("1 is off"));
    form->addRow(tr("Repetition penalty"), m_repetition);

    m_maxNewTokens = new QSpinBox(this);
    m_maxNewTokens->setObjectName(QStringLiteral("maxNewTokens"));
    m_maxNewTokens->setRange(1, 1000000);
    m_maxNewTokens->setValue(64);
    form->addRow(tr("Max new tokens"), m_maxNewTokens);

    m_seed = new QSpinBox(this);
    m_seed->setObjectName(QStringLiteral("seed"));
    m_seed->setRange(0, 2147483647);
    form->addRow(tr("Seed"), m_seed);

    m_stops = new QPlainTextEdit(this);
    m_stops->setObjectName(QStringLiteral("stopStrings"));
    m_stops->setPlaceholderText(tr("one stop string per line; \\n for a newline"));
    m_stops->setTabChangesFocus(true);
    m_stops->setMaximumHeight(m_stops->fontMetrics().lineSpacing() * 4 + 12);
    form->addRow(tr("Stop strings"), m_stops);

    connect(m_greedy, &QCheckBox::toggled, this, &PlaygroundSampling::updateEnabled);
    updateEnabled();
}

void PlaygroundSampling::updateEnabled()
{
    const bool sampled = !m_greedy->isChecked();
    for (QWidget *w : {static_cast<QWidget *>(m_temperature), static_cast<QWidget *>(m_topK),
                       static_cast<QWidget *>(m_topP), static_cast<QWidget *>(m_seed)})
        w->setEnabled(sampled);
}

void PlaygroundSampling::setGreedy(bool greedy)
{
    m_greedy->setChecked(greedy);
}

void PlaygroundSampling::setTemperature(double temperature)
{
    m_temperature->setValue(temperature);
}

void PlaygroundSampling::setTopK(int k)
{
    m_topK->setValue(k);
}

void PlaygroundSampling::setTopP(double p)
{
    m_topP->setValue(p);
}

void PlaygroundSampling::setRepetitionPenalty(double penalty)
{
    m_repetition->setValue(penalty);
}

void PlaygroundSampling::setMaxNewTokens(int tokens)
{
    m_maxNewTokens->setValue(tokens);
}

void PlaygroundSampling::setSeed(qint64 seed)
{
    m_seed->setValue(static_cast<int>(seed));
}

void PlaygroundSampling::setStopStrings(const QStringList &stops)
{
    QStringList lines;
    for (QString s : stops)
        lines << s.replace(QLatin1Char('\\'), QLatin1String("\\\\"))
                     .replace(QLatin1Char('\n'), QLatin1String("\\n"))
                     .replace(QLatin1Char('\t'), QLatin1String("\\t"));
    m_stops->setPlainText(lines.join(QLatin1Char('\n')));
}

bool PlaygroundSampling::greedy() const
{
    return m_greedy->isChecked();
}

int PlaygroundSampling::maxNewTokens() const
{
    return m_maxNewTokens->value();
}

QString PlaygroundSampling::unescape(const QString &text)
{
    QString out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text.at(i);
        if (c != QLatin1Char('\\') || i + 1 == text.size()) {
            out += c;
            continue;
        }
        const QChar next = text.at(++i);
        if (next == QLatin1Char('n'))
            out += QLatin1Char('\n');
        else if (next == QLatin1Char('t'))
            out += QLatin1Char('\t');
        else if (next == QLatin1Char('\\'))
            out += QLatin1Char('\\');
        else
            out += c, out += next;
    }
    return out;
}

QStringList PlaygroundSampling::stopStrings() const
{
    QStringList stops;
    const QStringList lines = m_stops->toPlainText().split(QLatin1Char('\n'));
    for (const QString &line : lines)
        if (!line.isEmpty())
            stops << unescape(line);
    return stops;
}

QJsonObject PlaygroundSampling::request() const
{
    QJsonObject r;
    r.insert(QStringLiteral("max_new_tokens"), m_maxNewTokens->value());
    r.insert(QStringLiteral("greedy"), m_greedy->isChecked());
    r.insert(QStringLiteral("temperature"), m_temperature->value());
    r.insert(QStringLiteral("top_k"), m_topK->value());
    r.insert(QStringLiteral("top_p"), m_topP->value());
    r.insert(QStringLiteral("repetition_penalty"), m_repetition->value());
    r.insert(QStringLiteral("seed"), m_seed->value());
    const QStringList stops = stopStrings();
    if (!stops.isEmpty())
        r.insert(QStringLiteral("stop"), QJsonArray::fromStringList(stops));
    return r;
}

} // namespace accel::app
