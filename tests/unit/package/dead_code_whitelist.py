"""Names used only from outside llama4spec, which vulture cannot see (pyproject.toml [tool.vulture]
lists this file among its paths). Vulture reads this file; nothing imports or runs it. One line per
name, ``_.name`` with the reason; test_dead_code.py checks that vulture would report each of them."""

_.completer  # argcomplete reads the completer of each argparse action (cli/complete.py)
_.post_processor  # a tokenizers.Tokenizer property: set in tiny/build.py, read by the tokenizers library
_.pre_tokenizer  # likewise
_.MAX_NUM_TOKENS  # engine/cpu_fix.py: vLLM's kernel dispatcher passes the kernel's launch constant by name
_._expand_kernel_impl  # engine/cpu_fix.py sets it on vLLM's cpu_triton_utils, which vLLM's CPU platform reads
_.caption  # analysis/page.py's Table: read by the report.html template (Jinja2), not by Python
_.numeric  # likewise
_.provenance  # analysis/page.py's RunPage: read by the report.html template
_.prompt_items  # tiny/contrast.py: the generator of the shipped conf/dataset/prompts/tiny_contrast.jsonl (tests/unit/tiny/test_contrast.py checks the file against it)
_.reports  # analysis/page.py RunPage.reports: read by the page template (templates/report.html.j2: page.reports)
_.mean_ttft_ms  # likewise
_.acceptance_rate_per_drafted_position  # records/bench.py Acceptance: a field of a record's model, validated by name when the record is read
_.run_number  # records/points.py Point: likewise (summary.json, read by vLLM's sweep plotters)
_.output_tps  # runbook/capacity/records.py Setting: likewise (capacity.json)
_._within_lookahead  # records/bench.py: a pydantic model_validator, which pydantic calls when a record is validated
