#include "app/studio/bigmodel/playgroundchat.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTextCursor>
#include <QVBoxLayout>

namespace accel::app {

PlaygroundChat::PlaygroundChat(QWidget *parent) : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_prompt = new QPlainTextEdit(this);
    m_prompt->setObjectName(QStringLiteral("prompt"));
    m_prompt->setPlaceholderText(tr("Prompt (token ids like \"1, 2, 3\" when the model has no tokenizer.json)"));
    m_prompt->setMaximumHeight(m_prompt->fontMetrics().lineSpacing() * 5 + 12);
    layout->addWidget(m_prompt);
    auto *buttons = new QHBoxLayout;
    m_generateButton = new QPushButton(tr("Generate"), this);
    m_generateButton->setObjectName(QStringLiteral("generateButton"));
    m_generateButton->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    m_stopButton = new QPushButton(tr("Stop"), this);
    m_stopButton->setObjectName(QStringLiteral("stopButton"));
    m_statsLabel = new QLabel(this);
    m_statsLabel->setObjectName(QStringLiteral("stats"));
    buttons->addWidget(m_generateButton);
    buttons->addWidget(m_stopButton);
    buttons->addWidget(m_statsLabel, 1);
    layout->addLayout(buttons);
    m_output = new QPlainTextEdit(this);
    m_output->setObjectName(QStringLiteral("output"));
    m_output->setReadOnly(true);
    layout->addWidget(m_output, 1);
    connect(m_generateButton, &QPushButton::clicked, this, &PlaygroundChat::generateClicked);
    connect(m_stopButton, &QPushButton::clicked, this, &PlaygroundChat::stopClicked);
}

void PlaygroundChat::setPrompt(const QString &prompt)
{
    m_prompt->setPlainText(prompt);
}

QString PlaygroundChat::prompt() const
{
    return m_prompt->toPlainText();
}

void PlaygroundChat::setButtonsEnabled(bool generate, bool stop)
{
    m_generateButton->setEnabled(generate);
    m_stopButton->setEnabled(stop);
}

void PlaygroundChat::begin()
{
    m_output->clear();
    m_text.clear();
    m_updates = 0;
    m_liveTokens = 0;
    m_firstTokenMs = -1;
    m_stopReason.clear();
    m_stats = {};
    m_timer.start();
    m_statsLabel->setText(tr("waiting for the first token…"));
}

void PlaygroundChat::appendToken(const QString &text)
{
    ++m_liveTokens;
    if (m_firstTokenMs < 0)
        m_firstTokenMs = m_timer.elapsed();
    if (text.isEmpty())
        return; // part of a character, or a tail that may still become a stop string
    QScrollBar *bar = m_output->verticalScrollBar();
    const bool atEnd = bar->value() == bar->maximum();
    QTextCursor cursor(m_output->document());
    cursor.movePosition(QTextCursor::End);
    cursor.insertText(text);
    m_text += text;
    if (atEnd)
        bar->setValue(bar->maximum());
    ++m_updates;
}

void PlaygroundChat::finish(const QString &text, const QString &stopReason, const GenerationStats &stats)
{
    // The final text is authoritative (a held-back tail that turned out not to be a stop string).
    if (m_text != text && !text.isEmpty()) {
        m_text = text;
        m_output->setPlainText(text);
    }
    m_stopReason = stopReason;
    m_stats = stats;
    m_statsLabel->setText(statsText());
}

QString PlaygroundChat::statsText() const
{
    if (m_stopReason.isEmpty() && m_stats.newTokens == 0)
        return m_statsLabel->text();
    QString text = tr("%1 tokens (%2) · first token %3 ms · %4 tokens/s decode · %5 ms total")
                       .arg(m_stats.newTokens)
                       .arg(m_stopReason)
                       .arg(m_stats.timeToFirstTokenMs, 0, 'f', 1)
                       .arg(m_stats.decodeTokensPerSecond, 0, 'f', 1)
                       .arg(m_stats.totalMs, 0, 'f', 0);
    if (m_decodeBound > 0 && m_stats.decodeTokensPerSecond > 0)
        text += tr(" · %1 % of the memory bound (%2 tokens/s)")
                    .arg(100.0 * m_stats.decodeTokensPerSecond / m_decodeBound, 0, 'f', 0)
                    .arg(m_decodeBound, 0, 'f', 1);
    return text;
}

void PlaygroundChat::updateLiveStats()
{
    if (m_firstTokenMs < 0)
        return;
    const qint64 sinceFirst = m_timer.elapsed() - m_firstTokenMs;
    const double rate = sinceFirst > 0 ? 1000.0 * (m_liveTokens - 1) / sinceFirst : 0.0;
    m_statsLabel->setText(tr("%1 tokens · first token after %2 ms · %3 tokens/s")
                              .arg(m_liveTokens)
                              .arg(m_firstTokenMs)
                              .arg(rate, 0, 'f', 1));
}

} // namespace accel::app
