"""The structured config: dataclasses registered in Hydra's ConfigStore.

Keys that become vLLM arguments carry vLLM's own names, so what a user knows from
``vllm serve --help`` transfers unchanged. YAML files under ``conf/`` fill these in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


@dataclass
class TargetConfig:
    name: str = MISSING
    model: str = MISSING  # hub id or local directory
    tokenizer: Optional[str] = None
    revision: Optional[str] = None  # hub commit, branch or tag to pin (vLLM's --revision); None: main
    dtype: str = "auto"
    quantization: Optional[str] = None
    trust_remote_code: bool = False  # only when asked for: runs the model repository's own code


@dataclass
class DraftConfig:
    name: str = "none"
    method: Optional[str] = None  # a method of config.methods.RUN, or None (no speculation)
    model: Optional[str] = None  # hub id or local directory (eagle, eagle3, draft_model)
    revision: Optional[str] = None  # hub commit, branch or tag of the draft (speculative config "revision")
    max_model_len: Optional[int] = None
    prompt_lookup_min: Optional[int] = None  # ngram, ngram_gpu
    prompt_lookup_max: Optional[int] = None  # ngram, ngram_gpu
    # Speculative tokens per running batch size: [[first, last, k], ...] inclusive ranges (vLLM's
    # num_speculative_tokens_per_batch_size); `lookahead` stays the maximum.
    lookahead_schedule: Optional[list[list[int]]] = None
    # vLLM's draft_sample_method: greedy (the draft's argmax, treated as one-hot when verifying) or
    # probabilistic (sampled from the draft's distribution, accepted with min(1, p/q)); None: vLLM's
    # default (greedy). Model drafts only (eagle, eagle3, draft_model).
    sample_method: Optional[str] = None
    # vLLM's synthetic rejection sampling (rejection_sample_method: synthetic): draft tokens are
    # accepted at a set rate whatever the draft proposes, so an engine's cost of speculating is
    # measured at any acceptance. At most one of: the mean acceptance length, in [1, lookahead + 1],
    # or per-position unconditional rates (lookahead of them, in [0, 1], non-increasing).
    synthetic_acceptance_length: Optional[float] = None
    synthetic_acceptance_rates: Optional[list[float]] = None
    # vLLM's disable_eagle_block_drop (EAGLE-family methods only): true keeps the trailing prefix-cache
    # block that vLLM otherwise drops from each cache hit under EAGLE. None: vLLM's default (dropped).
    disable_eagle_block_drop: Optional[bool] = None


@dataclass
class ParallelConfig:
    name: str = "tp1"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    draft_tensor_parallel_size: Optional[int] = None  # None: vLLM's default
    distributed_executor_backend: Optional[str] = None  # mp | ray | None
    nnodes: int = 1
    data_parallel_size: int = 1  # vLLM disables a lookahead schedule with data parallelism


@dataclass
class MemoryConfig:
    name: str = "default"
    gpu_memory_utilization: Optional[float] = None
    max_model_len: Optional[int] = None
    max_num_seqs: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    # CPU build only: KV cache space in GiB (VLLM_CPU_KVCACHE_SPACE).
    cpu_kvcache_space_gib: Optional[int] = None


@dataclass
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    enable_prefix_caching: Optional[bool] = None  # None: vLLM's default
    # vLLM's async scheduling. None: vLLM decides (on; off for the methods config.methods marks), except
    # that a comparison pins it off on both sides where one side's method forces it off.
    async_scheduling: Optional[bool] = None
    api_key_env: Optional[str] = None  # name of the env var that holds the API key
    served_model_name: Optional[str] = None
    extra_args: list[str] = field(default_factory=list)
    health_timeout_s: float = 900.0
    # The nice value (0-19) the engine's processes run at once the server answers (its engine core
    # and workers, every thread; the API server and the load generator keep theirs). None: unchanged.
    # On a machine with fewer cores than busy processes (the CPU build: the engine core and its
    # worker poll their queues without sleeping) the HTTP front end is otherwise starved into stalls
    # of seconds (docs/capacity.md). Single-node servers started here.
    engine_nice: Optional[int] = None


@dataclass
class BenchConfig:
    dataset_name: str = "hf"  # vllm bench serve --dataset-name
    dataset_path: Optional[str] = "philschmid/mt-bench"
    max_concurrency: int = 16
    num_prompts: int = 80
    # At least this many prompts per client slot: the benchmark sends
    # max(num_prompts, prompts_per_concurrency x max_concurrency), so a high-concurrency point is
    # not mostly ramp-up and ramp-down. None: num_prompts as given.
    prompts_per_concurrency: Optional[int] = None
    output_len: Optional[int] = None
    input_len: Optional[int] = None  # random dataset
    # A prompt file's (dataset_name=custom) prompts of this many tokens only, by the target's tokenizer:
    # "LOW-HIGH" (inclusive), one input-length band of a sweep's ``bands:``. None: every prompt.
    input_band: Optional[str] = None
    # dataset_name=speed_bench: the SPEED-Bench subset (vLLM's --speed-bench-dataset-subset: qualitative,
    # throughput_1k ... throughput_32k, a file of the directory NVIDIA's script prepares). None: vLLM's default.
    speed_bench_subset: Optional[str] = None
    seed: int = 0
    temperature: float = 0.0
    request_rate: str = "inf"
    # One prompt category per point (a client-side sweep axis): the built-in prompts' category
    # file (dataset=builtin), or vLLM's --spec-bench-category (dataset_name=spec_bench). None: all.
    category: Optional[str] = None
    # vLLM's --burstiness: the gamma shape of request arrivals at a finite request_rate (1: Poisson;
    # below 1 burstier, above 1 more even). None: vLLM's default (1).
    burstiness: Optional[float] = None
    # vLLM's prefix_repetition dataset (dataset_name: prefix_repetition): num_prefixes prefixes of
    # prefix_len tokens, each prompt one of them + suffix_len tokens of its own; the prompts of a
    # prefix share it in the prefix cache. None: vLLM's default (256, 256, 10).
    prefix_repetition_prefix_len: Optional[int] = None
    prefix_repetition_suffix_len: Optional[int] = None
    prefix_repetition_num_prefixes: Optional[int] = None


@dataclass
class SloConfig:
    """A latency service-level objective: a request is good when every given threshold holds
    (vLLM's --goodput, DistServe's joint definition), and the SLO holds when at least
    ``attainment`` of the requests sent are good (a failed request is a miss)."""

    name: str = "none"
    ttft_ms: Optional[float] = None  # time to first token
    tpot_ms: Optional[float] = None  # time per output token after the first
    e2el_ms: Optional[float] = None  # end-to-end latency
    attainment: float = 0.95
    # Thresholds relative to a bench step's measured medians, resolved when that step has run:
    # threshold = multiplier x the step's median (e.g. ttft: 3.0, tpot: 1.5).
    relative_to: Optional[str] = None
    ttft: Optional[float] = None
    tpot: Optional[float] = None
    e2el: Optional[float] = None

    def thresholds(self) -> dict[str, float]:
        """The absolute thresholds given, in ms, by vLLM's --goodput names (ttft, tpot, e2el)."""
        given = {"ttft": self.ttft_ms, "tpot": self.tpot_ms, "e2el": self.e2el_ms}
        return {m: v for m, v in given.items() if v is not None}

    def multipliers(self) -> dict[str, float]:
        """The multipliers of ``relative_to``'s medians given, by vLLM's --goodput names."""
        given = {"ttft": self.ttft, "tpot": self.tpot, "e2el": self.e2el}
        return {m: v for m, v in given.items() if v is not None}


