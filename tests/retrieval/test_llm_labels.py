"""Document labels: the lexicon labeller, the agreement statistics, and the LLM client and
labeller against a real HTTP server on 127.0.0.1 (pytest-httpserver): malformed answers,
timeouts, 429 / 500, the answer cache and a kill mid-corpus."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from groupbias.core.errors import DataFormatError, ParameterError
from groupbias.evaluation.stats import label_agreement
from groupbias.retrieval.labels import (
    GENDER_PROMPTS,
    LexiconLabeller,
    LLMLabeller,
    lexicon_bias,
    load_gender_wordlist,
    parse_gender,
)
from groupbias.retrieval.llm import ChatClient, ChatEndpoint

REPO = Path(__file__).resolve().parents[2]
WORDS = {"M": ("he", "his", "man", "father"), "F": ("she", "her", "woman", "mother")}


def test_wordlist_reads_word_group_lines_and_names_bad_ones(tmp_path):
    p = tmp_path / "w.txt"
    p.write_text("he,m\nshe,f\nHim,m\n")
    assert load_gender_wordlist(p) == {"M": ("he", "him"), "F": ("she",)}
    p.write_text("he,m\nshe;f\n")
    with pytest.raises(DataFormatError, match="line 2"):
        load_gender_wordlist(p)


def test_lexicon_labels_and_bias_by_hand():
    texts = ["He and his father", "She met her mother and he", "The nurse", "he she"]
    lab = LexiconLabeller(WORDS)
    assert lab.label(texts).tolist() == ["M", "F", "N", "N"]
    assert lab.counts(texts).counts.tolist() == [[3, 0], [1, 3], [0, 0], [1, 1]]
    # tf magnitudes: |ln 4 - ln 1|, |ln 2 - ln 4|, 0, 0; divided by the largest (ln 4)
    np.testing.assert_allclose(
        lexicon_bias(lab.counts(texts).counts, "tf"), [1.0, np.log(2) / np.log(4), 0, 0]
    )
    np.testing.assert_allclose(lexicon_bias([[3, 0], [1, 3], [0, 0]], "bool"), [1, 0, 0])


def test_label_agreement_matches_sklearn():
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    rng = np.random.default_rng(3)
    t = rng.choice(["M", "F", "N"], 200)
    p = np.where(rng.random(200) < 0.7, t, rng.choice(["M", "F", "N"], 200))
    a = label_agreement(np.append(t, ""), np.append(p, "M"), ["M", "F", "N"])
    assert a["n"] == 200 and a["no_reference"] == 1
    assert a["kappa"] == pytest.approx(cohen_kappa_score(t, p))
    assert a["confusion"] == confusion_matrix(t, p, labels=["M", "F", "N"]).tolist()
    assert a["accuracy"] == pytest.approx(np.mean(t == p))
    assert a["per_class"]["M"] == pytest.approx(np.mean(p[t == "M"] == "M"))


@pytest.mark.parametrize(
    "answer,cot,expected",
    [
        ("Male", False, "M"),
        ("**Female**.", False, "F"),
        ("Class: Neutral", False, "N"),
        ("neutral\n", False, "N"),
        ("I think it is male", False, None),
        ("Non-binary", False, None),
        ("", False, None),
        ("Class: Male\nReasoning: it talks about fathers", True, "M"),
        ("Reasoning: none. Class: **Female**", True, "F"),
        ("Class: Male ... Class: Female", True, None),
        ("The document is male-biased", True, None),
    ],
)
def test_answers_parse_strictly(answer, cot, expected):
    assert parse_gender(answer, cot=cot) == expected


def test_prompts_are_the_seed_prompts():
    assert set(GENDER_PROMPTS) == {"zero_shot", "one_shot", "three_shot", "cot"}
    z = GENDER_PROMPTS["zero_shot"]
    assert z.startswith("You are a document gender bias detector") and z.endswith(
        "Document: {passage} Class:"
    )
    assert GENDER_PROMPTS["one_shot"].count("Class:") == 2  # one demonstration
    assert GENDER_PROMPTS["three_shot"].count("Class: Male") == 1
    assert (
        '"Reasoning:" label' in GENDER_PROMPTS["cot"]
        and "generate only" not in GENDER_PROMPTS["cot"]
    )


def _chat(content: str) -> Response:
    body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    return Response(json.dumps(body), content_type="application/json")


def _by_text(request) -> Response:
    prompt = request.get_json()["messages"][0]["content"]
    doc = prompt.rsplit("Document: ", 1)[1]
    words = set(doc.lower().replace(".", " ").split())
    if "garbled" in words:
        return _chat("I would rather not say")
    if "nonbinary" in words:
        return _chat("Non-binary")
    return _chat("Female" if "she" in words else "Male" if "he" in words else "Neutral")


@pytest.fixture
def server():
    s = HTTPServer(host="127.0.0.1", threaded=True)
    s.start()
    yield s
    s.clear()
    if s.is_running():
        s.stop()


def _endpoint(server, tmp_path, **kw):
    opts = dict(
        retries=2, backoff=0.01, timeout=5.0, concurrency=4, cache_dir=str(tmp_path / "cache")
    )
    opts.update(kw)
    return ChatEndpoint(base_url=server.url_for("/v1"), model="test-model", **opts)


def test_labeller_labels_counts_unparsed_answers_and_reuses_its_cache(server, tmp_path):
    server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(_by_text)
    texts = ["she runs", "he walks", "the weather", "garbled text", "nonbinary person"]
    ep = _endpoint(server, tmp_path)
    res = LLMLabeller(ep, "zero_shot").label(texts)
    assert res.labels.tolist() == ["F", "M", "N", "", ""]
    assert sorted(res.unparsed) == [3, 4] and res.unparsed[4] == "Non-binary"
    assert res.requested == 5 and res.from_cache == 0
    sent = [r.get_json() for r, _ in server.log]
    assert all(b["model"] == "test-model" and b["temperature"] == 0.0 for b in sent)
    assert any(b["messages"][0]["content"].endswith("Document: she runs Class:") for b in sent)
    n_before = len(server.log)
    again = LLMLabeller(ep, "zero_shot").label(texts)
    # the answers are not asked twice; the two that did not parse were not cached
    assert len(server.log) == n_before + 2
    assert again.from_cache == 3 and again.labels.tolist() == res.labels.tolist()
    # another prompt is another question
    LLMLabeller(ep, "one_shot").label(texts[:1])
    assert len(server.log) == n_before + 3


def test_garbage_is_not_stored_and_the_fixed_endpoint_is_asked_again(server, tmp_path):
    from groupbias.retrieval.llm import RemoteCallError, check_results

    texts = ["she runs", "he walks", "the weather"]
    server.expect_request("/v1/chat/completions").respond_with_handler(
        lambda request: _chat("<html>bad gateway page</html>")
    )
    ep = _endpoint(server, tmp_path)
    res = LLMLabeller(ep, "zero_shot").label(texts)
    assert res.labels.tolist() == ["", "", ""] and len(res.unparsed) == 3
    with pytest.raises(RemoteCallError, match=r"3 of 3 answers of http://127\.0\.0\.1"):
        check_results(res, ep, "labels")
    assert not list((tmp_path / "cache").rglob("*.json"))  # nothing cached
    server.clear()
    server.expect_request("/v1/chat/completions").respond_with_handler(_by_text)
    fixed = LLMLabeller(ep, "zero_shot").label(texts)
    assert fixed.labels.tolist() == ["F", "M", "N"] and fixed.requested == 3
    check_results(fixed, ep, "labels")  # nothing missing: no error
    # a failed request stops the run whatever the share
    server.clear()
    server.expect_request("/v1/chat/completions").respond_with_response(Response("x", status=500))
    broken = LLMLabeller(_endpoint(server, tmp_path / "b"), "zero_shot").label(texts[:1])
    with pytest.raises(RemoteCallError, match="1 of 1 requests .* failed"):
        check_results(broken, ep, "labels")


def test_a_trickling_reply_times_out_and_a_huge_one_is_refused(server, tmp_path):
    def trickle(request):
        def body():
            yield b'{"choices": [{"message": {"content": "Fem'
            for _ in range(20):
                time.sleep(0.2)
                yield b" "
            yield b'ale"}}]}'

        return Response(body(), content_type="application/json")

    server.expect_request("/v1/chat/completions").respond_with_handler(trickle)
    ep = _endpoint(server, tmp_path, timeout=1.0, retries=0)
    started = time.monotonic()
    res = ChatClient(ep).complete_many(["a"])
    assert time.monotonic() - started < 3.0  # the deadline, not 20 reads of 1 s each
    assert res.answers == [None] and "TimeoutError" in res.failed[0]
    server.clear()
    big = b"x" * (2 << 20)
    server.expect_request("/v1/chat/completions").respond_with_response(Response(big))
    res = ChatClient(_endpoint(server, tmp_path, max_reply_bytes=1 << 20)).complete_many(["b"])
    assert res.answers == [None] and "max_reply_bytes" in res.failed[0]
    assert len(server.log) == 1  # refused, not retried


def test_429_and_500_are_retried_and_what_still_fails_is_reported(server, tmp_path):
    calls = {"n": 0}
    lock = threading.Lock()

    def flaky(request):
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n == 1:
            return Response("slow down", status=429, headers={"Retry-After": "0"})
        if n == 2:
            return Response("oops", status=500)
        return _chat("Neutral")

    server.expect_request("/v1/chat/completions").respond_with_handler(flaky)
    res = ChatClient(_endpoint(server, tmp_path, concurrency=1)).complete_many(["a"])
    assert res.answers == ["Neutral"] and calls["n"] == 3 and not res.failed
    server.clear()
    server.expect_request("/v1/chat/completions").respond_with_response(Response("x", status=500))
    res = ChatClient(_endpoint(server, tmp_path)).complete_many(["b", "c"])
    assert res.answers == [None, None]
    assert "HTTP 500 (after 3 attempts)" in res.failed[0]
    # a failure is not cached (only the one answer above is): it is asked again next time
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1


def test_malformed_bodies_and_client_errors(server, tmp_path):
    server.expect_request("/v1/chat/completions").respond_with_data("not json at all")
    res = ChatClient(_endpoint(server, tmp_path)).complete_many(["a"])
    assert res.answers == [None] and "not a chat completion" in res.failed[0]
    server.clear()
    server.expect_request("/v1/chat/completions").respond_with_response(Response("no", status=401))
    res = ChatClient(_endpoint(server, tmp_path)).complete_many(["b"])
    assert res.failed[0].startswith("HTTP 401") and len(server.log) == 1  # not retried


def test_timeouts_are_retried_then_reported(server, tmp_path):
    def slow(request):
        time.sleep(0.6)
        return _chat("Male")

    server.expect_request("/v1/chat/completions").respond_with_handler(slow)
    res = ChatClient(_endpoint(server, tmp_path, timeout=0.2, retries=1)).complete_many(["a"])
    assert res.answers == [None] and "after 2 attempts" in res.failed[0]


def test_requests_in_flight_never_exceed_the_bound(server, tmp_path):
    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    def counting(request):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return _chat("Neutral")

    server.expect_request("/v1/chat/completions").respond_with_handler(counting)
    res = ChatClient(_endpoint(server, tmp_path, concurrency=3)).complete_many(
        [f"p{i}" for i in range(12)]
    )
    assert res.answers == ["Neutral"] * 12 and 2 <= state["max"] <= 3


@pytest.mark.slow  # a subprocess or a whole run: seconds
def test_a_killed_labelling_run_resumes_from_the_cache(server, tmp_path):
    def slow(request):
        time.sleep(0.3)
        return _by_text(request)

    server.expect_request("/v1/chat/completions").respond_with_handler(slow)
    texts = [f"she number {i}" for i in range(12)]
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    script = (
        "import json, sys\n"
        "from groupbias.retrieval.llm import ChatEndpoint\n"
        "from groupbias.retrieval.labels import LLMLabeller\n"
        f"ep = ChatEndpoint(base_url={server.url_for('/v1')!r}, model='test-model', "
        f"concurrency=2, cache_dir={str(tmp_path / 'cache')!r})\n"
        f"LLMLabeller(ep).label(json.load(open({str(tmp_path / 'texts.json')!r})))\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO)
    cache = tmp_path / "cache"
    deadline = time.time() + 30
    while len(list(cache.rglob("*.json"))) < 4 and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.8)  # the requests it had in flight finish on the server side
    done = len(list(cache.rglob("*.json")))
    assert 4 <= done < 12, "the run was killed mid-corpus"
    asked_before = len(server.log)
    res = LLMLabeller(_endpoint(server, tmp_path, concurrency=4)).label(texts)
    assert res.from_cache == done and res.requested == 12 - done
    assert len(server.log) - asked_before == 12 - done
    assert res.labels.tolist() == ["F"] * 12


def test_endpoint_settings_are_checked():
    with pytest.raises(ParameterError, match="base_url"):
        ChatEndpoint(base_url="127.0.0.1:8000", model="m")
    with pytest.raises(ParameterError, match="concurrency"):
        ChatEndpoint(base_url="http://127.0.0.1/v1", model="m", concurrency=0)


#: the labeller in a process of its own, so that its peak resident memory is its own
_LABEL_ONE = """
import json, resource, sys
from groupbias.retrieval.labels import LLMLabeller
from groupbias.retrieval.llm import ChatEndpoint

