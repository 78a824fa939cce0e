"""Accel Studio metrics tracker (standard library only).

Writes one JSON object per line in the format of docs/metrics.md ("accel.metrics", version 1)
so that Accel Studio and `accel tail` plot a Python training script live:

    {"v":1,"time":1763771234.512,"rank":0,"step":120,"loss":2.314,"lr":0.0003}

Where it writes: the file named by $ACCEL_METRICS_FILE, else $ACCEL_RUN_DIR/metrics/rank$RANK.jsonl
(both set by `accel launch`), else nowhere (logging is a no-op outside a run).

Plain use, anywhere:

    from accel_studio_tracker import log
    log({"loss": loss, "lr": lr}, step=step)

With Hugging Face Accelerate installed, it is also a GeneralTracker:

    from accel_studio_tracker import AccelStudioTracker
    accelerator = Accelerator(log_with=AccelStudioTracker())
    accelerator.init_trackers("my-project", config={...})
    accelerator.log({"loss": loss}, step=step)

From a shell (one line per call):

    python3 accel_studio_tracker.py --step 3 loss=2.5 lr=1e-4
"""

import json
import math
import os
import sys
import time

__all__ = ["MetricsWriter", "default_writer", "log", "metrics_path", "ACCELERATE_AVAILABLE"]

FORMAT_VERSION = 1
_RESERVED = ("v", "time", "rank", "step", "kind")


def metrics_path(environ=None):
    """The metrics file this process should write, or None outside an Accel Studio run."""
    environ = os.environ if environ is None else environ
    explicit = environ.get("ACCEL_METRICS_FILE")
    if explicit:
        return explicit
    run_dir = environ.get("ACCEL_RUN_DIR")
    if run_dir:
        return os.path.join(run_dir, "metrics", "rank%d.jsonl" % _rank(environ))
    return None


def _rank(environ):
    try:
        return int(environ.get("RANK", "0"))
    except ValueError:
        return 0


def _number(value):
    """A float for numbers (tensors and numpy scalars included); None for anything else."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    item = getattr(value, "item", None)
    if callable(item):
        try:
            inner = item()
        except (TypeError, ValueError, RuntimeError):
            return None
        if isinstance(inner, (int, float, bool)):
            return float(inner)
    return None


def _flatten(values, prefix=""):
    """Yields (name, number) pairs; nested dicts become "outer/inner" names, non-numbers are skipped."""
    for key, value in values.items():
        name = prefix + str(key)
        if isinstance(value, dict):
            yield from _flatten(value, name + "/")
            continue
        number = _number(value)
        if number is not None and name not in _RESERVED:
            yield name, number


def _json_number(number):
    return repr(float(number)) if math.isfinite(number) else "null"


def format_line(values, step=None, rank=0, kind=None, now=None):
    """One metrics line (with its newline) for `values` at `step`."""
    parts = ['"v":%d' % FORMAT_VERSION, '"time":%.6f' % (time.time() if now is None else now), '"rank":%d' % rank]
    if step is not None:
        parts.append('"step":%d' % int(step))
    if kind is not None and kind != "train":
        parts.append('"kind":%s' % json.dumps(str(kind)))
    for name, number in _flatten(values):
        parts.append("%s:%s" % (json.dumps(name), _json_number(number)))
    return "{" + ",".join(parts) + "}\n"


class MetricsWriter:
    """Appends metrics lines to one file; each line goes out in a single write, so readers that
    follow the file never see half a line from a crash in the middle of a call."""

    def __init__(self, path=None, rank=None):
        self.path = path if path is not None else metrics_path()
        self.rank = _rank(os.environ) if rank is None else int(rank)
        self._fd = None

    @property
    def enabled(self):
        return self.path is not None

    def log(self, values, step=None, kind=None):
        if not self.enabled:
            return
        if self._fd is None:
            folder = os.path.dirname(self.path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, format_line(values, step=step, rank=self.rank, kind=kind).encode("utf-8"))

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


_default = None


def default_writer():
    global _default
    if _default is None:
        _default = MetricsWriter()
    return _default


def log(values, step=None, kind=None):
    """Logs `values` (a dict of numbers) at `step` to this process's metrics file."""
    default_writer().log(values, step=step, kind=kind)


try:
    from accelerate.tracking import GeneralTracker as _GeneralTracker

    ACCELERATE_AVAILABLE = True
except Exception:  # accelerate missing or broken: the plain API still works
    _GeneralTracker = None
    ACCELERATE_AVAILABLE = False


if _GeneralTracker is not None:

    class AccelStudioTracker(_GeneralTracker):
        """Accelerate tracker writing Accel Studio metrics files (pass it to `log_with=`)."""

        name = "accel_studio"
        requires_logging_directory = False
        main_process_only = False

        def __init__(self, run_name="accel_studio", path=None):
            super().__init__()
            self.run_name = run_name
            self.writer = MetricsWriter(path=path)

        @property
        def tracker(self):
            return self.writer

        def store_init_configuration(self, values):
            """Saves the hyperparameters next to the metrics as hparams.json."""
            if not self.writer.enabled:
                return
            folder = os.path.dirname(os.path.dirname(os.path.abspath(self.writer.path)))
            target = os.path.join(folder, "hparams.json")
            temporary = target + ".tmp%d" % os.getpid()
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(values, handle, indent=2, sort_keys=True, default=str)
            os.replace(temporary, target)

        def log(self, values, step=None, **kwargs):
            self.writer.log(values, step=step, kind=kwargs.get("kind"))

        def finish(self):
            self.writer.close()

    __all__.append("AccelStudioTracker")


def _parse_value(text):
    try:
        return float(text)
    except ValueError:
        raise SystemExit("accel_studio_tracker: not a number: %r" % text)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    step = None
    kind = None
    values = {}
    arguments = iter(argv)
    for argument in arguments:
        if argument in ("-h", "--help"):
            print("usage: accel_studio_tracker.py [--step N] [--kind train|eval|system] [--file PATH] NAME=VALUE ...")
            print("       accel_studio_tracker.py --info")
            return 0
        if argument == "--info":
            print(json.dumps({"path": metrics_path(), "accelerate": ACCELERATE_AVAILABLE, "version": FORMAT_VERSION}))
            return 0
        if argument == "--step":
            step = int(next(arguments))
        elif argument == "--kind":
            kind = next(arguments)
        elif argument == "--file":
            os.environ["ACCEL_METRICS_FILE"] = next(arguments)
        elif "=" in argument:
            name, text = argument.split("=", 1)
            values[name] = _parse_value(text)
        else:
            print("accel_studio_tracker: expected NAME=VALUE, got %r" % argument, file=sys.stderr)
            return 2
    writer = MetricsWriter()
    if not writer.enabled:
        print("accel_studio_tracker: no metrics file: set ACCEL_METRICS_FILE or ACCEL_RUN_DIR", file=sys.stderr)
        return 1
    with writer:
        writer.log(values, step=step, kind=kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
