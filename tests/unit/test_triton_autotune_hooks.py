"""@triton.autotune's options at eager tuning, on the CPU: ``prune_configs_by`` (early_config_prune, perf_model,
top_k), ``reset_to_zero`` / ``restore_value``, the autotuner's ``pre_hook`` / ``post_hook``, the refusals, and the
choice kept on disk (its record's round trip and validation).

No GPU here: the launches are Python stand-ins that do to CPU tensors what the kernel does, and the CUDA events
a counter. The pure logic (pruning, the hooks' order, the disk record) needs no Triton; the declarations do
(skipped without it). tests/gpu/test_triton_autotune_hooks_gpu.py runs the same on real kernels."""

import threading
import types

import pytest
import torch

import trt_kernels as ttk
from kernels import unique
from trt_kernels import cache_store, registry
from trt_kernels.eager import cuda_kernel as ck
from trt_kernels.sources.triton_source import AutotuneOptions, TritonConfig, TuningCall

try:
    import triton
    import triton.language as tl
except ImportError:  # the declarations' tests skip; the pure logic runs
    triton = None

ARCH = "sm_90"
needs_triton = pytest.mark.skipif(triton is None, reason="triton is not installed (pip install 'trt-kernels[triton]')")


class Cfg:
    """A stand-in for triton.Config (what the autotuner's options read of one)."""

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs, self.num_warps, self.num_stages = dict(kwargs), num_warps, num_stages
        self.num_ctas, self.maxnreg, self.pre_hook, self.ir_override = 1, None, None, None

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_ctas": 1, "num_stages": self.num_stages}


class Clock:
    """CUDA events stand-in: each record() ticks; a launcher may add ``cost`` ms to its own span."""

    now = 0.0

    def __init__(self):
        self.at = None

    def record(self):
        self.at = Clock.now

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return end.at - self.at


def timed(cost_ms, f):
    """A launcher that takes ``cost_ms`` by the stand-in clock."""

    def launch(*args):
        Clock.now += cost_ms
        return f(*args)

    return launch


CONFIGS = [Cfg({"BLOCK": 64}, 2), Cfg({"BLOCK": 128}), Cfg({"BLOCK": 256}), Cfg({"BLOCK": 512}, 8)]


# ---------------- prune_configs_by ----------------


def test_early_config_prune_gets_the_configs_named_args_and_kwargs_as_triton_passes_them():
    seen = []

    def prune(configs, named_args, **kwargs):
        seen.append((configs, named_args, kwargs))
        return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]

    opts = AutotuneOptions(tuple(CONFIGS), early_config_prune=prune)
    assert opts.prune("ns::op", {"x_ptr": "x", "n": 200}, {"EVEN": False}) == [0, 1]
    ((configs, named, kwargs),) = seen
    assert configs == CONFIGS and configs[0] is CONFIGS[0]  # the autotuner's own Config objects, all of them
    assert named == {"x_ptr": "x", "n": 200} and kwargs == {"EVEN": False}


def test_a_pruned_config_may_be_an_equal_copy_but_not_a_new_one():
    opts = AutotuneOptions(tuple(CONFIGS), early_config_prune=lambda cs, a, **k: [Cfg({"BLOCK": 256}), cs[0], cs[0]])
    assert opts.prune("ns::op", {}, {}) == [2, 0]  # matched by value, duplicates once, order kept
    new = AutotuneOptions(tuple(CONFIGS), early_config_prune=lambda cs, a, **k: [Cfg({"BLOCK": 32})])
    with pytest.raises(ttk.SpecError, match=r"returned a config that is none of the autotuner's \(\{'BLOCK': 32\}.*"
                                            r"each is a TensorRT tactic"):
        new.prune("ns::op", {}, {})
    empty = AutotuneOptions(tuple(CONFIGS), early_config_prune=lambda cs, a, **k: [])
    with pytest.raises(ttk.SpecError, match=r"early_config_prune'\] returned no config"):
        empty.prune("ns::op", {}, {})
    with pytest.raises(ttk.SpecError, match=r"returned None, not a list of configs"):
        AutotuneOptions(tuple(CONFIGS), early_config_prune=lambda cs, a, **k: None).prune("ns::op", {}, {})


