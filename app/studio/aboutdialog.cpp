#include "app/studio/aboutdialog.h"

#include "buildinfo.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QVBoxLayout>
#include <QtGlobal>

#include <libssh/libssh.h>

namespace accel::app {

QList<QPair<QString, QString>> studioVersions()
{
    QList<QPair<QString, QString>> versions;
    versions.append({QStringLiteral("Accel Studio"), QStringLiteral(ACCEL_BUILD_VERSION)});
    versions.append(
        {QStringLiteral("Qt"),
         QStringLiteral("%1 (built with %2)").arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR))});
    versions.append({QStringLiteral("yaml-cpp"), QStringLiteral(ACCEL_YAMLCPP_VERSION)});
    const char *ssh = ssh_version(0);
    versions.append({QStringLiteral("libssh"), ssh ? QString::fromLatin1(ssh) : QStringLiteral("unknown")});
    versions.append({QStringLiteral("Build"), QStringLiteral("%1, %2").arg(QStringLiteral(ACCEL_BUILD_TYPE),
                                                                           QStringLiteral(ACCEL_BUILD_COMPILER))});
    const QString torch = ACCEL_HAVE_TORCH
                              ? QStringLiteral("libtorch %1 in accel-worker%2")
                                    .arg(QStringLiteral(ACCEL_TORCH_VERSION),
                                         ACCEL_HAVE_CUDA ? QStringLiteral(" (CUDA)") : QStringLiteral(" (CPU)"))
                              : QStringLiteral("not built (no libtorch found)");
    versions.append({QStringLiteral("Runtime"), torch});
    return versions;
}

AboutDialog::AboutDialog(QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("About Accel Studio"));
    auto *layout = new QVBoxLayout(this);

    auto *header = new QHBoxLayout;
    auto *logo = new QLabel(this);
    logo->setPixmap(QIcon(QStringLiteral(":/icons/accel-studio.svg")).pixmap(64, 64));
    header->addWidget(logo);
    auto *title = new QLabel(tr("<h2>Accel Studio</h2>"
                                "<p>Configure, launch and monitor PyTorch training and big-model inference "
                                "with Hugging Face Accelerate's config and launch conventions.</p>"),
                             this);
    title->setWordWrap(true);
    header->addWidget(title, 1);
    layout->addLayout(header);

    auto *form = new QFormLayout;
    for (const auto &[label, value] : studioVersions()) {
        auto *valueLabel = new QLabel(value, this);
        valueLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
        form->addRow(label + QLatin1Char(':'), valueLabel);
    }
    layout->addLayout(form);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

} // namespace accel::app
