"""dop.features and dop.train (analysis builds): the same results as the dop CLI on real kernels and datasets."""
import json

import pytest

import dop
from conftest import MODELS, ROOT, run_dop

pytestmark = pytest.mark.skipif(not dop.HAVE_ANALYSIS, reason="dop was built without its analysis tier")

GEMM = ROOT / "kernels" / "gemm" / "gemm.cl"


def test_features_match_the_cli(dop_bin):
    cli = json.loads(run_dop(dop_bin, "features", GEMM, "--json"))
    mine = dop.features(GEMM.read_text(), file_name=str(GEMM))
    assert mine == {k["kernel"]: k["features"] for k in cli["kernels"]}
    assert dop.features(GEMM.read_text(), kernel="gemm") == mine["gemm"]


def test_features_feed_the_predictor():
    p = dop.Predictor(str(MODELS / "gbt.json"))
    f = dop.features(GEMM.read_text(), kernel="gemm")
    assert set(p.code_features) <= set(f)
    d = p.decide(f, (1024, 1024), (16, 16), args={"nk": 1024})
    assert (d.cpu_util, d.gpu_util) in p.configs


def test_features_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"broken\.cl: 2:"):
        dop.features("__kernel void k(__global float* a) {\n  a[0] = ;\n}\n", file_name="broken.cl")
    with pytest.raises(ValueError, match="no kernel 'nope'.*gemm"):
        dop.features(GEMM.read_text(), kernel="nope")


def model_without_metadata(text):
    model = json.loads(text)
    model.pop("training", None)
    return model


def test_train_matches_the_cli(dop_bin, tmp_path):
    data = MODELS / "trial.csv"
    params = {"max_depth": 6}
    cli_out = tmp_path / "cli.json"
    run_dop(dop_bin, "train", data, "--model", "dt", "--cv", "0", "--no-loko", "--param", "max_depth=6",
            "--out", cli_out)
    py_out = tmp_path / "py.json"
    text = dop.train(data, model="dt", out=py_out, params=params)
    assert py_out.read_text() == text
    assert model_without_metadata(text) == model_without_metadata(cli_out.read_text())
    p = dop.Predictor(str(py_out))
    assert p.type == "dt" and p.platform_id == "h100-xeon16"


def test_train_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="'forest' is not dt, rf, gbt, rank or linear"):
        dop.train(MODELS / "trial.csv", model="forest")
    with pytest.raises(dop.DatasetError, match="missing.csv"):
        dop.train(tmp_path / "missing.csv")
