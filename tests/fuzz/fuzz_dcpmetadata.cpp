// Fuzz target: the `.metadata` pickle of a torch.distributed.checkpoint folder, as `accel
// merge-weights` reads it (joinDcpFolder: the restricted unpickler, then DCP's Metadata), beside
// the two real `.distcp` files of tests/data/dcp/fsdp2 (an FSDP2 SHARDED_STATE_DICT checkpoint that
// PyTorch 2.12.1 wrote through Accelerate, 2 ranks). An error names the folder's file; an accepted
// metadata joins each tensor to exactly the bytes its shape holds, never more than the files hold.
#include "core/plan/dcpfolder.h"
#include "tests/fuzz/joinedfolder.h"

using namespace accel;

namespace {

// The folder with the fixture's .distcp files.
const std::string &folder()
{
    static const fuzz::ScratchFolder instance("dcpmetadata");
    static const bool copied = [] {
        for (const char *name : {"__0_0.distcp", "__1_0.distcp"})
            std::filesystem::copy_file(std::string(ACCEL_DCP_FIXTURE) + "/" + name, instance.path + "/" + name,
                                       std::filesystem::copy_options::overwrite_existing);
        return true;
    }();
    (void)copied;
    return instance.path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string &dir = folder();
    fuzz::writeInput(dir + "/.metadata", data, size);
    fuzz::checkJoined(runtime::joinDcpFolder(dir), dir, 7949 + 9398); // the two .distcp files
    return 0;
}
