"""dop from Python: the degree-of-parallelism predictor, sweep datasets and, in an analysis build, static code
features of OpenCL C and training. The C++ core is dop's own (python/src); docs/embedding.md describes the API.

    import dop
    p = dop.Predictor("models/h100-xeon16/gbt.json")
    f = dop.features(open("kernels/gemm/gemm.cl").read(), kernel="gemm")    # analysis build
    d = p.decide(f, global_size=(1024, 1024), local_size=(16, 16), args={"nk": 1024})
    d.cpu_util, d.gpu_util, d.predicted
    df = dop.read_dataset("models/h100-xeon16/sweep.csv.gz")              # pandas DataFrame
"""

import json as _json

from ._dop import HAVE_ANALYSIS, DatasetError, Decision, ModelError, Predictor
from . import _dop

__all__ = ["HAVE_ANALYSIS", "DatasetError", "Decision", "ModelError", "Predictor", "read_dataset",
           "read_code_features", "features", "train"]
__version__ = "0.1.0"


def _frame(header, columns):
    import pandas

    return pandas.DataFrame({name: columns[name] for name in header}, columns=header)


def read_dataset(path):
    """A sweep dataset (docs/dataset.md; CSV or CSV.gz) as a pandas DataFrame, read by dop's own reader: numeric
    columns as float64 (empty fields: NaN), text columns (platform_id, workload, set, kernel, data_on, error, *_expr) as
    str. A torn last line (a killed sweep) is dropped; malformed input raises DatasetError naming file and line."""
    return _frame(*_dop._read_dataset(str(path)))


def read_code_features(path):
    """A `dop features --csv` table as a pandas DataFrame: file, kernel and the features (numbers as float64)."""
    return _frame(*_dop._read_code_features(str(path)))


def _need_analysis(what):
    if not HAVE_ANALYSIS:
        raise RuntimeError(f"dop.{what} needs dop's analysis tier (Clang 15, XGBoost): this dop was built without it")


def features(source, kernel=None, file_name="kernel.cl", build_options=""):
    """Static code features of OpenCL C `source` (`dop features`, docs/features.md).

    With `kernel`, that kernel's features as a dict {key: value} (what Predictor.decide takes); without, a dict
    {kernel name: features} of every kernel. Raises ValueError with the compiler's diagnostics when the source does
    not compile, or when `kernel` is not in it."""
    _need_analysis("features")
    result = _json.loads(_dop._features_json(source, file_name, kernel or "", build_options))
    errors = [d for d in result.get("diagnostics", []) if d.get("severity") in ("error", "fatal")]
    if errors:
        raise ValueError(f"{file_name}: " + "; ".join(
            f"{d.get('line', 0)}:{d.get('column', 0)}: {d.get('message', '')}" for d in errors))
    kernels = {k["kernel"]: k["features"] for k in result["kernels"]}
    if kernel is None:
        return kernels
    if kernel not in kernels:
        every = features(source, file_name=file_name, build_options=build_options)
        raise ValueError(f"{file_name}: no kernel '{kernel}' (kernels: {', '.join(sorted(every)) or 'none'})")
    return kernels[kernel]


def train(dataset, model="gbt", out=None, platform_id="", features=None, params=None, seed=1, gpu_units=1):
    """Trains a model on every workload of a sweep dataset, as `dop train DATASET --model MODEL` does
    (docs/models.md): model is dt, rf, gbt, rank or linear; params overrides its parameters (XGBoost's, "rounds",
    "lambda"); features is a `dop features --csv` table for a dataset swept without code features. Returns the
    model file's JSON text, and writes it to `out` when given (for Predictor(out))."""
    _need_analysis("train")
    text = _dop._train(str(dataset), model, platform_id, str(features or ""),
                       {str(k): str(v) for k, v in (params or {}).items()}, seed, gpu_units)
    if out is not None:
        with open(out, "w") as f:
            f.write(text)
    return text
