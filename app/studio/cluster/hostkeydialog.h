// Asks about a host's SSH key. An unknown key: the host, the key type and its SHA256 fingerprint,
// with Accept (accel records it in known_hosts when the check runs again with
// --accept-new-host-key) and Cancel. A changed key: the refusal warning and the command that
// removes the old key, with Close only: a changed key is never accepted from here.
#pragma once

#include "app/studio/cluster/clusterreports.h"

#include <QDialog>

class QPushButton;

namespace accel::app {

class HostKeyDialog : public QDialog {
    Q_OBJECT
public:
    // `changed`: the host offers another key than the one recorded.
    HostKeyDialog(const QString &host, const HostKeyInfo &key, bool changed, QWidget *parent = nullptr);

    QString host() const { return m_host; }
    bool isChangedKey() const { return m_changed; }
    // Accept: only for an unknown key (nullptr for a changed one).
    QPushButton *acceptButton() const { return m_accept; }
    QString fingerprintText() const;

private:
    QString m_host;
    HostKeyInfo m_key;
    bool m_changed = false;
    QPushButton *m_accept = nullptr;
};

} // namespace accel::app
