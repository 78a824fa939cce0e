// The Configure page's right-hand side: the validation summary (errors and warnings, or that
// `accel launch` would accept the config), how many processes a launch starts, every message in
// a list (double-click goes to its field) and the exact file text a save writes.
#pragma once

#include "core/config/diagnostic.h"

#include <QWidget>

class QLabel;
class QListWidget;
class QPlainTextEdit;

namespace accel::app {

class ConfigChecksPanel : public QWidget {
    Q_OBJECT
public:
    explicit ConfigChecksPanel(QWidget *parent = nullptr);

    // `processes`: the launcher's count, or why it cannot tell (`accepted` false).
    void showChecks(const config::Diagnostics &diagnostics, const QString &processes, bool accepted);
    void showText(const QString &text);

Q_SIGNALS:
    void fieldRequested(const QString &key);

private:
    QLabel *m_summary = nullptr;
    QLabel *m_processes = nullptr;
    QListWidget *m_messages = nullptr;
    QPlainTextEdit *m_preview = nullptr;
};

} // namespace accel::app
