// Accelerator::saveState / loadState in Accelerate's folder layout (facts 7.6), adapted to a
// C++ runtime: see docs/jobs.md "Checkpoints" for the exact files.
#include "core/plan/shardedfolder.h"
#include "core/runtime/accelerator_p.h"
#include "core/runtime/strategy/tensorparallellayout.h"
#include "core/runtime/tensorio.h"

#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/checkpointnames.h"
#include "core/common/checkpointstate.h"
#include "core/common/fileutil.h"
#include "core/common/jsondocument.h"
#include "core/common/log.h"

#include <nlohmann/json.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;

namespace accel::runtime {

namespace {

using bigmodel::DType;

std::string indexed(const std::string &base, size_t i, const std::string &ext)
{
    return i == 0 ? base + ext : base + "_" + std::to_string(i) + ext;
}

// Optimizer <i>'s state as a sharded folder (tensorparallellayout.h), where optimizer.bin is not.
fs::path optimizerFolder(const fs::path &checkpoint, size_t i)
{
    return checkpoint / ("optimizer_" + std::to_string(i));
}

// The parameters of the models optimizer `i` steps, by TensorImpl: their state-dict names.
std::map<const void *, std::string> optimizerParameterNames(const Accelerator::Private &p, size_t i)
{
    std::map<const void *, std::string> names;
    for (size_t m : p.optimizerModels[i]) {
        for (const auto &item : p.models[m].module->named_parameters())
            names[item.value().unsafeGetTensorImpl()] = item.key();
    }
    return names;
}

// The tensor-parallel split of the model optimizer `i` steps (its first), or null.
const TensorParallelLayout *optimizerLayout(const Accelerator::Private &p, size_t i)
{
    return p.optimizerModels[i].empty() ? nullptr
                                        : tensorParallelLayout(*p.models[p.optimizerModels[i].front()].module).get();
}

// Scheduler steps per optimizer step: Accelerate steps the scheduler once per process unless
// batches are split.
int64_t schedulerStepsPerOptimizerStep(const Accelerator::Private &p)
{
    return p.options.data.splitBatches ? 1 : p.env.worldSize;
}

// The first file missing from `folder` of those every save of this Accelerator writes at the
// top level (a sharded strategy's own files are its to check); empty when none is.
std::string missingCheckpointFile(const Accelerator::Private &p, const std::string &folder)
{
    const auto &models = p.models;
    const auto &optimizers = p.optimizers;
    const auto &schedulers = p.schedulers;
    std::vector<std::string> names;
    for (size_t m = 0; m < models.size(); ++m) {
        if (!models[m].strategy->savesOwnState())
            names.push_back(modelFileName(m));
    }
    for (size_t i = 0; i < optimizers.size(); ++i) {
        std::error_code ec;
        if (!p.ownsOptimizerState(i) && !fs::is_regular_file(optimizerFolder(folder, i) / kShardIndexName, ec))
            names.push_back(indexed("optimizer", i, ".bin"));
    }
    for (size_t i = 0; i < schedulers.size(); ++i)
        names.push_back(indexed("scheduler", i, ".json"));
    names.push_back("random_states_0.safetensors");
    std::error_code ec;
    for (const std::string &name : names) {
        if (!fs::is_regular_file(fs::path(folder) / name, ec))
            return name;
    }
    return {};
}

// Every rank learns whether every rank's part of `what` succeeded before any goes on: a rank-local
// failure (a file only that rank cannot read or write) then ends every rank at once with that rank's
// error, instead of leaving the others in the next collective until timeout_s. The failing rank's
// message goes through the run's store (set before the all-reduce, so it is there when read).
Result<void> agreeAcrossRanks(Accelerator &accelerator, const Accelerator::Private &p, const Result<void> &local,
                              const std::string &what)
{
    if (!p.group)
        return local;
    const auto key = [&what](int rank) { return "checkpoint_error/" + what + "/" + std::to_string(rank); };
    if (!local) {
        const std::string message = local.error().toString();
        try {
            p.store->set(key(p.env.rank), std::vector<uint8_t>(message.begin(), message.end()));
        } catch (const std::exception &) {
            // the flag below still ends the other ranks, without this rank's words
        }
    }
    auto flags = torch::zeros({p.env.worldSize}, torch::kFloat);
    if (!local)
        flags[p.env.rank] = 1.0f;
    flags = accelerator.reduce(flags, ReduceOp::Sum);
    if (!local)
        return local;
    for (int rank = 0; rank < p.env.worldSize; ++rank) {
        if (flags[rank].item<float>() == 0.0f)
            continue;
        std::string message = "(its message did not reach this rank; see its log)";
        try {
            if (p.store->check({key(rank)})) {
                const std::vector<uint8_t> bytes = p.store->get(key(rank));
                message.assign(bytes.begin(), bytes.end());
            }
        } catch (const std::exception &) {
        }
        return makeError(ErrorCode::Failed, what + ": rank " + std::to_string(rank) + " failed: " + message);
    }
    return {};
}

} // namespace

StateSlot Accelerator::Private::stateSlot(size_t model) const
{
    StateSlot slot;
    slot.model = model;
    slot.tensorParallel = tensorParallelLayout(*models[model].module).get();
    for (size_t o = 0; o < optimizers.size(); ++o) {
        const auto &of = optimizerModels[o];
        if (std::find(of.begin(), of.end(), model) != of.end())
            slot.optimizers.emplace_back(o, &optimizers[o]->optimizer());
    }
    return slot;
}

bool Accelerator::Private::ownsOptimizerState(size_t optimizer) const
{
    // prepareOptimizer() lets an optimizer span several models only when none saves its own state.
    const auto &of = optimizerModels[optimizer];
    return !of.empty() && models[of.front()].strategy->savesOwnState();
}

Result<std::string> Accelerator::saveState(const std::string &outputDir)
{
    Private &p = *d;
    fs::path target;
    if (p.options.project.automaticCheckpointNaming) {
        if (p.options.project.projectDir.empty())
            return makeError(ErrorCode::InvalidInput,
                             "saveState: automatic checkpoint naming needs a project directory");
        const fs::path folder = fs::path(p.options.project.projectDir) / "checkpoints";
        if (p.options.project.iteration < 0 || p.options.project.iteration > checkpointnames::kMaxCheckpointNumber)
            return makeError(ErrorCode::InvalidInput, "saveState: project iteration " +
                                                          std::to_string(p.options.project.iteration) +
                                                          " cannot name a checkpoint_<n> folder (0 to " +
                                                          std::to_string(checkpointnames::kMaxCheckpointNumber) + ")");
        target = folder / ("checkpoint_" + std::to_string(p.options.project.iteration));
        if (fs::exists(target))
            return makeError(ErrorCode::InvalidInput,
                             "saveState: checkpoint folder " + target.string() +
                                 " already exists; set the project iteration past it or remove it");
        // checkpoint_total_limit: the oldest go after the new one is published (below), never before.
    } else {
        if (outputDir.empty())
            return makeError(ErrorCode::InvalidInput,
                             "saveState: no output folder given and automatic checkpoint naming is off");
        target = outputDir;
    }
    const fs::path temporary = target.string() + ".partial";
    std::error_code ec;
    Result<void> created;
    if (isMainProcess()) {
        fs::remove_all(temporary, ec);
        fs::create_directories(temporary, ec);
        if (ec)
            created = makeError(ErrorCode::Io, "saveState: cannot create " + temporary.string() + ": " + ec.message());
    }
    if (auto agreed = agreeAcrossRanks(*this, p, created, "saveState"); !agreed) // also waits for everyone
        return tl::unexpected(agreed.error());

    Result<void> written;
    std::vector<bool> ownOptimizer; // saved by its model's strategy (sharded), not as optimizer_<i>.bin
    for (size_t o = 0; o < p.optimizers.size(); ++o)
        ownOptimizer.push_back(p.ownsOptimizerState(o));
    try {
        // A sharded strategy's ranks each write their part of its model and optimizer state. Every
        // strategy runs even after a failure: they gather collectively.
        for (size_t m = 0; m < p.models.size(); ++m) {
            if (!p.models[m].strategy->savesOwnState())
                continue;
            auto saved = p.models[m].strategy->saveState(temporary.string(), p.stateSlot(m));
            if (written && !saved)
                written = saved;
        }
        // A model split by tensor parallelism is saved whole (tensorparallellayout.h): every rank
        // takes part in gathering it and its optimizer state, rank 0 writes them.
        std::map<size_t, NamedTensors> wholeModels, wholeOptimizers;
        std::map<size_t, int64_t> optimizerSteps;
        {
            torch::NoGradGuard noGrad;
            for (size_t m = 0; m < p.models.size(); ++m) {
                const auto layout = tensorParallelLayout(*p.models[m].module);
                if (!layout || p.models[m].strategy->savesOwnState())
                    continue;
                wholeModels[m] = modelTensors(*p.models[m].module);
                gatherWhole(*layout, wholeModels[m]);
            }
            for (size_t i = 0; i < p.optimizers.size(); ++i) {
                const TensorParallelLayout *layout = optimizerLayout(p, i);
                if (!layout || ownOptimizer[i])
                    continue;
                wholeOptimizers[i] =
                    optimizerTensors(p.optimizers[i]->optimizer(), optimizerParameterNames(p, i), optimizerSteps[i]);
                gatherWhole(*layout, wholeOptimizers[i]);
            }
        }
        if (isMainProcess()) {
            for (size_t m = 0; written && m < p.models.size(); ++m) {
                if (p.models[m].strategy->savesOwnState())
                    continue;
                const std::string file = (temporary / modelFileName(m)).string();
                written = wholeModels.count(m) ? saveTensors(file, wholeModels[m])
                                               : saveModelSafetensors(*p.models[m].module, file);
            }
            for (size_t i = 0; written && i < p.optimizers.size(); ++i) {
                if (ownOptimizer[i])
                    continue;
                if (wholeOptimizers.count(i)) {
                    written = writeWholeFolder(optimizerFolder(temporary, i).string(), "optimizer", wholeOptimizers[i],
                                               optimizerSteps[i]);
                    continue;
                }
                // Serialized in memory, then written by us: libtorch's file writer throws from its
                // destructor when the disk is full, which ends the process.
                torch::serialize::OutputArchive archive;
                p.optimizers[i]->optimizer().save(archive);
                std::string bytes;
                archive.save_to([&bytes](const void *data, size_t size) {
                    bytes.append(static_cast<const char *>(data), size);
                    return size;
                });
                written = fileutil::writeFileAtomic((temporary / indexed("optimizer", i, ".bin")).string(), bytes);
            }
            if (written) // the precision recipe's scaling state (fp8_state.safetensors)
                written = p.precision->saveState(temporary.string());
            for (size_t i = 0; written && i < p.schedulers.size(); ++i) {
                // per_optimizer_step: so that a run resumed on another number of processes
                // finds the optimizer step.
                nlohmann::ordered_json state{{"last_step", p.schedulers[i]->lastStep()},
                                             {"per_optimizer_step", schedulerStepsPerOptimizerStep(p)}};
                written = fileutil::writeFileAtomic((temporary / indexed("scheduler", i, ".json")).string(),
                                                    state.dump(2) + "\n");
            }
            nlohmann::ordered_json loaders = nlohmann::json::array();
            for (const auto &weak : p.loaders) {
                if (auto loader = weak.lock())
                    // global_batch: the position follows a change of the data-parallel size.
                    loaders.push_back({{"epoch", loader->epoch()},
                                       {"batches_done", loader->position()},
                                       {"global_batch", loader->globalBatchSize()}});
            }
            if (written)
                written =
                    fileutil::writeFileAtomic((temporary / "dl_state_dict.json").string(), loaders.dump(2) + "\n");
        }
        if (written) {
            torch::Tensor state = at::detail::getDefaultCPUGenerator().get_state();
            bigmodel::TensorToWrite rng;
            rng.name = "torch_cpu";
            rng.dtype = DType::U8;
            rng.shape = {state.numel()};
            rng.data = state.data_ptr();
            rng.size = uint64_t(state.numel());
            written = bigmodel::writeSafetensors(
                (temporary / ("random_states_" + std::to_string(processIndex()) + ".safetensors")).string(), {rng},
                {{"format", "pt"}, {"step", std::to_string(p.step)}});
        }
    } catch (const std::exception &e) {
        written = makeError(ErrorCode::Io, std::string("saveState: ") + e.what(), temporary.string());
    }
    // Every rank learns whether every rank succeeded before the folder is published.
    if (auto agreed = agreeAcrossRanks(*this, p, written, "saveState"); !agreed)
        return tl::unexpected(agreed.error());
    // Rank 0 publishes once every rank's part is in: flushed to the disk (every file and folder),
    // renamed into place, and only then are the oldest rotated out (checkpoint_total_limit).
    Result<void> published;
    if (isMainProcess()) {
        published = checkpointnames::syncTree(temporary.string());
        if (published)
            published = checkpointnames::publish(temporary.string(), target.string());
        if (published && p.options.project.automaticCheckpointNaming) {
            auto removed = checkpointnames::rotate(target.parent_path().string(), p.options.project.totalLimit);
            if (!removed)
                log::warning("checkpoint",
                             "saveState: saved " + target.string() +
                                 ", but the oldest checkpoints were not removed: " + removed.error().toString());
        }
    }
    // Every rank learns whether it was published.
    const double unpublished = reduce(torch::tensor({published ? 0.0 : 1.0}), ReduceOp::Sum).item<double>();
    if (!published)
        return makeError(published.error().code, "saveState: " + published.error().message, published.error().context);
    if (unpublished > 0)
        return makeError(ErrorCode::Failed, "saveState: rank 0 could not publish " + target.string());
    if (p.options.project.automaticCheckpointNaming)
        ++p.options.project.iteration;
    return target.string();
}

namespace {

// An optional whole number `key` of a checkpoint's JSON file (of its `entry`-th object when the file
// holds a list; checkpointstate validated the file), else `fallback`.
int64_t savedCount(const std::string &file, const char *key, int64_t fallback, size_t entry = 0)
{
    const auto parsed = jsonutil::readJsonFile(file);
    const nlohmann::json json = parsed ? *parsed : nlohmann::json();
    const nlohmann::json &object = json.is_array() && entry < json.size() ? json[entry] : json;
    if (!object.is_object() || !object.contains(key) || !object[key].is_number_integer())
        return fallback;
    return object[key].get<int64_t>();
}

Result<void> loadStateOnThisRank(Accelerator &accelerator, Accelerator::Private &p, const std::string &inputDir)
{
    fs::path source = inputDir;
    if (source.empty()) {
        if (!p.options.project.automaticCheckpointNaming)
            return makeError(ErrorCode::InvalidInput,
                             "loadState: no input folder given and automatic checkpoint naming is off");
        auto existing =
            checkpointnames::numberedCheckpoints((fs::path(p.options.project.projectDir) / "checkpoints").string());
        if (!existing)
            return tl::unexpected(existing.error());
        if (existing->empty())
            return makeError(ErrorCode::NotFound, "loadState: no checkpoint_<n> folder under " +
                                                      p.options.project.projectDir + "/checkpoints");
        // The newest whole one: a folder missing a file that every save writes was cut short by
        // a kill while it was being removed (before removal renamed first); it is skipped.
        for (auto it = existing->rbegin(); it != existing->rend() && source.empty(); ++it) {
            const std::string missing = missingCheckpointFile(p, it->path);
            if (missing.empty())
                source = it->path;
            else if (accelerator.isMainProcess())
                log::warning("checkpoint", "loadState: skipping " + it->path + ": " + missing +
                                               " is missing (a checkpoint partly deleted); resuming from an older one");
        }
        if (source.empty())
            return makeError(ErrorCode::NotFound, "loadState: every checkpoint_<n> folder under " +
                                                      p.options.project.projectDir +
                                                      "/checkpoints misses files (partly deleted)");
    }
    if (!fs::is_directory(source))
        return makeError(ErrorCode::NotFound, "loadState: checkpoint folder does not exist", source.string());
    try {
        for (size_t m = 0; m < p.models.size(); ++m) {
            if (p.models[m].strategy->savesOwnState()) {
                if (auto loaded = p.models[m].strategy->loadState(source.string(), p.stateSlot(m)); !loaded)
                    return loaded;
            } else if (const auto layout = tensorParallelLayout(*p.models[m].module)) { // saved whole: this rank's part
                const std::string file = (source / modelFileName(m)).string();
                auto tensors = loadTensors(file);
                if (!tensors)
                    return tl::unexpected(tensors.error());
                keepPart(*layout, *tensors);
                if (auto loaded = loadModelTensors(*p.models[m].module, *tensors, file); !loaded)
                    return loaded;
            } else if (auto loaded =
                           loadModelSafetensors(*p.models[m].module, (source / modelFileName(m)).string(), true);
                       !loaded) {
                return loaded;
            }
        }
        for (size_t i = 0; i < p.optimizers.size(); ++i) {
            if (p.ownsOptimizerState(i))
                continue;
            const fs::path file = source / indexed("optimizer", i, ".bin");
            if (const fs::path folder = optimizerFolder(source, i);
                !fs::exists(file) && fs::exists(folder / kShardIndexName)) {
                // Whole tensors by parameter name (a tensor-parallel or sharded run's).
                auto state = readShardedFolder(folder.string());
                if (!state)
                    return tl::unexpected(state.error());
                auto step = shardedFolderStep(folder.string());
                if (!step)
                    return tl::unexpected(step.error());
                if (const TensorParallelLayout *layout = optimizerLayout(p, i))
                    keepPart(*layout, *state);
                setOptimizerTensors(p.optimizers[i]->optimizer(), optimizerParameterNames(p, i), *state, *step);
                continue;
            }
            if (!fs::exists(file))
                return makeError(ErrorCode::NotFound, "loadState: optimizer state is missing", file.string());
            if (optimizerLayout(p, i)) // libtorch's archive holds whole tensors in parameter order
                return makeError(ErrorCode::InvalidInput,
                                 "loadState: a run without tensor parallelism saved this optimizer state, which a "
                                 "run with parallelism_config_tp_size " +
                                     std::to_string(optimizerLayout(p, i)->size) +
                                     " cannot split; resume it with tp_size 1",
                                 file.string());
            torch::serialize::InputArchive archive;
            archive.load_from(file.string());
            p.optimizers[i]->optimizer().load(archive);
        }
        if (auto loaded = p.precision->loadState(source.string(), accelerator.isMainProcess()); !loaded)
            return loaded;
        for (size_t i = 0; i < p.schedulers.size(); ++i) {
            const std::string file = (source / indexed("scheduler", i, ".json")).string();
            auto lastStep = checkpointstate::readSchedulerLastStep(file);
            if (!lastStep)
                return tl::unexpected(lastStep.error());
            // Saved on another number of processes: the same optimizer step in this run's steps.
            const int64_t per = schedulerStepsPerOptimizerStep(p);
            const int64_t saved = savedCount(file, "per_optimizer_step", per);
            if (saved <= 0 || *lastStep % saved != 0)
                return makeError(ErrorCode::InvalidInput,
                                 "last_step " + std::to_string(*lastStep) +
                                     " is not a whole number of optimizer steps "
                                     "of per_optimizer_step " +
                                     std::to_string(saved),
                                 file);
            p.schedulers[i]->setLastStep(*lastStep / saved * per);
        }
        if (const fs::path file = source / "dl_state_dict.json"; fs::exists(file)) {
            auto states = checkpointstate::readLoaderStates(file.string());
            if (!states)
                return tl::unexpected(states.error());
            size_t i = 0;
            for (const auto &weak : p.loaders) {
                auto loader = weak.lock();
                if (!loader || i >= states->size())
                    continue;
                int64_t epoch = (*states)[i].epoch;
                int64_t done = (*states)[i].batchesDone;
                // Saved with another global batch (another data-parallel size): the same sample.
                const int64_t global = savedCount(file.string(), "global_batch", loader->globalBatchSize(), i);
                if (global != loader->globalBatchSize()) {
                    if ((done * global) % loader->globalBatchSize() != 0)
                        return makeError(ErrorCode::InvalidInput,
                                         "the checkpoint stopped after " + std::to_string(done * global) +
                                             " samples of epoch " + std::to_string(epoch) + " (global batch " +
                                             std::to_string(global) + "); this run's global batch " +
                                             std::to_string(loader->globalBatchSize()) +
                                             " does not divide it: choose a batch size whose global batch does",
                                         file.string());
                    done = done * global / loader->globalBatchSize();
                }
                if (done >= loader->length()) {
                    ++epoch;
                    done = 0;
                }
                loader->setResumePoint(epoch, done);
                ++i;
            }
        }
        const auto rngPath = [&](int rank) {
            return source / ("random_states_" + std::to_string(rank) + ".safetensors");
        };
        fs::path rngFile = rngPath(accelerator.processIndex());
        if (!fs::exists(rngFile)) {
            // Saved on fewer processes (another mesh): rank r takes saved rank r mod their number, so
            // the ranks of each new replica draw as the saved ranks did.
            int saved = 0;
            while (fs::exists(rngPath(saved)))
                ++saved;
            if (saved > 0) {
                rngFile = rngPath(accelerator.processIndex() % saved);
                if (accelerator.processIndex() == saved)
                    log::info("checkpoint", "loadState: " + source.string() + " was saved on " + std::to_string(saved) +
                                                " process(es): rank r takes the random state of rank r mod " +
                                                std::to_string(saved));
            }
        }
        auto rng = bigmodel::SafetensorsFile::open(rngFile.string());
        if (!rng)
            return tl::unexpected(rng.error());
        const bigmodel::TensorInfo *state = (*rng)->find("torch_cpu");
        if (!state)
            return makeError(ErrorCode::InvalidInput, "tensor torch_cpu (the CPU generator state) is missing",
                             rngFile.string());
        auto stateTensor = torch::empty({int64_t(state->byteSize())}, torch::kUInt8);
        std::memcpy(stateTensor.data_ptr(), state->data, state->byteSize());
        at::Generator generator = at::detail::getDefaultCPUGenerator();
        generator.set_state(stateTensor);
        if (auto it = (*rng)->metadata().find("step"); it != (*rng)->metadata().end()) {
            const std::string &step = it->second;
            if (step.empty() || step.size() > 18 || step.find_first_not_of("0123456789") != std::string::npos)
                return makeError(ErrorCode::InvalidInput, "metadata step=" + step + ": expected a whole number >= 0",
                                 rngFile.string());
            p.step = std::stoll(step);
        }
    } catch (const std::exception &e) {
        std::string what = e.what();
        return makeError(ErrorCode::InvalidInput, "loadState: " + what.substr(0, what.find('\n')), source.string());
    }
    return {};
}

} // namespace

Result<void> Accelerator::loadState(const std::string &inputDir)
{
    // A rank that cannot load its part ends every rank (agreeAcrossRanks), so none trains on alone.
    const Result<void> loaded = loadStateOnThisRank(*this, *d, inputDir);
    return agreeAcrossRanks(*this, *d, loaded, "loadState");
}

} // namespace accel::runtime
