// The Playground's conversation pane: the prompt, Generate and Stop, the answer streaming in and
// the generation's figures (live tokens/s while it runs, then the worker's own statistics).
// It keeps the text exactly as streamed (the view may normalize it); PlaygroundPage decides when
// a generation starts and ends.
#pragma once

#include "app/studio/bigmodel/workerclient.h"

#include <QElapsedTimer>
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace accel::app {

class PlaygroundChat : public QWidget {
    Q_OBJECT
public:
    explicit PlaygroundChat(QWidget *parent = nullptr);

    void setPrompt(const QString &prompt);
    QString prompt() const;
    void setButtonsEnabled(bool generate, bool stop);

    // A generation starts: the answer and its figures are cleared.
    void begin();
    // One streamed token; its text is empty for part of a character or a held-back tail.
    void appendToken(const QString &text);
    // The worker's final text (authoritative), why it stopped and its statistics.
    void finish(const QString &text, const QString &stopReason, const GenerationStats &stats);
    // Tokens so far, time to the first one and the rate since (shown every ~250 ms while generating).
    void updateLiveStats();
    // The loaded model's decode bound in tokens/s (0: unknown): the figures say how near decode is.
    void setDecodeBound(double tokensPerSecond) { m_decodeBound = tokensPerSecond; }

    QString text() const { return m_text; }
    QString statsText() const;
    int streamUpdates() const { return m_updates; }
    QString stopReason() const { return m_stopReason; }
    GenerationStats stats() const { return m_stats; }

Q_SIGNALS:
    void generateClicked();
    void stopClicked();

private:
    QPlainTextEdit *m_prompt = nullptr;
    QPushButton *m_generateButton = nullptr;
    QPushButton *m_stopButton = nullptr;
    QLabel *m_statsLabel = nullptr;
    QPlainTextEdit *m_output = nullptr;

    QString m_text;
    QString m_stopReason;
    GenerationStats m_stats;
    int m_updates = 0;
    int m_liveTokens = 0;
    QElapsedTimer m_timer;
    qint64 m_firstTokenMs = -1;
    double m_decodeBound = 0;
};

} // namespace accel::app