@dataclass
class DatasetConfig:
    name: str = "builtin"  # builtin | mtbench | jsonl
    path: Optional[str] = None  # jsonl file, or hub dataset id for mtbench
    num_prompts: int = 4
    chat_template: bool = False
    category: Optional[str] = None  # only the prompts of this category (mt-bench's, a JSONL line's "category")


@dataclass
class GenerationConfig:
    max_tokens: int = 64
    temperature: float = 0.0
    ignore_eos: bool = False
    seed: int = 0


@dataclass
class OfflineConfig:
    baseline: bool = False  # also run the same prompts without a draft and compare
    by_category: bool = False  # each prompt category as its own batch, with its own acceptance counters
    # Every prompt at each of these temperatures, all in one batch of one engine (per-request seeds),
    # acceptance per temperature from vLLM's per-request counters. Empty: generation.temperature only.
    temperatures: list[float] = field(default_factory=list)


@dataclass
class NoisePrior:
    """A machine class's recorded noise, the fallback where neither a profile (noise.json) nor the
    sweep's own server starts estimate it: log-sds of output throughput with their df and source.
    Unset (between_sd None): none recorded, as on every GPU config (calibrate: `llama4spec calibrate`)."""

    between_sd: Optional[float] = None  # between server starts
    between_df: Optional[float] = None
    within_sd: Optional[float] = None  # between runs against one start
    within_df: Optional[float] = None
    source: Optional[str] = None  # the measurement it came from


