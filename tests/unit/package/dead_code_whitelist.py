"""Names used only from outside llama4spec, which vulture cannot see (pyproject.toml [tool.vulture]
lists this file among its paths). Vulture reads this file; nothing imports or runs it. One line per
name, ``_.name`` with the reason; test_dead_code.py checks that vulture would report each of them."""

_.completer  # argcomplete reads the completer of each argparse action (cli/complete.py)
_.post_processor  # a tokenizers.Tokenizer property: set in tiny/weights.py, read by the tokenizers library
_.pre_tokenizer  # likewise
_.MAX_NUM_TOKENS  # engine/cpu_fix.py: vLLM's kernel dispatcher passes the kernel's launch constant by name
_._expand_kernel_impl  # engine/cpu_fix.py sets it on vLLM's cpu_triton_utils, which vLLM's CPU platform reads
_.caption  # analysis/page.py's Table: read by the report.html template (Jinja2), not by Python
_.numeric  # likewise
_.provenance  # analysis/page.py's RunPage: read by the report.html template
_.TOKEN_BANDS  # tiny/bands.py: the token bands of tiny_bands.jsonl's prompts, which runbooks/tiny_cpu_bands.yaml sweeps (tests/unit/tiny/test_tiny_bands.py checks them)
_.prompt_items  # tiny/contrast.py: the generator of the shipped conf/dataset/prompts/tiny_contrast.jsonl (tests/unit/tiny/test_contrast.py checks the file against it)
_.reports  # analysis/page.py RunPage.reports: read by the page template (templates/report.html.j2: page.reports)
_.mean_ttft_ms  # likewise
# record models (records.base): a field the tool validates when it writes and reads the record (the
# bound is the point) but reads back by no attribute; the published schema and a user read it
_.predicted_speedup  # sweep/sweep_records.py Row: sweep.json's fitted model speedup
_.best_lookahead  # sweep/sweep_records.py AtConcurrency: sweep.json's recommendation at a concurrency
_.best_decided  # likewise
_.input_bands  # sweep/sweep_records.py SweepRecord: sweep.json's input-length bands and where speculation stops paying
_.speculation  # likewise
_.baseline_output_throughput  # likewise
_.without_speculation  # likewise
_._hits_within_queries  # records/bench.py PrefixCacheCounts: a pydantic validator, pydantic calls it
_._within_lookahead  # a pydantic validator (sweep_records Row, breakeven records Curve, records/bench.py): pydantic calls it
_.fit_p  # lossless/records.py Control: the control's fit p-values in lossless.json
_.tail_bound  # likewise
_.schema_  # lossless/records.py LosslessFile: the record's schema name (alias "schema")
_.level_per_test  # lossless/records.py LosslessFile: the Bonferroni level of each test
_.self_check  # breakeven/records.py BreakevenRecord: the self-check sentence in breakeven.json
_.extra_runs  # sweep/records.py SettleRecord: settle.json's further runs
_.resumed  # records/status.py: a field of status.json's model (its published schema), checked where read
_.rebuilt  # likewise
_.merged_from  # likewise
_.submit_seconds  # likewise
_.slurm_job_id  # records/job.py: a field of job.json's model (its published schema), checked where read
_.acceptance_rate_per_drafted_position  # records/bench.py Acceptance: a field of a record's model, validated by name when the record is read
_.run_number  # records/points.py Point: likewise (summary.json, read by vLLM's sweep plotters)
_.price_per_million  # capacity/records.py DemandSetting: a field of capacity.json's model, validated by name
_.devices_interval  # likewise
_.predicted_wall_s  # records/status.py CostAgainst: a field of status.json's model (its published schema), checked where read
_.measured_wall_s  # likewise
