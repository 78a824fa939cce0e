// The Launch page's Python interpreter row: the interpreter field (empty: python3), a menu of the
// interpreters found for the script (pythonCandidates(), each probed: Python, torch and accelerate
// versions) with Browse, and a line under it that says what the chosen interpreter is and whether
// it can import what the script imports. The line follows every edit (after a short pause, while
// the row is shown); when the chosen one lacks torch or accelerate and a found one has both, the
// line offers it.
#pragma once

#include "app/studio/launch/pythoninterpreters.h"

#include <QList>
#include <QTimer>
#include <QWidget>

class QLabel;
class QLineEdit;
class QMenu;
class QToolButton;

namespace accel::app {

class InterpreterField : public QWidget {
    Q_OBJECT
public:
    explicit InterpreterField(QWidget *parent = nullptr);

    void setInterpreter(const QString &python);
    QString interpreter() const;             // as typed, trimmed; empty means python3
    void setScriptPath(const QString &path); // whose imports are checked; candidates start there
    QLineEdit *lineEdit() const { return m_edit; }

    // Looks for interpreters (again) and probes each; found() when done.
    void findInterpreters();
    bool isFinding() const { return m_finding; }
    const QList<InterpreterReport> &foundInterpreters() const { return m_found; }
    // The last check of the current interpreter and script (ran == false and error empty: none yet).
    const InterpreterReport &lastCheck() const { return m_check; }
    QString checkText() const;

Q_SIGNALS:
    void changed();
    void checked(const accel::app::InterpreterReport &report);
    void found();

protected:
    void showEvent(QShowEvent *event) override;

private:
    void scheduleCheck();
    void onChecked(const InterpreterReport &report);
    void probeNextCandidate();
    void fillMenu();
    void updateCheckLine();

    QLineEdit *m_edit = nullptr;
    QToolButton *m_choose = nullptr;
    QMenu *m_menu = nullptr;
    QLabel *m_line = nullptr;
    QString m_script;
    QTimer m_pause;
    InterpreterProbe m_probe;       // the chosen interpreter with the script
    InterpreterProbe m_finderProbe; // the candidates, one after the other
    InterpreterReport m_check;
    QStringList m_candidates;
    QList<InterpreterReport> m_found;
    bool m_finding = false;
    bool m_checkWhenShown = false;
};

} // namespace accel::app
