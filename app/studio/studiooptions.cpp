#include "app/studio/studiooptions.h"

namespace accel::app {

namespace {
struct PageInfo {
    Page page;
    const char *name;
    const char *title;
};

constexpr PageInfo pageInfos[pageCount] = {
    {Page::Hardware, "hardware", "Hardware"},     {Page::Configure, "configure", "Configure"},
    {Page::Launch, "launch", "Launch"},           {Page::Runs, "runs", "Runs"},
    {Page::BigModels, "bigmodels", "Big Models"},
};
} // namespace

QString pageName(Page page)
{
    return QString::fromLatin1(pageInfos[static_cast<int>(page)].name);
}

QString pageTitle(Page page)
{
    return QString::fromLatin1(pageInfos[static_cast<int>(page)].title);
}

std::optional<Page> pageFromName(const QString &name)
{
    QString wanted = name.trimmed().toLower();
    wanted.remove(QLatin1Char('-'));
    wanted.remove(QLatin1Char('_'));
    wanted.remove(QLatin1Char(' '));
    for (const auto &info : pageInfos) {
        if (wanted == QLatin1String(info.name))
            return info.page;
    }
    return std::nullopt;
}

QStringList pageNames()
{
    QStringList names;
    for (const auto &info : pageInfos)
        names << QString::fromLatin1(info.name);
    return names;
}

QString studioUsage()
{
    return QStringLiteral(
               "usage: accel-studio [--demo] [--page NAME] [--config FILE] [--theme NAME] [--screenshot FILE.png]\n"
               "\n"
               "Accel Studio: configure, launch and monitor PyTorch training with Accelerate's conventions.\n"
               "\n"
               "options:\n"
               "  --demo               load the demo job (a tiny GPT trained by two CPU ranks on this machine)\n"
               "                       into the Launch page, ready to start; nothing runs until you press Launch\n"
               "  --page NAME          page to show first: %1\n"
               "  --config FILE        open an Accelerate config file (YAML or JSON) in the Configure page\n"
               "  --theme NAME         colours: system (follow the desktop's palette), light or dark\n"
               "  --screenshot FILE    render the window to a PNG file and exit\n"
               "  --version            print the version and exit\n"
               "  -h, --help           show this help and exit\n")
        .arg(pageNames().join(QStringLiteral(", ")));
}

QStringList rawArguments(int argc, char **argv)
{
    QStringList arguments;
    for (int i = 0; i < argc; ++i)
        arguments.append(QString::fromLocal8Bit(argv[i]));
    return arguments;
}

StudioOptionsResult parseStudioOptions(const QStringList &arguments)
{
    StudioOptionsResult result;
    StudioOptions &options = result.options;
    auto takeValue = [&](int &i, const QString &flag, QString &value) {
        const QString &argument = arguments.at(i);
        const int equals = argument.indexOf(QLatin1Char('='));
        if (equals > 0) {
            value = argument.mid(equals + 1);
        } else if (i + 1 < arguments.size()) {
            value = arguments.at(++i);
        } else {
            result.error = QStringLiteral("%1 needs a value").arg(flag);
            return false;
        }
        if (value.isEmpty()) {
            result.error = QStringLiteral("%1 needs a non-empty value").arg(flag);
            return false;
        }
        return true;
    };
    for (int i = 1; i < arguments.size(); ++i) {
        const QString argument = arguments.at(i);
        const QString flag = argument.section(QLatin1Char('='), 0, 0);
        QString value;
        if (argument == QLatin1String("--demo")) {
            options.demo = true;
        } else if (argument == QLatin1String("-h") || argument == QLatin1String("--help")) {
            options.help = true;
        } else if (argument == QLatin1String("--version")) {
            options.version = true;
        } else if (flag == QLatin1String("--page")) {
            if (!takeValue(i, flag, value))
                return result;
            options.page = pageFromName(value);
            if (!options.page) {
                result.error = QStringLiteral("--page: unknown page '%1'; expected one of %2")
                                   .arg(value, pageNames().join(QStringLiteral(", ")));
                return result;
            }
        } else if (flag == QLatin1String("--config")) {
            if (!takeValue(i, flag, options.configFile))
                return result;
        } else if (flag == QLatin1String("--theme")) {
            if (!takeValue(i, flag, options.theme))
                return result;
            const QString theme = options.theme.toLower();
            if (theme != QLatin1String("system") && theme != QLatin1String("light") && theme != QLatin1String("dark")) {
                result.error = QStringLiteral("--theme: unknown theme '%1'; expected one of system, light, dark")
                                   .arg(options.theme);
                return result;
            }
            options.theme = theme;
        } else if (flag == QLatin1String("--screenshot")) {
            if (!takeValue(i, flag, options.screenshotFile))
                return result;
            if (!options.screenshotFile.endsWith(QLatin1String(".png"), Qt::CaseInsensitive)) {
                result.error = QStringLiteral("--screenshot: '%1' must end in .png").arg(options.screenshotFile);
                return result;
            }
        } else {
            result.error = QStringLiteral("unknown argument '%1'").arg(argument);
            result.maybeQtOption = argument.size() > 1 && argument.startsWith(QLatin1Char('-')) &&
                                   !argument.startsWith(QLatin1String("--"));
            return result;
        }
    }
    return result;
}

} // namespace accel::app
