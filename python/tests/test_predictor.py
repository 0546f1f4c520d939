"""dop.Predictor on the repository's trained models (models/h100-xeon16/*.json)."""
import json
import math

import numpy as np
import pytest

import dop
from conftest import MODELS, ROOT, run_dop

MODEL_FILES = sorted(MODELS.glob("*.json"))
MODEL_FILES = [p for p in MODEL_FILES if json.loads(p.read_text()).get("format") == "dop-model/1"]


def gemm_features():
    table = dop.read_code_features(MODELS / "features.csv")
    row = table[table.kernel == "gemm"].iloc[0]
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()
            if k not in ("file", "kernel")}


def test_models_are_found():
    assert len(MODEL_FILES) >= 4  # dt, gbt, linear, rank


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
def test_code_features_are_the_models(path):
    model = json.loads(path.read_text())
    p = dop.Predictor(str(path))
    assert p.code_features == [f["key"] for f in model["features"] if f["source"] == "code"]
    assert p.platform_id == model["platform"]["id"]
    assert p.type == model["type"]
    grid = model["grid"]
    assert p.configs == [(c, g) for c in grid["cpu_levels"] for g in grid["gpu_levels"] if (c, g) != (0, 0)]


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.stem)
@pytest.mark.parametrize("launch", [((1024, 1024), (16, 16)), ((100, 90), (10, 10)), ((4096, 4096), (8, 8))])
def test_decide_is_the_best_of_scores(path, launch):
    p = dop.Predictor(str(path))
    f = gemm_features()
    d = p.decide(f, *launch, args={"nk": launch[0][0]})
    scores = p.scores(f, *launch, args={"nk": launch[0][0]})
    assert isinstance(scores, np.ndarray) and scores.shape == (len(p.configs),)
    # The first of equal outputs, as the predictor picks, after a configuration of both devices gives up the model's
    # mixing margin (decision.mixed_margin; 0 in files without it: pick_config).
    margin = json.loads(path.read_text()).get("decision", {}).get("mixed_margin", 0.0)
    mixed = np.array([c > 0 and g > 0 for c, g in p.configs])
    best = int(np.argmax(np.where(mixed, scores - margin, scores)))
    assert d.index == best
    assert (d.cpu_util, d.gpu_util) == p.configs[best]
    assert d.predicted == pytest.approx(scores[best], rel=1e-12)
    assert not d.cached


def test_decide_matches_the_cli(dop_bin):
    model = MODELS / "gbt.json"
    cli = json.loads(run_dop(dop_bin, "predict", "--model", model, "--features", features_json(dop_bin),
                             "--kernel", "gemm", "--global", "1024,1024", "--local", "16,16", "--arg", "nk=1024",
                             "--json"))
    d = dop.Predictor(str(model)).decide(gemm_features_from_cli(dop_bin), (1024, 1024), (16, 16), args={"nk": 1024})
    assert (d.cpu_util, d.gpu_util) == (cli["cpu_util"], cli["gpu_util"])
    assert d.predicted == pytest.approx(cli["predicted"], rel=1e-9)
    scores = dop.Predictor(str(model)).scores(gemm_features_from_cli(dop_bin), (1024, 1024), (16, 16),
                                              args={"nk": 1024})
    assert scores == pytest.approx([c["predicted"] for c in cli["configurations"]], rel=1e-9)


_features_cache = {}


def features_json(dop_bin):
    """`dop features --json` of kernels/gemm/gemm.cl, written once (the CLI's own input format)."""
    if "path" not in _features_cache:
        import tempfile
        text = run_dop(dop_bin, "features", ROOT / "kernels" / "gemm" / "gemm.cl", "--kernel", "gemm", "--json")
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        f.write(text)
        f.close()
        _features_cache["path"] = f.name
        _features_cache["features"] = json.loads(text)["kernels"][0]["features"]
    return _features_cache["path"]


def gemm_features_from_cli(dop_bin):
    features_json(dop_bin)
    return _features_cache["features"]


def test_platform_mismatch_is_refused():
    with pytest.raises(dop.ModelError, match="platform"):
        dop.Predictor(str(MODELS / "gbt.json"), platform_id="another-host")
    assert dop.Predictor(str(MODELS / "gbt.json"), platform_id="h100-xeon16").platform_id == "h100-xeon16"


def test_unreadable_model_names_the_file(tmp_path):
    with pytest.raises(dop.ModelError, match="nope.json"):
        dop.Predictor(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "dop-model/1", "type": ')
    with pytest.raises(dop.ModelError, match="bad.json"):
        dop.Predictor(str(bad))


def test_missing_code_feature_is_named():
    f = gemm_features()
    del f["arith_float"]
    with pytest.raises(dop.ModelError, match="arith_float"):
        dop.Predictor(str(MODELS / "gbt.json")).decide(f, 1024, 256)


def test_bad_launch_and_feature_types():
    p = dop.Predictor(str(MODELS / "gbt.json"))
    f = gemm_features()
    with pytest.raises(ValueError, match="local_size"):
        p.decide(f, 1024, 0)
    with pytest.raises(ValueError):
        p.decide(f, (1024, 1024), 16)  # two dimensions against one
    with pytest.raises(TypeError, match="global_size"):
        p.decide(f, "1024", 16)
    with pytest.raises(TypeError, match="arith_int"):
        p.decide({**f, "arith_int": [1]}, 1024, 16)
