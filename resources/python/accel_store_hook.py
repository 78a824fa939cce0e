# accel launch's rendezvous hook for rank 0 of a Python run on one machine (docs/security.md).
# The launcher has held the run's MASTER_PORT on 127.0.0.1 since it chose the port, and hands that
# listening socket to rank 0 (its descriptor in ACCEL_STORE_LISTEN_FD). accel launch writes this
# file as <run>/rendezvous/sitecustomize.py and appends that folder to rank 0's PYTHONPATH; torch's
# env:// rendezvous (init_process_group) then hosts its TCPStore on that socket (TCPStore's
# master_listen_fd) instead of binding the port again. So no other launch can take the port while
# rank 0 starts, and no rank of another run can meet this run's ranks. Nothing is imported until
# the script imports torch.distributed.rendezvous; afterwards the sitecustomize module this one
# hides (the next one on sys.path after this folder, such as Debian's) is run.
import os
import sys


def _install():
    fd = os.environ.pop("ACCEL_STORE_LISTEN_FD", "")
    port = os.environ.get("MASTER_PORT", "")
    if not fd.isdigit() or not port.isdigit():
        return
    fd, port = int(fd), int(port)
    try:
        os.set_inheritable(fd, False)  # the script's own children do not hold the port
    except OSError:
        return
    import importlib.abc
    import importlib.util

    def patch(module):
        original = module._create_c10d_store
        used = []

        def create(hostname, port_, rank, world_size, timeout, use_libuv=True):
            if used or rank != 0 or port_ != port or module._torchelastic_use_agent_store():
                return original(hostname, port_, rank, world_size, timeout, use_libuv)
            used.append(True)
            return module.TCPStore(host_name=hostname, port=port_, world_size=world_size, is_master=True,
                                   timeout=timeout, multi_tenant=True, master_listen_fd=fd, use_libuv=use_libuv)

        module._create_c10d_store = create

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "torch.distributed.rendezvous":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Finder())


def _run_hidden_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    if here not in entries:
        return
    later = sys.path[entries.index(here) + 1:]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


if os.path.basename(__file__).startswith("sitecustomize"):
    try:
        _install()
    except Exception:  # the script must run whatever happens here
        pass
    _run_hidden_sitecustomize()
