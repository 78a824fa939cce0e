// accel-worker: one rank of a job (docs/jobs.md). Started by `accel launch`, `accelerate launch`,
// torchrun or mpirun with the usual RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT environment.
#include "core/inference/workermain.h"
#include "core/worker/batchgenerate.h"
#include "core/worker/jobrunner.h"
#include "core/worker/mergelora.h"
#include "core/worker/stackdump.h"

#include <cstring>
#include <iostream>

namespace {

const char *usageHead = "usage: accel-worker JOB.yaml\n"
                        "       accel-worker --capabilities [--json]\n"
                        "       accel-worker generate|infer|serve ... (inference: docs/worker-protocol.md)\n"
                        "       accel-worker merge-lora BASE ADAPTER OUT [--dtype D] [--max-shard-size S] [--json]\n"
                        "       accel-worker --version\n"
                        "\n"
                        "Runs one rank of a training job with the embedded libtorch runtime. The rank, world size\n"
                        "and rendezvous come from the environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,\n"
                        "MASTER_PORT, ...), as set by accel launch, accelerate launch or torchrun.\n";

std::string usage()
{
    std::string text = std::string(usageHead) + "Recipes: ";
    const auto &recipes = accel::jobs::knownRecipes();
    for (size_t i = 0; i < recipes.size(); ++i)
        text += (i ? ", " : "") + recipes[i];
    return text + " (see docs/jobs.md).\n";
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        std::cerr << usage();
        return 2;
    }
    const std::string first = argv[1];
    if (first == "merge-lora")
        return accel::worker::mergeLoraMain(argc, argv);
    // Inference (generate, infer, serve for the studio's playground) shares the worker program.
    if (accel::inference::isWorkerCommand(first))
        return accel::inference::workerMain(argc, argv, accel::worker::batchGenerateMain);
    if (first == "--help" || first == "-h") {
        std::cout << usage();
        return 0;
    }
    if (first == "--version") {
        std::cout << "accel-worker " << ACCEL_VERSION << std::endl;
        return 0;
    }
    if (first == "--capabilities") {
        const bool json = argc > 2 && std::strcmp(argv[2], "--json") == 0;
        const std::string report = accel::worker::capabilitiesJson();
        if (json) {
            std::cout << report << std::endl;
        } else {
            std::cout << report << std::endl;
        }
        return 0;
    }
    if (first.rfind("-", 0) == 0) {
        std::cerr << "accel-worker: unknown option " << first << "\n" << usage();
        return 2;
    }
    // Before the runtime starts any thread (stackdump.h): `accel stack` can ask where this rank waits.
    accel::worker::installStackDump();
    auto job = accel::worker::JobSpec::load(first);
    if (!job) {
        std::cerr << "accel-worker: " << job.error().toString() << std::endl;
        return accel::exitCodeFor(job.error());
    }
    auto result = accel::worker::runJob(*job);
    if (!result) {
        std::cerr << "accel-worker: " << result.error().toString() << std::endl;
        return accel::exitCodeFor(result.error());
    }
    return 0;
}
