"""A client for OpenAI-compatible chat endpoints (vLLM, Ollama, llama.cpp's server, OpenAI):
many prompts at once, with a bound on the requests in flight, retries with back-off, a
progress bar and an answer cache on disk.

- :class:`ChatEndpoint`: ``base_url`` (``.../v1``), ``model``, ``api_key`` (else
  ``$GROUPBIAS_LLM_API_KEY``, else ``$OPENAI_API_KEY``, else none), ``temperature``,
  ``max_tokens``, ``timeout`` (seconds per request, from sending it to the last byte of the
  reply, however slowly the bytes come), ``max_reply_bytes`` (a longer reply is an error, not
  read into memory), ``retries`` and ``backoff`` (seconds before the first retry, doubled
  each time; a ``Retry-After`` header is honoured, at most ``max_backoff``), ``concurrency``
  (requests in flight), ``cache_dir`` and ``max_failed_share`` (see :func:`check_results`).
- :meth:`ChatClient.complete_many`: one user message per prompt to ``POST
  {base_url}/chat/completions``; answers come back in prompt order. Timeouts, connection
  errors, HTTP 429 and 5xx and bodies that are not a chat completion are retried; other
  HTTP errors are not. What still fails is reported in :class:`ChatResults` (``failed``:
  index -> reason), never replaced by a guess. With ``parse``, an answer that does not parse
  is reported in ``unparsed`` (index -> answer) instead of ``answers``.
- The cache: one JSON file per answer under ``cache_dir``, named by the SHA-256 of the
  model, the sampling settings and the full prompt (instructions with the document's text
  in it), written atomically as each answer arrives, so a killed run re-run asks only for
  what it had not received, and a corpus is never labelled twice. Only answers are cached:
  never a failed request, never an answer that does not parse (it is asked again).
- :func:`check_results`: a run whose requests failed, or whose answers did not parse beyond
  ``max_failed_share``, stops with a :class:`RemoteCallError` naming the endpoint, so that
  nothing computed from missing answers is stored; the same command asks again for what is
  missing.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._fast.threads import as_they_finish
from ..core.errors import GroupBiasError, ParameterError
from ..core.io import env_value, read_json, write_json_atomic
from ..core.validation import integer, real

__all__ = [
    "ChatEndpoint",
    "ChatClient",
    "ChatResults",
    "RETRIED_STATUS",
    "RemoteCallError",
    "check_results",
]

#: HTTP statuses that are retried (rate limits and server errors)
RETRIED_STATUS = (408, 429, 500, 502, 503, 504)


@dataclass(frozen=True)
class ChatEndpoint:
    """Where and how to ask (module docstring)."""

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    timeout: float = 60.0
    retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    concurrency: int = 8
    cache_dir: str | None = None
    max_reply_bytes: int = 8 << 20
    max_failed_share: float = 0.0

    def __post_init__(self) -> None:
        for name in ("base_url", "model"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ParameterError(name, "a non-empty string", value)
        if not self.base_url.startswith(("http://", "https://")):
            raise ParameterError(
                "base_url", "an http(s) URL such as http://127.0.0.1:8000/v1", self.base_url
            )
        real("temperature", self.temperature, low=0.0, high=2.0)
        integer("max_tokens", self.max_tokens, low=1)
        real("timeout", self.timeout, low=0.0, low_open=True)
        integer("retries", self.retries, low=0)
        real("backoff", self.backoff, low=0.0)
        real("max_backoff", self.max_backoff, low=0.0)
        integer("concurrency", self.concurrency, low=1)
        integer("max_reply_bytes", self.max_reply_bytes, low=1024)
        real("max_failed_share", self.max_failed_share, low=0.0, high=1.0)
        if self.cache_dir is not None and not isinstance(self.cache_dir, str):
            raise ParameterError("cache_dir", "a folder (string) or null", self.cache_dir)

    @property
    def key(self) -> str | None:
        if self.api_key:
            return self.api_key
        return env_value("GROUPBIAS_LLM_API_KEY") or env_value("OPENAI_API_KEY")


@dataclass
class ChatResults:
    """Answers in prompt order (None where the request failed or, with ``parse``, the
    answer did not parse), the failures (index -> reason), the answers that did not parse
    (index -> answer), and how many answers came from the cache and from requests."""

    answers: list[str | None]
    failed: dict[int, str] = field(default_factory=dict)
    unparsed: dict[int, str] = field(default_factory=dict)
    from_cache: int = 0
    requested: int = 0

    def __len__(self) -> int:
        return len(self.answers)


class RemoteCallError(GroupBiasError):
    """Requests to an endpoint failed, or too many of its answers did not parse: nothing
    computed from them is stored (the answers received are cached)."""


def check_results(res, endpoint: ChatEndpoint, what: str) -> None:
    """Raise :class:`RemoteCallError` naming the endpoint when a request of ``res`` (a
    :class:`ChatResults`, or any result with ``failed`` and ``unparsed`` by index and
    ``len(res)``) failed, when more than ``endpoint.max_failed_share`` of its answers did
    not parse, or when none did (whatever the share: a result over no answer is none)."""
    n = len(res)
    where = f"{endpoint.base_url} (model {endpoint.model})"
    if res.failed:
        reason = next(iter(res.failed.values()))
        raise RemoteCallError(
            f"{what}: {len(res.failed)} of {n} requests to {where} failed (first: {reason}); "
            "nothing is stored. Hint: check the endpoint and run the same command again: the "
            "answers received are cached and only the missing ones are asked"
        )
    if n and len(res.unparsed) > endpoint.max_failed_share * n:
        sample = next(iter(res.unparsed.values()))[:120]
        raise RemoteCallError(
            f"{what}: {len(res.unparsed)} of {n} answers of {where} did not parse (more than "
            f"max_failed_share = {endpoint.max_failed_share}; first: {sample!r}); nothing is "
            "stored. Hint: check the model and prompt; answers that do not parse are not cached"
        )
    if n and len(res.unparsed) == n:  # allowed by max_failed_share = 1: still no answer
        sample = next(iter(res.unparsed.values()))[:120]
        raise RemoteCallError(
            f"{what}: none of the {n} answers of {where} parsed (first: {sample!r}), so there "
            "is nothing to measure whatever max_failed_share allows; nothing is stored. Hint: "
            "check the model and prompt; answers that do not parse are not cached"
        )


class _Retry(Exception):
    """A failure worth another try."""


class ChatClient:
    """Asks an :class:`ChatEndpoint` (module docstring)."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        if not isinstance(endpoint, ChatEndpoint):
            raise ParameterError("endpoint", "a ChatEndpoint", type(endpoint).__name__)
        self.endpoint = endpoint
        self.url = endpoint.base_url.rstrip("/") + "/chat/completions"

    def cache_key(self, prompt: str) -> str:
        e = self.endpoint
        blob = json.dumps([e.model, e.temperature, e.max_tokens, prompt], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        d = self.endpoint.cache_dir
        return None if d is None else Path(d) / key[:2] / f"{key}.json"

    def _cached(self, key: str) -> str | None:
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            entry = read_json(path)
        except (OSError, ValueError):
            return None  # a damaged entry is asked again and rewritten
        answer = entry.get("answer") if isinstance(entry, dict) else None
        return answer if isinstance(answer, str) else None

    def _request(self, prompt: str) -> str:
        e = self.endpoint
        body = {
            "model": e.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": e.temperature,
            "max_tokens": e.max_tokens,
        }
        headers = {"Content-Type": "application/json"}
        if e.key:
            headers["Authorization"] = f"Bearer {e.key}"
        req = urllib.request.Request(
            self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        deadline = time.monotonic() + e.timeout
        try:
            with urllib.request.urlopen(req, timeout=e.timeout) as resp:
                raw = _read_reply(resp, deadline, e.max_reply_bytes)
        except urllib.error.HTTPError as exc:
            if exc.code in RETRIED_STATUS:
                raise _Retry(f"HTTP {exc.code}", _retry_after(exc)) from None
            raise RuntimeError(f"HTTP {exc.code}: {exc.reason}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            raise _Retry(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}", None) from None
        except _TooLong as exc:
            raise RuntimeError(str(exc)) from None
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise _Retry("the body is not a chat completion", None) from None
        if not isinstance(content, str):
            raise _Retry("the answer is not text", None)
        return content

    def _ask(self, prompt: str) -> str:
        e = self.endpoint
        delay = e.backoff
        for attempt in range(e.retries + 1):
            try:
                return self._request(prompt)
            except _Retry as exc:
                reason, after = exc.args
                if attempt == e.retries:
                    raise RuntimeError(f"{reason} (after {e.retries + 1} attempts)") from None
                time.sleep(min(e.max_backoff, after if after is not None else delay))
                delay *= 2
        raise AssertionError("unreachable")

    def _ask_and_store(
        self, key: str, prompt: str, parses: Callable[[str], bool]
    ) -> tuple[str, bool]:
        """The answer and whether it parses; one that parses is cached here, as it arrives
        (on the worker thread), so an answer in flight when the run is stopped is kept."""
        answer = self._ask(prompt)
        ok = parses(answer)
        path = self._cache_path(key) if ok else None
        if path is not None:
            write_json_atomic(path, {"model": self.endpoint.model, "answer": answer})
        return answer, ok

    def complete_many(
        self,
        prompts: Sequence[str],
        *,
        progress: bool = False,
        desc: str = "LLM",
        parse: Callable[[str], object] | None = None,
    ) -> ChatResults:
        """The answer to every prompt (module docstring): cached answers first, the rest
        with at most ``concurrency`` requests in flight, each stored as it arrives. With
        ``parse`` (answer -> value, None when it does not parse), an answer that does not
        parse goes to ``unparsed`` and is not cached (a cached one is asked again)."""
        from tqdm.auto import tqdm

        def parses(answer: str) -> bool:
            return parse is None or parse(answer) is not None

        answers: list[str | None] = [None] * len(prompts)
        out = ChatResults(answers)
        todo: dict[str, list[int]] = {}
        for i, p in enumerate(prompts):
            key = self.cache_key(p)
            hit = self._cached(key)
            if hit is not None and parses(hit):
                answers[i] = hit
                out.from_cache += 1
            else:
                todo.setdefault(key, []).append(i)
        if not todo:
            return out
        bar = tqdm(total=len(todo), desc=desc, disable=not progress, leave=False)

        def ask(item):
            key, ix = item
            return self._ask_and_store(key, prompts[ix[0]], parses)

        # on Ctrl-C (or any error) the queued prompts are dropped, not asked: only the
        # requests in flight (at most ``concurrency``) finish, in their threads
        replies = as_they_finish(ask, todo.items(), workers=self.endpoint.concurrency)
        try:
            for (_, ix), result in replies:
                try:
                    answer, ok = result()
                except RuntimeError as exc:
                    for i in ix:
                        out.failed[i] = str(exc)
                else:
                    for i in ix:
                        if ok:
                            answers[i] = answer
                        else:
                            out.unparsed[i] = answer
                out.requested += 1
                bar.update(1)
        finally:
            replies.close()
            bar.close()
        return out


def _read_reply(resp, deadline: float, cap: int) -> bytes:
    """The reply's bytes, read as they come: a timeout once ``deadline`` (monotonic) has
    passed however slowly they come, an error (not retried) beyond ``cap`` bytes."""
    parts: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the reply took longer than the timeout")
        chunk = resp.read1(65536)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        if size > cap:
            raise _TooLong(f"the reply exceeds max_reply_bytes = {cap}")
        parts.append(chunk)


class _TooLong(Exception):
    """A reply longer than the endpoint's ``max_reply_bytes``."""


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
