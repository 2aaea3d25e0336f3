"""anvil.tune: a short session on a small model writes records that compile applies."""

import json

import numpy as np

import anvil


def test_tune_writes_records_that_compile_applies(dense, dense_file, tmp_path, capsys):
    model, reference = dense
    records = tmp_path / "records.json"
    summary = anvil.tune(str(dense_file), trials=4, records=records)
    assert summary["records"] == str(records) and summary["trials"] > 0
    assert summary["tasks"] and all(t["measured"] > 0 for t in summary["tasks"])
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    assert len(lines) >= summary["trials"]
    assert "trials, best" in capsys.readouterr().err  # the progress line
    m = anvil.compile(str(dense_file), tuning_records=records)
    x = np.random.default_rng(6).standard_normal((1, 64)).astype(np.float32)
    np.testing.assert_allclose(m.run(x)[0], reference(x), rtol=1e-5, atol=1e-5)
    # A second session resumes: the recorded trials count, fewer are measured.
    again = anvil.tune(str(dense_file), trials=4, records=records, progress=False)
    assert again["trials"] < summary["trials"] or again["trials"] == 0
