#include "app/studio/launch/pythoninterpreters.h"

#include "core/common/programs.h"
#include "core/hardware/softwareprobe.h"
#include "launcher/accelcommand.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QStandardPaths>

namespace accel::app {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("accel::app::PythonInterpreters", text);
}

QString defaultPython()
{
    return QString::fromLatin1(accel::defaultPython);
}

// Appended to the hardware report's probe (versions of python, torch, accelerate): which of the
// modules named after the script's folder cannot be found, looked up as `python script.py` would
// (the script's folder first on sys.path) without importing them.
const char *kMissingModules = R"PY(
import importlib.util as _spec_util
if len(sys.argv) > 1 and sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
def _found(name):
    try:
        return _spec_util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
print(json.dumps({"missing": [name for name in sys.argv[2:] if not _found(name)]}))
)PY";

void addExisting(QStringList &list, const QString &python)
{
    const QString clean = QDir::cleanPath(python);
    const QFileInfo info(clean);
    if (info.isFile() && info.isExecutable() && !list.contains(clean))
        list << clean;
}

// <folder>/*/bin/python for every environment folder in `folder`, by name.
void addEnvironmentsIn(QStringList &list, const QString &folder)
{
    const QDir dir(folder);
    for (const QString &name : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden, QDir::Name))
        addExisting(list, dir.filePath(name) + QStringLiteral("/bin/python"));
}

} // namespace

QString InterpreterReport::summary() const
{
    if (!ran)
        return error;
    QStringList parts = {tr("Python %1").arg(version)};
    parts << (torch.isEmpty() ? tr("no torch") : tr("torch %1").arg(torch));
    parts << (accelerate.isEmpty() ? tr("no accelerate") : tr("accelerate %1").arg(accelerate));
    return parts.join(QStringLiteral(" · "));
}

QString InterpreterReport::problem() const
{
    if (!ran)
        return tr("Interpreter %1: %2").arg(python.isEmpty() ? defaultPython() : python, error);
    if (missing.isEmpty())
        return {};
    QStringList quoted;
    for (const QString &module : missing)
        quoted << QStringLiteral("'%1'").arg(module);
    return tr("%1 cannot import %2, which %3 imports: install it there (%1 -m pip install %4; the package name may "
              "differ) or choose an interpreter that has it.")
        .arg(python.isEmpty() ? defaultPython() : python, quoted.join(QStringLiteral(", ")),
             QFileInfo(scriptPath).fileName(), missing.join(QLatin1Char(' ')));
}

