// accel-inference-worker: the inference commands of accel-worker as a program of their own (the
// tests run it until core/worker/main.cpp dispatches to workerMain).
#include "core/inference/workermain.h"

int main(int argc, char **argv)
{
    return accel::inference::workerMain(argc, argv);
}
