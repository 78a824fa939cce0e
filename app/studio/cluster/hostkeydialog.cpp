#include "app/studio/cluster/hostkeydialog.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace accel::app {

namespace {
QLabel *selectable(const QString &text, const QString &objectName, QWidget *parent)
{
    auto *label = new QLabel(text, parent);
    label->setObjectName(objectName);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setWordWrap(true);
    return label;
}
} // namespace

HostKeyDialog::HostKeyDialog(const QString &host, const HostKeyInfo &key, bool changed, QWidget *parent)
    : QDialog(parent), m_host(host), m_key(key), m_changed(changed)
{
    setObjectName(QStringLiteral("hostKeyDialog"));
    setWindowTitle(changed ? tr("Host key changed: %1").arg(host) : tr("Unknown host key: %1").arg(host));
    auto *layout = new QVBoxLayout(this);
    auto *top = new QHBoxLayout;
    auto *icon = new QLabel(this);
    const QStyle::StandardPixmap pixmap = changed ? QStyle::SP_MessageBoxCritical : QStyle::SP_MessageBoxQuestion;
    icon->setPixmap(style()->standardIcon(pixmap).pixmap(48, 48));
    top->addWidget(icon, 0, Qt::AlignTop);
    const QString intro =
        changed ? tr("<b>WARNING: the host key of %1 has changed.</b><br>known_hosts holds another key for %2 than "
                     "the one it offers now. Someone may be intercepting the connection, or the host was "
                     "reinstalled. The studio refuses to connect.")
                      .arg(host.toHtmlEscaped(), key.knownHostsName.toHtmlEscaped())
                : tr("<b>%1 is not a known host.</b><br>Its key is not in %2. Compare the fingerprint below with "
                     "the host's own (<tt>ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub</tt> on the host, or ask its "
                     "administrator) before accepting it.")
                      .arg(host.toHtmlEscaped(), key.knownHostsFile.toHtmlEscaped());
    auto *message = new QLabel(intro, this);
    message->setObjectName(QStringLiteral("hostKeyMessage"));
    message->setWordWrap(true);
    top->addWidget(message, 1);
    layout->addLayout(top);

    auto *form = new QFormLayout;
    form->addRow(tr("Host:"), selectable(host, QStringLiteral("hostKeyHost"), this));
    form->addRow(tr("Key type:"), selectable(key.type, QStringLiteral("hostKeyType"), this));
    auto *fingerprint = selectable(key.fingerprint, QStringLiteral("hostKeyFingerprint"), this);
    fingerprint->setFont(QFont(QStringLiteral("monospace")));
    form->addRow(tr("Fingerprint:"), fingerprint);
    if (!key.knownHostsFile.isEmpty())
        form->addRow(tr("known_hosts:"), selectable(key.knownHostsFile, QStringLiteral("hostKeyFile"), this));
    layout->addLayout(form);

    auto *buttons = new QDialogButtonBox(this);
    if (changed) {
        layout->addWidget(new QLabel(tr("If the change is expected, remove the old key and check again:"), this));
        auto *command = selectable(key.removeCommand(), QStringLiteral("hostKeyRemoveCommand"), this);
        command->setFont(QFont(QStringLiteral("monospace")));
        layout->addWidget(command);
        auto *copy = buttons->addButton(tr("Copy command"), QDialogButtonBox::ActionRole);
        connect(copy, &QPushButton::clicked, this,
                [this] { QApplication::clipboard()->setText(m_key.removeCommand()); });
        buttons->addButton(QDialogButtonBox::Close);
    } else {
        m_accept = buttons->addButton(tr("Accept and connect"), QDialogButtonBox::AcceptRole);
        m_accept->setObjectName(QStringLiteral("acceptHostKey"));
        buttons->addButton(QDialogButtonBox::Cancel)->setDefault(true);
    }
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QString HostKeyDialog::fingerprintText() const
{
    return m_key.fingerprint;
}

} // namespace accel::app
