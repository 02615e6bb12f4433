import json
import re

from groupbias import runs


def test_run_once_skips_complete_and_resumes_steps(tmp_path):
    calls = []
    cfg = {"experiment": {"name": "x"}, "bias": {"beta": 0.8}, "paths": {"out": "a"}}

    def fn(rd):
        res = [
            rd.step(f"k{k}", lambda k=k: (calls.append(k), {"v": k * 2})[1], key={"k": k})
            for k in (1, 2)
        ]
        return {"records": [{"metric": "v", "value": r["v"]} for r in res]}

    m, skipped = runs.run_once(tmp_path / "r", cfg, fn, seed=0)
    assert not skipped and [r["value"] for r in m["records"]] == [2, 4] and calls == [1, 2]
    m2, skipped = runs.run_once(tmp_path / "r", cfg, fn, seed=0)
    assert skipped and m2 == m and calls == [1, 2]
    # a changed result-relevant key re-runs; a changed path does not
    runs.run_once(tmp_path / "r", {**cfg, "paths": {"out": "b"}}, fn)
    assert calls == [1, 2]
    runs.run_once(tmp_path / "r", {**cfg, "bias": {"beta": 0.6}}, fn)
    assert calls == [1, 2, 1, 2]
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["status"] == "complete" and "groupbias_version" in meta


def test_killed_run_reuses_finished_steps(tmp_path):
    cfg = {"a": 1}
    calls = []

    def crashing(rd):
        rd.step("s1", lambda: (calls.append(1), {"v": 1})[1])
        raise KeyboardInterrupt

    try:
        runs.run_once(tmp_path / "r", cfg, crashing)
    except KeyboardInterrupt:
        pass
    assert not (tmp_path / "r" / "metrics.json").exists()
    assert runs.collect_records(tmp_path) == []

    def fine(rd):
        v = rd.step("s1", lambda: (calls.append(2), {"v": 9})[1])
        return {"records": [{"metric": "v", "value": v["v"]}]}

    m, _ = runs.run_once(tmp_path / "r", cfg, fine)
    assert calls == [1] and m["records"][0]["value"] == 1
    assert runs.collect_records(tmp_path) == [{"metric": "v", "value": 1, "run": "r"}]


def test_a_labelled_step_prints_one_line_with_its_time(tmp_path, capsys):
    rd = runs.RunDir(tmp_path / "r", {"a": 1})
    rd.start()
    rd.step("tab_b0.8", lambda: {"v": 1}, label="tabular, β = 0.8")
    rd.step("tab_b0.8", lambda: {"v": 2}, label="tabular, β = 0.8")
    rd.step("plain", lambda: {"v": 3})
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"\[groupbias\] tabular, β = 0\.8: \d+\.\d s", lines[0]), lines
    assert lines[1] == "[groupbias] tabular, β = 0.8: reused"
    assert lines[2] == "[groupbias] plain: running" and lines[3].startswith(
        "[groupbias] plain: done"
    )
    assert len(lines) == 4