def test_perf_model_ranks_the_configs_and_top_k_keeps_the_best():
    calls = []

    def model(n, BLOCK, num_warps, num_stages, num_ctas, **kw):
        calls.append((n, BLOCK, num_warps, kw))
        return abs(BLOCK - 200)  # 256 best, then 128, 64, 512

    assert AutotuneOptions(tuple(CONFIGS), perf_model=model, top_k=2).prune("o", {"n": 7}, {"EVEN": True}) == [2, 1]
    assert calls[0] == (7, 64, 2, {"EVEN": True})  # named args, kwargs and the config's all_kwargs()
    # a fraction is of the configs left after early_config_prune, at least one (Triton 3.9)
    frac = AutotuneOptions(tuple(CONFIGS), perf_model=model, top_k=0.5,
                           early_config_prune=lambda cs, a, **k: cs[:3])
    assert frac.prune("o", {"n": 1}, {}) == [2]
    assert AutotuneOptions(tuple(CONFIGS), perf_model=model, top_k=0.1).prune("o", {"n": 1}, {}) == [2]
    # nothing to rank when no more than top_k are left: the model is not asked
    calls.clear()
    assert AutotuneOptions(tuple(CONFIGS), perf_model=model, top_k=4).prune("o", {"n": 1}, {}) == [0, 1, 2, 3]
    assert not calls


def test_a_perf_model_that_wants_an_output_says_outputs_are_not_given():
    def model(x_ptr, out_ptr, **kw):
        return 0.0

    opts = AutotuneOptions(tuple(CONFIGS), perf_model=model, top_k=1, outputs=("out_ptr",))
    with pytest.raises(ttk.SpecError, match=r"perf_model'\] cannot take a call's arguments \(missing a required "
                                            r"argument: 'out_ptr'.*outputs \(out_ptr\) are allocated by each launch"):
        opts.prune("ns::op", {"x_ptr": 1}, {})


def test_a_pruning_function_reading_an_output_is_told_why():
    opts = AutotuneOptions(tuple(CONFIGS), early_config_prune=lambda cs, a, **k: [c for c in cs if a["out_ptr"]],
                           outputs=("out_ptr",))
    with pytest.raises(ttk.SpecError, match=r"early_config_prune'\] read 'out_ptr', which a trt_kernels call does "
                                            r"not give it: an output, which each launch allocates"):
        opts.prune("ns::op", {"x_ptr": 1}, {})
    # a KeyError for something it was given is the function's own: passed on as it is
    opts = AutotuneOptions(tuple(CONFIGS), early_config_prune=lambda cs, a, **k: {}["x_ptr"])
    with pytest.raises(KeyError):
        opts.prune("ns::op", {"x_ptr": 1}, {})


# ---------------- reset_to_zero, restore_value and hooks around the timed launches ----------------


def _call(opts, named, configs=None):
    configs = configs or [TritonConfig({"BLOCK": c.kwargs["BLOCK"]}, c.num_warps, c.num_stages) for c in CONFIGS]
    return TuningCall(opts, "ns::op", named, {}, configs)


def test_reset_to_zero_before_each_timed_launch_and_once_after_timing():
    x, acc = torch.randn(100), torch.full((), 5.0)
    seen = []

    def accumulate(x, acc):
        seen.append(acc.item())  # what each launch starts from
        acc.add_(x.sum())

    call = _call(AutotuneOptions(tuple(CONFIGS), reset_to_zero=("acc_ptr",)), {"x_ptr": x, "acc_ptr": acc, "n": 100})
    ck._tune([timed(1.0, accumulate)] * 4, (x, acc), reps=3, before=call.before, after=call.after, event=Clock)
    assert seen == [0.0] * 16  # warm-up + 3 timed, per config: each from zero
    torch.testing.assert_close(acc, x.sum())  # the last timed launch's result: nothing restores it
    call.reset_only(2)
    assert acc.item() == 0.0  # Triton's pre_hook(reset_only=True): the call's own launch starts from zero


