# One rank of tst_launchhardening pythonLaunchesOnOnePortNeverMeet: joins the process group and checks
# that every member carries this run's tag (argv[1]); exit 3 when a rank of another run joined.
import os, sys, time
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
tag = torch.tensor([float(sys.argv[1])])
tags = [torch.zeros(1) for _ in range(dist.get_world_size())]
dist.all_gather(tags, tag)
values = sorted({float(t.item()) for t in tags})
print("rank", dist.get_rank(), "world", dist.get_world_size(), "tags", values, flush=True)
dist.barrier()
dist.destroy_process_group()
sys.exit(0 if values == [float(sys.argv[1])] else 3)
