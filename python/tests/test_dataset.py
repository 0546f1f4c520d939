"""dop.read_dataset / dop.read_code_features on the repository's datasets, checked against Python's csv module."""
import csv
import gzip
import io
import math

import numpy as np
import pytest

import dop
from conftest import MODELS

TEXT_COLUMNS = {"platform_id", "workload", "set", "kernel", "error", "data_on", "args"}


def read_with_csv(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.mark.parametrize("name", ["sweep.csv.gz", "trial.csv"])
def test_dataset_matches_the_csv_module(name):
    header, rows = read_with_csv(MODELS / name)
    df = dop.read_dataset(MODELS / name)
    assert list(df.columns) == header
    assert len(df) == len(rows)
    for c, column in enumerate(header):
        if column in TEXT_COLUMNS or column.endswith("_expr"):
            assert list(df[column]) == [r[c] for r in rows], column
        else:
            assert df[column].dtype == np.float64, column
            want = np.array([float(r[c]) if r[c] else math.nan for r in rows])
            np.testing.assert_array_equal(df[column].to_numpy(), want, err_msg=column)


def test_torn_last_line_is_dropped_and_bad_numbers_are_named(tmp_path):
    text = (MODELS / "trial.csv").read_text()
    lines = text.splitlines(keepends=True)
    torn = tmp_path / "torn.csv"
    torn.write_text("".join(lines[:11]) + lines[11][:25])  # a sweep killed mid-line
    assert len(dop.read_dataset(torn)) == 10

    header = lines[0].rstrip("\n").split(",")
    col = header.index("time_ms_median")
    fields = next(csv.reader(io.StringIO(lines[3])))
    fields[col] = "fast"
    bad = tmp_path / "bad.csv"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    bad.write_text("".join(lines[:3]) + out.getvalue() + "".join(lines[4:6]))
    with pytest.raises(dop.DatasetError, match=r"bad\.csv:4: column time_ms_median: 'fast'"):
        dop.read_dataset(bad)


def test_args_are_text(tmp_path):
    header, rows = read_with_csv(MODELS / "trial.csv")
    at = header.index("out_bytes" if "out_bytes" in header else "local_z") + 1  # where the sweep writes it
    values = ["K=256;N=1024" if i % 2 else "" for i in range(len(rows))]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header[:at] + ["args"] + header[at:])
    for r, v in zip(rows, values):
        w.writerow(r[:at] + [v] + r[at:])
    path = tmp_path / "args.csv"
    path.write_text(out.getvalue())
    assert list(dop.read_dataset(path)["args"]) == values


def test_not_a_dataset_is_refused(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(dop.DatasetError, match="other.csv"):
        dop.read_dataset(other)
    with pytest.raises(dop.DatasetError, match="missing.csv"):
        dop.read_dataset(tmp_path / "missing.csv")


def test_code_features_match_the_csv_module():
    header, rows = read_with_csv(MODELS / "features.csv")
    df = dop.read_code_features(MODELS / "features.csv")
    assert list(df.columns) == header
    assert len(df) == len(rows)
    assert list(df["kernel"]) == [r[1] for r in rows]
    c = header.index("arith_float")
    np.testing.assert_array_equal(df["arith_float"].to_numpy(), [float(r[c]) for r in rows])
    assert list(df["global_bytes_per_item_expr"]) == [r[-1] for r in rows]