def test_restore_value_leaves_the_callers_tensor_as_it_was():
    x, y = torch.randn(100), torch.randn(100)
    y0 = y.clone()
    seen = []

    def add_into(x, y):
        seen.append(y.clone())
        y.add_(x)

    call = _call(AutotuneOptions(tuple(CONFIGS), restore_value=("y_ptr",)), {"x_ptr": x, "y_ptr": y})
    ck._tune([timed(1.0, add_into)] * 4, (x, y), reps=2, before=call.before, after=call.after, event=Clock)
    assert all(torch.equal(s, y0) for s in seen) and torch.equal(y, y0)
    call.reset_only(0)  # restore_value has nothing to do after timing
    assert torch.equal(y, y0)


def test_a_launch_that_raises_is_restored_and_the_error_passes():
    x, y = torch.randn(10), torch.randn(10)
    y0 = y.clone()

    def half_done(x, y):
        y.add_(x)
        raise RuntimeError("launch failed")

    call = _call(AutotuneOptions(tuple(CONFIGS), restore_value=("y_ptr",)), {"x_ptr": x, "y_ptr": y})
    with pytest.raises(RuntimeError, match="launch failed"):
        ck._tune([half_done], (x, y), before=call.before, after=call.after, event=Clock)
    assert torch.equal(y, y0)


def test_the_autotuners_hooks_replace_the_defaults_and_get_the_arguments_by_name():
    events = []
    pre = lambda args, reset_only=False: events.append(("pre", args["BLOCK"], args["num_warps"], reset_only))  # noqa
    post = lambda args, exception: events.append(("post", args["BLOCK"], exception))  # noqa: E731
    x, acc = torch.randn(8), torch.full((), 3.0)
    opts = AutotuneOptions(tuple(CONFIGS), reset_to_zero=("acc_ptr",), pre_hook=pre, post_hook=post)
    call = _call(opts, {"x_ptr": x, "acc_ptr": acc, "n": 8})
    assert set(call.args[1]) == {"x_ptr", "acc_ptr", "n", "BLOCK", "num_warps", "num_ctas", "num_stages"}
    times = ck._tune([timed(3.0, lambda *a: None), timed(1.0, lambda *a: None)], (x, acc), reps=1,
                     before=call.before, after=call.after, event=Clock)
    assert times == [3.0, 1.0]
    call.reset_only(1)
    per = lambda b, w: [("pre", b, w, False), ("post", b, None)] * 2  # noqa: E731 - warm-up and one timed
    assert events == per(64, 2) + per(128, 4) + [("pre", 128, 4, True)]
    assert acc.item() == 3.0  # the user's pre_hook replaced the default: reset_to_zero is not applied (as in Triton)
    boom = RuntimeError("boom")

    def fail(*a):
        raise boom

    events.clear()
    with pytest.raises(RuntimeError):
        ck._tune([fail], (x, acc), before=call.before, after=call.after, event=Clock)
    assert events == [("pre", 64, 2, False), ("post", 64, boom)]


def test_tune_times_each_launcher_after_a_warm_up_and_keeps_the_median():
    Clock.now = 0.0
    costs = iter([100.0, 5.0, 1.0, 9.0])  # warm-up (not timed), then three samples

    def launch():
        Clock.now += next(costs)

    assert ck._tune([launch], (), reps=3, event=Clock) == [5.0]


# ---------------- the choice on disk ----------------


def _fake_kop(op="ns::tuned", source_key="s" * 64, text="tactic 1: ...; tactic 2: ..."):
    source = types.SimpleNamespace(key=lambda: source_key, config_text=lambda: text)
    return types.SimpleNamespace(op_name=op, source=source)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRT_KERNELS_CACHE", raising=False)
    monkeypatch.delenv("TRT_KERNELS_SHARED_CACHE_DIR", raising=False)
    return tmp_path


