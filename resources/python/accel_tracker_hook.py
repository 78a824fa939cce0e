# accel launch's start-up hook for trackers (docs/trackers.md). accel launch writes this file as
# <run>/python/sitecustomize.py and appends <run>/python to the ranks' PYTHONPATH, so every Python
# process of the run imports it at start-up, with no change to the script. It reports where the
# script's trackers write, so that the supervisor reads them live into the run's metrics:
#   - TensorBoard event files (torch.utils.tensorboard, tensorboardX): files named
#     events.out.tfevents.* opened for writing;
#   - MLflow's file store: the run folder (<mlruns>/<experiment>/<run>, holding meta.yaml) of a
#     metric file opened for writing under its metrics/ folder;
#   - SQLite databases opened by sqlite3 (trackio's <project>.db, MLflow's mlflow.db); the
#     supervisor keeps those whose tables a tracker writes.
# It sees them through Python's audit events (sys.addaudithook: "open", "sqlite3.connect"), which
# cost one function call per event and change nothing the script does. Each finding is one JSON
# line appended to <run>/trackers.jsonl: {"kind":..,"path":..,"rank":..,"pid":..,"time":..}.
# Afterwards the sitecustomize module this one hides (the next one on sys.path, such as Debian's)
# is run, so a site's own start-up code keeps working.
import os
import sys


def _install():
    here = os.path.dirname(os.path.abspath(__file__))
    report = os.path.join(os.path.dirname(here), "trackers.jsonl")
    rank = os.environ.get("RANK", "0")
    rank = int(rank) if rank.isdigit() else 0
    seen = set()
    mlflow_runs = []
    import threading

    local = threading.local()  # set while this thread reports: its own open() is not a finding

    def emit(kind, path):
        if (kind, path) in seen:
            return
        seen.add((kind, path))
        import json
        import time

        line = json.dumps({"kind": kind, "path": path, "rank": rank, "pid": os.getpid(), "time": time.time()})
        local.busy = True
        try:
            fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            pass  # the run folder is gone or full: the script goes on
        finally:
            local.busy = False

    def mlflow_run(path):
        # <run>/metrics/<key, possibly with folders>: the nearest "metrics" folder whose parent
        # holds the run's meta.yaml.
        for known in mlflow_runs:
            if path.startswith(known + os.sep):
                return None
        folder = os.path.dirname(path)
        for _ in range(8):
            parent = os.path.dirname(folder)
            if os.path.basename(folder) == "metrics" and os.path.isfile(os.path.join(parent, "meta.yaml")):
                mlflow_runs.append(parent)
                return parent
            if parent == folder:
                break
            folder = parent
        return None

    def hook(event, args):
        if event == "open":
            if getattr(local, "busy", False):
                return
            path, mode, flags = args
            if isinstance(path, bytes):  # TensorBoard's file layer opens bytes paths
                path = os.fsdecode(path)
            elif not isinstance(path, str):
                return  # a descriptor
            if isinstance(flags, int):
                writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT) != 0
            else:
                writing = isinstance(mode, str) and any(c in mode for c in "wax+")
            if not writing:
                return
            name = os.path.basename(path)
            if name.startswith("events.out.tfevents."):
                emit("tensorboard", os.path.abspath(path))
            elif os.sep + "metrics" + os.sep in os.path.abspath(path):
                run = mlflow_run(os.path.abspath(path))
                if run:
                    emit("mlflow", run)
        elif event == "sqlite3.connect":
            database = args[0] if args else None
            if isinstance(database, bytes):
                database = os.fsdecode(database)
            if isinstance(database, str) and database and database != ":memory:" and not database.startswith("file:"):
                emit("sqlite", os.path.abspath(database))

    sys.addaudithook(hook)


def _settle_collectives_at_exit():
    # PyTorch's gloo process group frees each finished collective on its own thread, and the
    # tensors it frees are Python's: that thread needs the GIL. When the script returns right after
    # a collective, Python can begin to finalize first; the gloo thread then cannot take the GIL, is
    # unwound through a destructor and the rank aborts ("terminate called without an active
    # exception", exit code 134) after its work is done. Accelerate's own test script does this
    # under torchrun too. An atexit handler that runs last, while Python is still whole, lets those
    # threads finish: it releases the GIL for a moment when torch.distributed was used.
    import atexit

    def settle():
        if "torch.distributed" not in sys.modules:
            return
        import gc
        import time

        gc.collect()
        time.sleep(0.25)

    atexit.register(settle)


def _run_hidden_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or os.path.abspath(spec.origin or "") == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


if os.path.basename(__file__).startswith("sitecustomize"):
    try:
        _install()
    except Exception:  # never stop the script for a tracker
        pass
    _settle_collectives_at_exit()
    _run_hidden_sitecustomize()