@dataclass
class CostEstimate:
    """What a server start and a benchmark run take on this machine class, an estimate until a noise
    profile (``llama4spec calibrate``'s noise.json) measures them: the dry run prices with it."""

    start_s: Optional[float] = None  # a server start, until it answers /health
    run_s: Optional[float] = None  # a counted benchmark run, its share of warm-up included


@dataclass
class HardwareConfig:
    """One accelerator type, for memory planning (memory per device as the runtime reports it)."""

    name: str = "cpu"
    device: str = "cpu"  # cuda | cpu
    memory_gib: Optional[float] = None  # per device; None on cpu: read NUMA node 0's memory
    runtime_overhead_gib: float = 1.5  # context, communication buffers, graphs: outside weights and KV
    devices_per_node: int = 1
    fp8: bool = False  # native FP8 support (weights and KV cache)
    noise: NoisePrior = field(default_factory=NoisePrior)  # the recorded noise, if any
    cost: CostEstimate = field(default_factory=CostEstimate)  # what a start and a run take, estimated


@dataclass
class HostConfig:
    """One machine of a multi-node run."""

    address: str = MISSING  # the address the other nodes reach it at (VLLM_HOST_IP; the master for host 0)
    interface: Optional[str] = None  # its network interface (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME)
    ssh: Optional[str] = None  # ssh destination ([user@]name) when it differs from the address
    env: dict[str, str] = field(default_factory=dict)  # extra environment on this host only


@dataclass
class SlurmConfig:
    """Server groups as Slurm jobs (``llama4spec run --launcher slurm``, or ``submit: true`` in a
    cluster preset a runbook selects): one job per group, arrays per resource shape."""

    submit: bool = False  # run the runbook's server groups as Slurm jobs
    partition: Optional[str] = None  # None: the cluster's default partition
    account: Optional[str] = None
    time_min: int = 120  # each job's time limit in minutes
    cpus_per_device: Optional[int] = None  # GPU jobs: CPUs per GPU (None: Slurm's default)
    mem_gb: Optional[int] = None  # memory per node (None: Slurm's default)
    additional: dict[str, str] = field(default_factory=dict)  # more sbatch options, e.g. {qos: high, constraint: h100}


@dataclass
class ClusterConfig:
    """The hosts a multi-node layout (parallel.nnodes > 1) runs on; hosts[0] is the leader, here."""

    name: str = "local"
    hosts: list[HostConfig] = field(default_factory=list)
    master_port: int = 29500
    launcher: str = "ssh"  # ssh | prefix
    prefix: list[str] = field(default_factory=list)  # launcher=prefix: e.g. [srun, -N1, -n1, -w, "{host}"]
    ssh_options: list[str] = field(default_factory=list)
    python: Optional[str] = None  # the interpreter on every host (None: the one running llama4spec)
    hosts_from: Optional[str] = None  # slurm: the hosts are the job's nodes (scontrol show hostnames), leader first
    slurm: SlurmConfig = field(default_factory=SlurmConfig)


@dataclass
class Config:
    target: TargetConfig = field(default_factory=TargetConfig)
    draft: DraftConfig = field(default_factory=DraftConfig)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    lookahead: int = 3  # number of speculative tokens
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    bench: BenchConfig = field(default_factory=BenchConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    hardware: HardwareConfig = field(default_factory=HardwareConfig)
    slo: SloConfig = field(default_factory=SloConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    offline: OfflineConfig = field(default_factory=OfflineConfig)
    env: dict[str, str] = field(default_factory=dict)


def register() -> None:
    """The schema in Hydra's ConfigStore, once (storing it builds the structured config: slow)."""
    store = ConfigStore.instance()
    if "llama4spec_schema.yaml" not in store.repo:
        store.store(name="llama4spec_schema", node=Config)