def test_a_choice_written_is_read_back_for_the_same_tuning_only(cache):
    kop, dev = _fake_kop(), torch.device("cpu")
    rec = ck.tuning_record(kop, (1000, "torch.float32"), dev, 4, [0, 2, 3])
    assert ck.read_choice(rec) is None
    ck.write_choice(rec, 2, [3.0, 1.0, 2.0])
    (path,) = (cache / "autotune").glob("*.bin")
    assert path.name == rec[0] and path.stat().st_mode & 0o077 == 0  # private, as every entry
    assert path.read_bytes().startswith(cache_store.AUTOTUNE_MAGIC)
    assert ck.read_choice(ck.tuning_record(kop, (1000, "torch.float32"), dev, 4, [0, 2, 3])) == 2  # a new process
    for other in [ck.tuning_record(kop, (1001, "torch.float32"), dev, 4, [0, 2, 3]),  # another key
                  ck.tuning_record(kop, (1000, "torch.float32"), dev, 4, [0, 2]),  # other configs timed
                  ck.tuning_record(kop, (1000, "torch.float32"), dev, 5, [0, 2, 3]),  # more configs
                  ck.tuning_record(_fake_kop(source_key="t" * 64), (1000, "torch.float32"), dev, 4, [0, 2, 3]),
                  ck.tuning_record(_fake_kop(op="ns::other"), (1000, "torch.float32"), dev, 4, [0, 2, 3])]:
        assert other[0] != rec[0] and ck.read_choice(other) is None
    assert ck.tuning_record(kop, (torch.ones(1), "torch.float32"), dev, 4, [0, 1]) is None  # not plain data


def _forge(cache, rec, **changes):
    """Write, under ``rec``'s file name, a well-framed record that says something else."""
    name, ident = rec
    header = dict(ident, choice=0, times_ms=[1.0, 2.0])
    header.update(changes)
    cache_store.write_entry(cache / "autotune" / name, cache_store.AUTOTUNE_MAGIC, cache_store.pack_payload(header))


@pytest.mark.parametrize("changes", [dict(choice=7), dict(choice=1), dict(choice=-1), dict(choice=True),
                                     dict(choice="0"), dict(configs=9), dict(device="NVIDIA H200 sm_90"),
                                     dict(key=[1, "torch.float32"]), dict(source="u" * 64), dict(format=99)],
                         ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_a_record_that_does_not_say_exactly_this_tuning_is_ignored(cache, caplog, changes):
    rec = ck.tuning_record(_fake_kop(), (1000, "torch.float32"), torch.device("cpu"), 4, [0, 2])
    _forge(cache, rec)
    assert ck.read_choice(rec) == 0  # the forgery's base is sound
    _forge(cache, rec, **changes)
    assert ck.read_choice(rec) is None  # re-tuned (and rewritten) rather than used
    assert "autotune record" in caplog.text


def test_a_corrupt_record_is_ignored_and_clear_removes_records(cache):
    rec = ck.tuning_record(_fake_kop(), (64, "torch.float16"), torch.device("cpu"), 2, [0, 1])
    ck.write_choice(rec, 1, [2.0, 1.0])
    path = cache / "autotune" / rec[0]
    blob = bytearray(path.read_bytes())
    blob[-3] ^= 1
    path.write_bytes(bytes(blob))
    assert ck.read_choice(rec) is None
    ck.write_choice(rec, 1, [2.0, 1.0])
    assert ck.read_choice(rec) == 1
    report = cache_store.clear(cache)
    assert report.entries == 1 and not (cache / "autotune").exists()


def test_no_record_with_the_cache_off(cache, monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_CACHE", "0")
    rec = ck.tuning_record(_fake_kop(), (64, "torch.float16"), torch.device("cpu"), 2, [0, 1])
    ck.write_choice(rec, 1, [2.0, 1.0])
    assert ck.read_choice(rec) is None and not (cache / "autotune").exists()


def test_a_teams_read_only_cache_is_read_after_yours(cache, tmp_path_factory, monkeypatch):
    shared = tmp_path_factory.mktemp("team")
    shared.chmod(0o755)
    rec = ck.tuning_record(_fake_kop(), (64, "torch.float16"), torch.device("cpu"), 2, [0, 1])
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(shared))
    ck.write_choice(rec, 1, [2.0, 1.0])  # the team's cache filled by its owner
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(cache))
    monkeypatch.setenv("TRT_KERNELS_SHARED_CACHE_DIR", str(shared))
    assert ck.read_choice(rec) == 1
    assert not (cache / "autotune").exists()  # read there, nothing written


# ---------------- declared @triton.autotune kernels (the declaration compiles for sm_90 on the CPU) ----------------

