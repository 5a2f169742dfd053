"""Per-request acceptance: vLLM's benchmark, run by our worker, keeps each response's
``metrics.speculative_decoding`` block (real vLLM benchmark code, no engine: a stand-in server
streams completions the way vLLM's server does with ``--per-request-spec-decode-metrics``), and
the rows read back add up as vLLM's ``/metrics`` counts."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest

from llama4spec.results import requests as per_request
from llama4spec.results.acceptance import AcceptanceCounters
from llama4spec.serving.benchmark import prompt_categories, read_requests
from llama4spec.serving.bench_runner import BenchRunner
from llama4spec.serving.vllm_bench import OWN_BACKEND, own_argv, requests_path

HISTOGRAMS = {"w5 w6": [1, 0, 2, 3], "w9 w10": [4, 1, 0, 0]}  # prompt -> steps that accepted 0..3 drafts


def _spec(histogram: list[int]) -> dict:
    accepted = sum(j * n for j, n in enumerate(histogram))
    return {"mean_acceptance_length": 1 + accepted / sum(histogram), "draft_acceptance_rate": 0.5,
            "acceptance_histogram": histogram, "num_spec_steps": sum(histogram),
            "num_accepted_draft_tokens": accepted, "num_draft_tokens": 3 * sum(histogram), "num_spec_tokens": 3}


class _Streams(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = b"# no counters\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        events = [{"choices": [{"text": f" w{i}", "index": 0}]} for i in range(4)]
        events.append({"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 4},
                       "metrics": {"speculative_decoding": _spec(HISTOGRAMS[request["prompt"]])}})
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def streaming_url():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Streams)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_the_worker_keeps_each_requests_speculative_block_beside_the_result(
        tmp_path: Path, tiny_dir: Path, streaming_url: str) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p, "category": c}) + "\n"
                               for p, c in zip(HISTOGRAMS, ("high", "low"))))
    result = tmp_path / "run=0.json"
    flags = ["--backend", "openai", "--base-url", streaming_url, "--endpoint", "/v1/completions",
             "--model", str(tiny_dir / "target"), "--dataset-name", "custom", "--dataset-path", str(prompts),
             "--skip-chat-template", "--output-len", "4", "--num-prompts", "2", "--max-concurrency", "1",
             "--save-result", "--result-dir", str(tmp_path), "--result-filename", result.name, "--disable-tqdm"]
    with BenchRunner() as runner:
        code = runner.run(flags, {}, tmp_path / "bench.log")
    assert code == 0, (tmp_path / "bench.log").read_text()[-3000:]
    assert json.loads(result.read_text())["completed"] == 2
    written = json.loads(requests_path(result).read_text())
    assert requests_path(result).name == "run=0.requests.json"
    assert written["request_id_prefix"].startswith("llama4spec-")
    rows = read_requests(None, flags, result)
    assert [r.index for r in rows] == [0, 1]
    by_category = {r.category: r for r in rows}
    assert set(by_category) == {"high", "low"}
    high = by_category["high"]
    assert (high.drafts, high.draft_tokens, high.accepted, high.accepted_per_pos) == (6, 18, 13, [5, 5, 3])
    assert high.acceptance_length == pytest.approx(1 + 13 / 6)
    assert all(r.ok and r.output_tokens == 4 and r.ttft_ms > 0 and r.tpot_ms >= 0 and r.queue_ms >= 0 for r in rows)
    assert sorted(r.arrival_ms for r in rows)[0] == 0.0
    assert per_request.sums(rows) == AcceptanceCounters(11, 33, 14, [6, 5, 3])


def test_our_backend_replaces_openai_and_request_ids_get_a_known_prefix() -> None:
    assert own_argv(["--backend", "openai", "--x"], "ab12") == [
        "--backend", OWN_BACKEND, "--x", "--request-id-prefix", "llama4spec-ab12-"]
    assert own_argv(["--backend=openai-chat"], "ab12")[0] == "--backend=openai-chat"  # another backend is kept
    assert own_argv([], "x")[:2] == ["--backend", OWN_BACKEND]
    assert own_argv(["--request-id-prefix", "mine-"], "x") == ["--request-id-prefix", "mine-", "--backend", OWN_BACKEND]


def _item(rid: str, histogram: list[int] | None, ok: bool = True) -> dict:
    return {"id": rid, "ok": ok, "ttft_s": 0.01, "latency_s": 0.05, "output_tokens": 5, "queue_s": 0.002,
            "start_s": 100.0 + (int(rid[-1]) if rid[-1].isdigit() else 0),
            "prompt_sha256": hashlib.sha256(rid.encode()).hexdigest(), "spec": _spec(histogram) if histogram else None}


def test_per_request_sums_against_the_metrics_delta_equal_or_the_difference_reported() -> None:
    data = {"request_id_prefix": "p-", "requests": [_item("p-1", [0, 0, 1, 1]), _item("p-0", [1, 1, 0, 0])]}
    rows = per_request.rows_of(data, category="c")
    assert [r.id for r in rows] == ["p-0", "p-1"] and {r.category for r in rows} == {"c"}
    assert rows[0].tpot_ms == pytest.approx(10.0) and rows[0].e2e_ms == pytest.approx(50.0)
    assert [r.arrival_ms for r in rows] == [pytest.approx(0.0), pytest.approx(1000.0)]
    delta = AcceptanceCounters(4, 12, 6, [3, 2, 1])
    assert per_request.check(rows, delta)["equal"] is True
    failed = per_request.rows_of({"requests": [*data["requests"], _item("p-2", None, ok=False)]})
    more = AcceptanceCounters(5, 15, 8, [4, 3, 1])
    report = per_request.check(failed, more)
    assert report["equal"] is False and report["failed"] == 1
    assert report["difference"] == {"num_drafts": 1, "num_draft_tokens": 3, "num_accepted_tokens": 2,
                                    "accepted_per_pos": [1, 1, 0]}
    assert per_request.check([], delta) is None and per_request.check(rows, None) is None


@pytest.mark.parametrize("spec", [
    {"acceptance_histogram": [1, 2], "num_spec_steps": 4, "num_accepted_draft_tokens": 2, "num_draft_tokens": 3},
    {"acceptance_histogram": "x", "num_spec_steps": 1, "num_accepted_draft_tokens": 0, "num_draft_tokens": 1},
    {"acceptance_histogram": [-1, 2], "num_spec_steps": 1, "num_accepted_draft_tokens": 2, "num_draft_tokens": 2},
    {"acceptance_histogram": [0] * 100, "num_spec_steps": 0, "num_accepted_draft_tokens": 0, "num_draft_tokens": 0},
    "not a block", None,
])
def test_a_malformed_block_leaves_a_request_without_counters(spec) -> None:
    rows = per_request.rows_of({"requests": [{**_item("a", None), "spec": spec}]})
    assert rows[0].drafts is None and rows[0].acceptance_length is None


@pytest.mark.parametrize("data", [None, [], {"requests": "x"}, {"requests": [{"id": 3, "ok": True}]},
                                  {"requests": [{"id": "x" * 500, "ok": True}]}, {"requests": [{"id": "a", "ok": "yes"}]}])
def test_a_foreign_requests_file_gives_no_rows(data) -> None:
    assert not per_request.rows_of(data)


def test_rows_survive_the_record_and_the_csv_has_one_line_a_request() -> None:
    rows = per_request.rows_of({"request_id_prefix": "p-", "requests": [_item("p-0", [1, 1, 0, 0])]}, category="c")
    from llama4spec.results.bench import BenchRecord

    again = BenchRecord.from_dict({"kind": "llama4spec.bench", "label": "x", "requests": [r.to_dict() for r in rows]}).requests
    assert again == rows
    text = per_request.to_csv([(0, rows), (1, rows)])
    lines = text.splitlines()
    assert lines[0].split(",") == list(per_request.COLUMNS) and len(lines) == 3
    assert lines[2].startswith("1,p-0,0,c,True,5,2,6,1,1.500,1 0 0,")


def test_categories_come_from_the_prompt_file_only_when_prompts_are_sent_as_written(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "a", "category": "x"}\nnot json\n{"prompt": "b"}\n')
    flags = ["--dataset-name", "custom", "--dataset-path", str(path)]
    assert prompt_categories(flags + ["--skip-chat-template"]) == {hashlib.sha256(b"a").hexdigest(): "x"}
    assert prompt_categories(flags) == {}
    assert prompt_categories(["--dataset-name", "custom", "--dataset-path", str(tmp_path), "--skip-chat-template"]) == {}
