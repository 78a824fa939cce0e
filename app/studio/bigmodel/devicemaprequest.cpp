#include "app/studio/bigmodel/devicemaprequest.h"

#include "core/bigmodel/machinebudgets.h"
#include "core/bigmodel/modelloader.h"
#include "core/common/fileutil.h"

#include <QElapsedTimer>
#include <QObject>

namespace accel::app {

DeviceMapOutcome computeDeviceMap(const DeviceMapRequest &request)
{
    DeviceMapOutcome out;
    QElapsedTimer timer;
    timer.start();
    if (request.modelPath.trimmed().isEmpty()) {
        out.error = QObject::tr("Choose a model folder, checkpoint or config.json first.");
        return out;
    }
    bigmodel::DeviceMapOptions options;
    auto strategy = bigmodel::parseDeviceMapStrategy(request.strategy.toStdString());
    if (!strategy) {
        out.error = QString::fromStdString(strategy.error().message);
        return out;
    }
    options.strategy = *strategy;
    if (!request.dtype.isEmpty()) {
        auto target = bigmodel::parseTargetDType(request.dtype.toStdString());
        if (!target) {
            out.error = QObject::tr("dtype: %1").arg(QString::fromStdString(target.error().message));
            return out;
        }
        options.dtype = *target;
    }
    if (!request.quantization.isEmpty()) {
        auto load = bigmodel::parseQuantizedLoad(request.quantization.toStdString(), std::nullopt, std::nullopt);
        if (!load) {
            out.error = QString::fromStdString(load.error().message);
            return out;
        }
        options.quantization = *load;
    }
    if (!request.noSplit.isEmpty()) {
        std::vector<std::string> classes;
        for (const QString &c : request.noSplit)
            classes.push_back(c.toStdString());
        options.noSplitClasses = classes;
    }
    if (!request.budgetSpec.trimmed().isEmpty()) {
        auto budgets = bigmodel::parseMaxMemory(request.budgetSpec.trimmed().toStdString());
        if (!budgets) {
            out.error = QObject::tr("budgets: %1").arg(QString::fromStdString(budgets.error().message));
            return out;
        }
        options.maxMemory = *budgets;
        options.userGaveMaxMemory = true;
    } else {
        std::string envText;
        const std::string envPath = request.envJsonPath.toStdString();
        if (!envPath.empty()) {
            auto text = fileutil::readFile(envPath);
            if (!text) {
                out.error = QString::fromStdString(text.error().toString());
                return out;
            }
            envText = *text;
        }
        auto budgets = bigmodel::machineBudgets(envText, envPath);
        if (!budgets) {
            out.error = QString::fromStdString(budgets.error().toString());
            return out;
        }
        options.maxMemory = *budgets;
        options.userGaveMaxMemory = false;
    }
    auto model = bigmodel::loadModel(request.modelPath.trimmed().toStdString());
    if (!model) {
        out.error = QString::fromStdString(model.error().toString());
        return out;
    }
    if (options.quantization)
        if (auto checked = bigmodel::checkQuantizedLoad(model->structure, *options.quantization); !checked) {
            out.error = QString::fromStdString(checked.error().message);
            return out;
        }
    const bigmodel::DeviceMapResult result = bigmodel::inferAutoDeviceMap(model->structure, options);
    out.plan = DeviceMapPlan(model->structure, result, options.maxMemory, options.dtype,
                             options.quantization ? &*options.quantization : nullptr);
    out.plan.model = QString::fromStdString(model->name);
    out.plan.strategy = QString::fromLatin1(bigmodel::strategyName(options.strategy));
    out.plan.dtypeName = options.dtype ? QString::fromStdString(options.dtype->name) : QString();
    out.elapsedMs = timer.elapsed();
    return out;
}

} // namespace accel::app