if triton is not None:
    AT_CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4),
                  triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8)]

    @triton.jit
    def sum_into_kernel(x_ptr, acc_ptr, y_ptr, n, BLOCK: tl.constexpr):
        """acc += sum(x) (one atomic add per program) and y += x: two tensors written in place."""
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=0.0)
        tl.atomic_add(acc_ptr, tl.sum(x, axis=0))
        tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + x, mask=m)

    @triton.jit
    def scaled_kernel(x_ptr, n, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def declare_sum_into(**autotune):
    name = unique("tri_hooks")
    kernel = triton.autotune(configs=AT_CONFIGS, key=["n"], **autotune)(sum_into_kernel)
    ttk.triton_kernel_op(name, kernel, inputs=[ttk.InputDecl("x"), ttk.InputDecl("acc", mutated=True),
                                               ttk.InputDecl("y", mutated=True)],
                         outputs=[], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
                         grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),), arch_override=ARCH)
    return registry.get(name)


def cpu_launcher(launched):
    """What ``_varying_impl`` gets from a variant's eager kernel, on CPU tensors: the kernel's effect, with the
    config's BLOCK recorded, and BLOCK ms by the stand-in clock (so the smallest block is the fastest)."""

    def launcher(v):
        block = v.source.configs[0].constexprs["BLOCK"]

        def launch(x, acc, y):
            launched.append(block)
            Clock.now += block
            acc.add_(x.sum())
            y.add_(x)

        return launch

    return launcher


def _state(n):
    return torch.randn(n), torch.zeros(()), torch.randn(n)


@needs_triton
def test_in_place_triton_kernel_without_outputs_is_declared():
    kop = declare_sum_into(reset_to_zero=["acc_ptr"], restore_value=["y_ptr"])
    assert kop.sig.mutated == (1, 2) and kop.sig.outputs == ()
    assert kop.varies and kop.source.tuning.reset_to_zero == ("acc_ptr",)
    assert "reset_to_zero ['acc_ptr'], restore_value ['y_ptr']" in kop.source.describe()
    assert kop.sig.tactics == 4  # each config a tactic for TensorRT to time


@needs_triton
@pytest.mark.parametrize("n", [1, 1000])
def test_first_call_tunes_with_reset_and_restore_then_updates_once(cache, n):
    kop = declare_sum_into(reset_to_zero=["acc_ptr"], restore_value=["y_ptr"])
    x, acc, y = _state(n)
    acc.fill_(5.0)  # Triton zeroes a reset_to_zero tensor before the tuning call's own launch
    y0 = y.clone()
    launched = []
    full = kop.with_defaults((x, acc, y))
    variants = kop.call_variants(full)
    best = ck._choose(kop, variants, full, kop.tune_key(full), cpu_launcher(launched), event=Clock)
    assert best == 0 and launched == [64] * 11 + [128] * 11 + [256] * 11 + [512] * 11  # warm-up + 10 each
    assert acc.item() == 0.0 and torch.equal(y, y0)  # tuning left nothing behind
    cpu_launcher(launched)(variants[best])(*full)  # the call's own launch: one update
    torch.testing.assert_close(acc, x.sum())
    torch.testing.assert_close(y, y0 + x)
    # a new process reads the choice from disk: nothing timed, nothing reset
    launched.clear()
    acc.fill_(1.0)
    assert ck._choose(kop, variants, full, kop.tune_key(full), cpu_launcher(launched), event=Clock) == 0
    assert launched == [] and acc.item() == 1.0