endpoint = ChatEndpoint(base_url=sys.argv[1], model="test-model", timeout=60.0)
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
res = LLMLabeller(endpoint, "zero_shot").label(["she runs"])
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
print(json.dumps({"grown_kib": grown, "labels": res.labels.tolist(), "failed": res.failed}))
"""


def test_a_50_mb_reply_that_is_not_json_is_refused_without_holding_it(server):
    chunk = b"<html>" + b"x" * ((1 << 20) - 6)  # one 1 MiB block, sent 50 times

    def huge(request):
        return Response((chunk for _ in range(50)), content_type="text/html")

    server.expect_request("/v1/chat/completions").respond_with_handler(huge)
    out = subprocess.run(
        [sys.executable, "-c", _LABEL_ONE, server.url_for("/v1")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["labels"] == [""] and "max_reply_bytes" in got["failed"]["0"]
    # 50 MiB were sent: read up to max_reply_bytes (8 MiB) the peak grew by 10 MiB; a client
    # holding the whole reply (max_reply_bytes = 1 GiB) grew it by 102 MiB
    assert got["grown_kib"] < 40 * 1024, got
    assert len(server.log) == 1  # refused, not retried


def test_answers_that_all_fail_to_parse_give_no_table_row(server, tmp_path, capsys):
    from experiments.gender_labels import GenderLabels
    from groupbias.core.errors import GroupBiasWarning
    from groupbias.pipelines.retrieval import agreement_records
    from groupbias.retrieval.llm import RemoteCallError, check_results

    server.expect_request("/v1/chat/completions").respond_with_handler(
        lambda request: _chat("I would rather not say")
    )
    ep = _endpoint(server, tmp_path, max_failed_share=1.0)  # any share of failures allowed
    res = LLMLabeller(ep, "zero_shot").label(["she runs", "he walks"])
    with pytest.raises(RemoteCallError, match="none of the 2 answers .* parsed"):
        check_results(res, ep, "labels")
    # a labeller whose every label is missing: n = 0, a warning, no row
    truth = np.array(["F", "M"], dtype=object)
    base = {"dataset": "tiny"}
    records = agreement_records(truth, truth, ("M", "F", "N"), base=base, labeller="lexicon")
    records += agreement_records(
        truth, np.array(["", ""], dtype=object), ("M", "F", "N"), base=base, labeller="llm"
    )
    with pytest.warns(GroupBiasWarning, match="llm: left out of the table"):
        GenderLabels().present(None, {"records": records, "both_rows": 0}, tmp_path)
    table = (tmp_path / "gender_labels.md").read_text()
    assert "lexicon" in table and "llm" not in table


def test_ctrl_c_stops_asking_at_once_and_keeps_what_arrived(server, tmp_path):
    import _thread

    def slow(request):
        time.sleep(0.2)
        return _chat("Neutral")

    server.expect_request("/v1/chat/completions").respond_with_handler(slow)
    prompts = [f"p{i}" for i in range(40)]  # 4 s of requests, 2 at a time
    client = ChatClient(_endpoint(server, tmp_path, concurrency=2))
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        client.complete_many(prompts)
    stopped = time.monotonic() - t0
    time.sleep(0.6)  # the requests in flight end on the server side
    asked = len(server.log)
    # before: the pool's exit waited for every queued prompt (40 requests, 4 s)
    assert stopped < 1.2 and asked <= 2 * 0.5 / 0.2 + 2 + 2
    cached = len(list((tmp_path / "cache").rglob("*.json")))
    assert cached >= 2  # answers stored as they arrived
    res = client.complete_many(prompts)
    assert res.from_cache == cached and res.requested == 40 - cached
    assert res.answers == ["Neutral"] * 40
