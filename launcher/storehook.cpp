#include "launcher/storehook.h"

#include "core/rundir/privatefiles.h"

#include <QFile>

#include <unistd.h>

namespace accel::launcher {

Result<QString> writeStoreHook(const QString &runDirectory)
{
    QFile resource(QStringLiteral(":/accel/launcher/accel_store_hook.py"));
    if (!resource.open(QIODevice::ReadOnly))
        return makeError(ErrorCode::Failed, "the rendezvous hook is missing from this build");
    const QByteArray source = resource.readAll();
    const std::string run = QFile::encodeName(runDirectory).toStdString();
    const std::string folder = run + "/" + kStoreHookFolder;
    if (auto made = rundir::makePrivateDirectory(folder); !made)
        return tl::unexpected(made.error());
    const std::string relative = std::string(kStoreHookFolder) + "/sitecustomize.py";
    auto fd = rundir::openRunFile(run, relative, rundir::OpenFor::CreateOnly);
    if (!fd) {
        auto existing = rundir::openRunFile(run, relative, rundir::OpenFor::Read); // an earlier attempt's
        if (!existing)
            return tl::unexpected(fd.error());
        ::close(*existing);
        return QFile::decodeName(QByteArray::fromStdString(folder));
    }
    const bool written = rundir::writeAll(*fd, source.constData(), size_t(source.size()));
    ::close(*fd);
    if (!written)
        return makeError(ErrorCode::Io, "cannot write the rendezvous hook", run + "/" + relative);
    return QFile::decodeName(QByteArray::fromStdString(folder));
}

} // namespace accel::launcher