@needs_triton
def test_the_impl_tunes_once_per_key_and_forgets_on_request(cache, monkeypatch):
    kop = declare_sum_into(restore_value=["y_ptr"])
    launched = []
    launcher = cpu_launcher(launched)
    monkeypatch.setattr(ck, "make_cuda_impl", launcher)  # each variant's eager kernel: the CPU stand-in
    monkeypatch.setattr(torch.cuda, "Event", lambda enable_timing=True: Clock())
    impl = ck._varying_impl(kop)
    x, acc, y = _state(300)
    y0 = y.clone()
    assert impl(x, acc, y) is None
    assert len(launched) == 4 * 11 + 1 and launched[-1] == 64
    torch.testing.assert_close(y, y0 + x)
    torch.testing.assert_close(acc, 45 * x.sum())  # no reset_to_zero: every launch added (as in Triton)
    launched.clear()
    impl(*_state(300))
    assert launched == [64]  # the choice, from memory
    impl(*_state(301))
    assert len(launched) == 1 + 4 * 11 + 1  # another key: tuned
    launched.clear()
    ck.forget_tuning(kop.op_name)
    impl(*_state(300))
    assert launched == [64]  # from the disk record
    monkeypatch.setenv("TRT_KERNELS_CACHE", "0")
    ck.forget_tuning()
    launched.clear()
    impl(*_state(300))
    assert len(launched) == 4 * 11 + 1  # neither memory nor disk: timed again


@needs_triton
def test_two_threads_at_a_first_call_tune_once(cache, monkeypatch):
    kop = declare_sum_into(restore_value=["y_ptr"])
    launched = []
    monkeypatch.setattr(ck, "make_cuda_impl", cpu_launcher(launched))
    monkeypatch.setattr(torch.cuda, "Event", lambda enable_timing=True: Clock())
    impl = ck._varying_impl(kop)
    threads = [threading.Thread(target=impl, args=_state(500)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(launched) == 4 * 11 + 2


@needs_triton
def test_early_config_prune_decides_what_is_timed(cache):
    returned = []

    def prune(configs, named_args, **kwargs):
        assert set(named_args) == {"x_ptr", "acc_ptr", "y_ptr", "n"} and named_args["n"] == 700
        assert named_args["x_ptr"].shape == (700,) and kwargs == {}
        keep = [c for c in configs if c.kwargs["BLOCK"] >= 128 and c.num_warps == 4]
        returned.append([c.kwargs["BLOCK"] for c in keep])
        return keep

    kop = declare_sum_into(prune_configs_by={"early_config_prune": prune}, restore_value=["y_ptr"])
    assert "prune_configs_by early_config_prune" in kop.source.describe()
    x, acc, y = _state(700)
    launched = []
    full = kop.with_defaults((x, acc, y))
    best = ck._choose(kop, kop.call_variants(full), full, kop.tune_key(full), cpu_launcher(launched), event=Clock)
    assert returned == [[128, 256]] and best == 1
    assert sorted(set(launched)) == [128, 256]  # the pruned configs were never launched


@needs_triton
def test_one_config_left_is_used_untimed_and_perf_model_ranks(cache):
    kop = declare_sum_into(prune_configs_by={"early_config_prune": lambda cs, a, **k: [cs[3]]},
                           reset_to_zero=["acc_ptr"])
    x, acc, y = _state(10)
    acc.fill_(2.0)
    launched = []
    full = kop.with_defaults((x, acc, y))
    assert ck._choose(kop, kop.call_variants(full), full, kop.tune_key(full), cpu_launcher(launched)) == 3
    assert launched == [] and acc.item() == 2.0  # untimed, so no reset either (Triton 3.9's Autotuner.run)
    model = lambda n, BLOCK, **kw: -BLOCK  # noqa: E731 - ranks the largest block first
    kop = declare_sum_into(prune_configs_by={"perf_model": model, "top_k": 2})
    full = kop.with_defaults(_state(10))
    best = ck._choose(kop, kop.call_variants(full), full, kop.tune_key(full), cpu_launcher(launched), event=Clock)
    assert sorted(set(launched)) == [256, 512] and best == 2


@needs_triton
def test_the_autotuners_hooks_run_around_each_timed_launch(cache):
    seen = []
    kop = declare_sum_into(pre_hook=lambda args, reset_only=False: seen.append(("pre", args["BLOCK"], reset_only)),
                           post_hook=lambda args, exception: seen.append(("post", args["BLOCK"], exception)))
    assert "the autotuner's pre_hook, the autotuner's post_hook" in kop.source.describe()
    full = kop.with_defaults(_state(100))
    launched = []
    best = ck._choose(kop, kop.call_variants(full), full, kop.tune_key(full), cpu_launcher(launched), event=Clock)
    per = lambda b: [("pre", b, False), ("post", b, None)] * 11  # noqa: E731
    assert seen == per(64) + per(128) + per(256) + per(512) + [("pre", 64, True)] and best == 0


@needs_triton
def test_refusals_name_the_option_and_the_fix():
    with pytest.raises(ttk.SpecError, match=r"reset_to_zero names 'x_ptr', an input not declared mutated: Triton "
                                            r"zeroes it.*Fix: InputDecl\('x', mutated=True\)"):
        declare_sum_into(reset_to_zero=["x_ptr"])
    with pytest.raises(ttk.SpecError, match=r"restore_value names 'x_ptr', an input not declared mutated.*only a "
                                            r"tensor the kernel writes needs"):
        declare_sum_into(restore_value=["x_ptr"])
    with pytest.raises(ttk.SpecError, match=r"reset_to_zero names 'n', a size, not a tensor"):
        declare_sum_into(reset_to_zero=["n"])
    with pytest.raises(ttk.SpecError, match=r"top_k'\]=0: Triton takes a float in \(0, 1\].*or an int >= 1"):
        declare_sum_into(prune_configs_by={"perf_model": lambda **k: 0.0, "top_k": 0})
    hooked = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, pre_hook=lambda args: None)]
    kernel = triton.autotune(configs=hooked, key=["n"])(sum_into_kernel)
    with pytest.raises(ttk.SpecError, match=r"config 1 \(\{'BLOCK': 128\}.*has a pre_hook\. Triton runs it before "
                                            r"every launch with that config, and a TensorRT engine launches the "
                                            r"kernel without Python"):
        ttk.triton_kernel_op(unique("tri_hooks"), kernel,
                             inputs=[ttk.InputDecl("x"), ttk.InputDecl("acc", mutated=True),
                                     ttk.InputDecl("y", mutated=True)], outputs=[],
                             extras=[ttk.SizeArg("n", ttk.Numel("x"))], grid=(1,), arch_override=ARCH)
    with pytest.raises(ttk.SpecError, match=r"outputs: missing"):  # nothing written, nothing returned
        ttk.triton_kernel_op(unique("tri_hooks"), scaled_kernel, inputs=[ttk.InputDecl("x")], outputs=[],
                             extras=[ttk.SizeArg("n", ttk.Numel("x"))], grid=(1,), constexprs={"BLOCK": 64},
                             arch_override=ARCH)


