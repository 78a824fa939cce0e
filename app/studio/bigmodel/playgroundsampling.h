// The Playground's sampling controls: greedy or temperature sampling with top-k, top-p and a
// repetition penalty, max new tokens, seed and stop strings (one per line, "\n" and "\t" escapes).
// request() gives the fields of a worker `generate` request (docs/worker-protocol.md).
#pragma once

#include <QJsonObject>
#include <QWidget>

class QCheckBox;
class QDoubleSpinBox;
class QPlainTextEdit;
class QSpinBox;

namespace accel::app {

class PlaygroundSampling : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundSampling(QWidget *parent = nullptr);

    void setGreedy(bool greedy);
    void setTemperature(double temperature);
    void setTopK(int k);
    void setTopP(double p);
    void setRepetitionPenalty(double penalty);
    void setMaxNewTokens(int tokens);
    void setSeed(qint64 seed);
    void setStopStrings(const QStringList &stops);

    bool greedy() const;
    int maxNewTokens() const;
    QStringList stopStrings() const;

    // max_new_tokens, greedy, temperature, top_k, top_p, repetition_penalty, seed, stop.
    QJsonObject request() const;

    // "a\\nb" -> "a\nb"; "\\t" -> tab; "\\\\" -> backslash.
    static QString unescape(const QString &text);

private:
    void updateEnabled();

    QCheckBox *m_greedy = nullptr;
    QDoubleSpinBox *m_temperature = nullptr;
    QSpinBox *m_topK = nullptr;
    QDoubleSpinBox *m_topP = nullptr;
    QDoubleSpinBox *m_repetition = nullptr;
    QSpinBox *m_maxNewTokens = nullptr;
    QSpinBox *m_seed = nullptr;
    QPlainTextEdit *m_stops = nullptr;
};

} // namespace accel::app