QStringList scriptImports(const QString &scriptPath)
{
    QFile file(scriptPath);
    if (scriptPath.isEmpty() || !file.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    static const QRegularExpression importLine(QStringLiteral("^import\\s+(.+?)\\s*(#.*)?$"));
    static const QRegularExpression fromLine(QStringLiteral("^from\\s+([A-Za-z_][\\w.]*)\\s+import\\b"));
    static const QRegularExpression name(QStringLiteral("^([A-Za-z_]\\w*)"));
    QStringList modules;
    auto add = [&modules](const QString &dotted) {
        const QString top = name.match(dotted.trimmed()).captured(1);
        if (!top.isEmpty() && top != QLatin1String("__future__") && !modules.contains(top))
            modules << top;
    };
    const QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'));
    for (const QString &line : lines) {
        if (const auto from = fromLine.match(line); from.hasMatch()) {
            add(from.captured(1));
        } else if (const auto plain = importLine.match(line); plain.hasMatch()) {
            for (const QString &part : plain.captured(1).split(QLatin1Char(',')))
                add(part);
        }
    }
    return modules;
}

QStringList pythonCandidates(const QString &scriptPath)
{
    QStringList list;
    static const char *const projectEnvironments[] = {".venv", "venv", "env", ".env"};
    if (!scriptPath.isEmpty()) {
        QDir folder = QFileInfo(scriptPath).absoluteDir();
        while (true) {
            for (const char *name : projectEnvironments)
                addExisting(list, folder.filePath(QLatin1String(name)) + QStringLiteral("/bin/python"));
            if (!folder.cdUp())
                break;
        }
    }
    for (const char *variable : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
        if (const QString prefix = qEnvironmentVariable(variable); !prefix.isEmpty())
            addExisting(list, prefix + QStringLiteral("/bin/python"));
    }
    const QString home = QDir::homePath();
    for (const char *folder : {".virtualenvs", ".venvs", "venvs", ".local/share/virtualenvs", ".pyenv/versions"})
        addEnvironmentsIn(list, home + QLatin1Char('/') + QLatin1String(folder));
    QFile listed(home + QStringLiteral("/.conda/environments.txt"));
    if (listed.open(QIODevice::ReadOnly | QIODevice::Text)) {
        for (const QString &line : QString::fromUtf8(listed.readAll()).split(QLatin1Char('\n')))
            if (!line.trimmed().isEmpty())
                addExisting(list, line.trimmed() + QStringLiteral("/bin/python"));
    }
    addEnvironmentsIn(list, home + QStringLiteral("/.conda/envs"));
    QStringList condaRoots;
    for (const char *name : {"miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba", "conda"}) {
        condaRoots << home + QLatin1Char('/') + QLatin1String(name);
        condaRoots << QStringLiteral("/opt/") + QLatin1String(name);
    }
    for (const QString &root : condaRoots) {
        addEnvironmentsIn(list, root + QStringLiteral("/envs"));
        addExisting(list, root + QStringLiteral("/bin/python"));
    }
    if (!QStandardPaths::findExecutable(defaultPython()).isEmpty())
        list << defaultPython();
    return list;
}

InterpreterProbe::InterpreterProbe(QObject *parent) : QObject(parent) {}

// A probe in flight is a child command: destroying it kills its process group.
InterpreterProbe::~InterpreterProbe() = default;

void InterpreterProbe::cancel()
{
    if (m_command) {
        m_command->disconnect(this);
        m_command->deleteLater();
        m_command = nullptr;
    }
}

void InterpreterProbe::start(const QString &python, const QString &scriptPath)
{
    cancel();
    m_report = {};
    m_report.python = python;
    m_report.scriptPath = scriptPath;
    m_report.imports = scriptImports(scriptPath);
    const QString program = python.isEmpty() ? defaultPython() : python;
    m_command = new launcher::AccelCommand(this);
    m_command->setProgram(program);
    m_command->setTimeout(30000);
    connect(m_command, &launcher::AccelCommand::done, this, &InterpreterProbe::onDone);
    QStringList arguments = {QStringLiteral("-c"),
                             QString::fromStdString(hardware::pythonProbeScript()) + QLatin1String(kMissingModules)};
    arguments << (scriptPath.isEmpty() ? QString() : QFileInfo(scriptPath).absolutePath());
    arguments << m_report.imports;
    m_command->start(arguments);
}

void InterpreterProbe::onDone(const launcher::AccelOutcome &outcome)
{
    if (m_command)
        m_command->deleteLater();
    m_command = nullptr;
    InterpreterReport report = m_report;
    const QString program = report.python.isEmpty() ? defaultPython() : report.python;
    // The JSON is the last two lines: site hooks may print before them.
    QStringList lines = QString::fromUtf8(outcome.standardOutput).trimmed().split(QLatin1Char('\n'));
    const QJsonObject missing = QJsonDocument::fromJson(lines.value(lines.size() - 1).toUtf8()).object();
    auto info = hardware::parsePythonProbe(lines.value(lines.size() - 2).toStdString());
    if (outcome.failedToStart) {
        report.error = tr("cannot run %1: %2").arg(program, outcome.error);
    } else if (!outcome.succeeded() || !info || !missing.contains(QStringLiteral("missing"))) {
        const QString err = QString::fromUtf8(outcome.standardError).trimmed().section(QLatin1Char('\n'), -1);
        report.error = tr("%1 did not answer as a Python 3 interpreter (%2)%3")
                           .arg(program, outcome.describe(), err.isEmpty() ? QString() : QStringLiteral(": ") + err);
    } else {
        report.ran = true;
        report.version = QString::fromStdString(info->version);
        report.executable = QString::fromStdString(info->executable);
        auto installed = [](const std::string &version) {
            return version == hardware::notInstalled() ? QString() : QString::fromStdString(version);
        };
        report.torch = installed(info->torchVersion);
        report.accelerate = installed(info->accelerateVersion);
        for (const QJsonValue &name : missing.value(QStringLiteral("missing")).toArray())
            report.missing << name.toString();
    }
    Q_EMIT finished(report);
}

} // namespace accel::app