@needs_triton
def test_a_hook_reading_an_output_is_told_outputs_are_allocated_per_launch(cache):
    kernel = triton.autotune(configs=AT_CONFIGS, key=["n"], pre_hook=lambda args, reset_only=False: args["out_ptr"])(
        scaled_kernel)
    name = unique("tri_hooks")
    ttk.triton_kernel_op(name, kernel, inputs=[ttk.InputDecl("x")],
                         outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("x"))],
                         extras=[ttk.SizeArg("n", ttk.Numel("x"))],
                         grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),), arch_override=ARCH)
    kop = registry.get(name)
    full = kop.with_defaults((torch.randn(5),))
    with pytest.raises(ttk.SpecError, match=r"pre_hook read 'out_ptr', which a trt_kernels call does not give it: an "
                                            r"output, which each launch allocates"):
        ck._choose(kop, kop.call_variants(full), full, kop.tune_key(full), lambda v: lambda x: None, event=Clock)


@needs_triton
def test_tactics_without_autotune_launch_the_first_config(monkeypatch):
    """A config computed per call (a size constexpr) with tactics= but no @triton.autotune: eager launches the
    first config, untimed (the tactics are TensorRT's to time)."""
    import triton_kernels as tk

    name = unique("tri_hooks")
    tk.declare_row_softmax(name, arch_override=ARCH, tactics=[ttk.TritonConfig({}, num_warps=2)])
    kop = registry.get(name)
    launched = []
    monkeypatch.setattr(ck, "make_cuda_impl", lambda v: lambda x: launched.append(v.sig.launches[0].block))
    impl = ck._varying_impl(kop)
    impl(torch.randn(3, 100, dtype=torch.float16))
    assert launched == [(128,)]  # BLOCK_SIZE 128, num_warps 4 from the first config: no timing
