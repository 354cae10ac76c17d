"""judge.observe.summary: which inputs reach the candidate's own launches (GPU rule: by the
storages its launches were passed, through data movement the calls made)."""

from __future__ import annotations

import torch

from forgekernel.judge import observe


def _launch(seen, name, *tensors):
    seen.launches.append({"name": name, "args": observe.storages(list(tensors))})


def test_an_input_copied_to_another_layout_before_the_launch_was_passed_to_it():
    x, w = torch.randn(2, 3, 4, 4), torch.randn(3, 3)
    with observe.watching(False) as seen:
        xc = x.movedim(1, -1).contiguous().movedim(-1, 1)  # a channels-last copy of x
        y = torch.empty(2, 3, 4, 4)
    _launch(seen, "conv", xc, w, y)
    facts = observe.summary(seen, [x, w], (y,), ("conv",))
    assert facts["inputs_passed"] == [True, True]
    assert facts["outputs_written"] == [True]


def test_an_input_no_own_launch_reached_is_not_passed():
    x, stale = torch.randn(8), torch.randn(8)
    with observe.watching(False) as seen:
        y = torch.empty(8)
    _launch(seen, "copy_answer", stale, y)  # reads a tensor that does not come from x
    _launch(seen, "not_mine", x)  # a launch of a kernel that is not the candidate's own
    facts = observe.summary(seen, [x], (y,), ("copy_answer",))
    assert facts["inputs_passed"] == [False]


def test_a_native_launch_seen_by_the_profiler_counts_by_its_base_name_for_the_call_tensors():
    """A CUDA C++ kernel's launch (name from the device activity, arguments unseen) is the
    candidate's own by its ``__global__`` name and stands for the call's inputs and outputs;
    another kernel (a library's) is not."""
    from forgekernel.judge import audit

    x = torch.randn(4, 8)
    y = torch.empty(4, 8)
    seen = observe.Seen()
    seen.launches.append({"name": "void rmsnorm_fwd<256, 8>(c10::BFloat16 const*, float*, int)", "args": None})
    facts = observe.summary(seen, [x], (y,), ("rmsnorm_fwd",))
    assert facts["inputs_passed"] == [True] and facts["outputs_written"] == [True]
    assert audit.observed_violation(facts, own=["rmsnorm_fwd"], forbid=(), ref_ops=set(),
                                    interpret=False) is None
    other = observe.Seen()
    other.launches.append({"name": "void at::native::vectorized_elementwise_kernel<4>(int)", "args": None})
    facts = observe.summary(other, [x], (y,), ("rmsnorm_fwd",))
    assert facts["inputs_passed"] == [False]
    kind, _ = audit.observed_violation(facts, own=["rmsnorm_fwd"], forbid=(), ref_ops=set(), interpret=False)
    assert kind == "no_launch"


def test_no_kernel_need_run_where_every_output_is_empty():
    """A call whose outputs have no element (a second difference of a length-1 row) has nothing
    to compute: the launch rule is waived there, and only there."""
    from forgekernel.judge import audit

    x, y = torch.randn(4, 1), torch.empty(4, 0)
    facts = observe.summary(observe.Seen(), [x], (y,), ("diff_kernel",))
    rules = {"own": ["diff_kernel"], "forbid": (), "ref_ops": set(), "interpret": True, "inputs_matter": False}
    assert audit.observed_violation(facts, empty=True, **rules) is None
    assert audit.observed_violation(facts, **rules)[0] == "no_launch"
    assert audit.all_empty([y]) and not audit.all_empty([y, x]) and not audit.all_empty([])


def test_a_library_op_the_task_allows_carries_its_inputs_to_the_own_tail_kernel():
    """With ``convolution`` among the task's library ops, the convolution's output counts as
    derived from its inputs: the tail kernel that finishes it read x and w. Without it the
    inputs reached no own launch."""
    x, w = torch.randn(1, 3, 6, 6), torch.randn(4, 3, 3, 3)
    for library, passed in ((frozenset({"convolution"}), [True, True]), (frozenset(), [False, False])):
        with observe.watching(False, library=library) as seen:
            y = torch.nn.functional.conv2d(x, w)  # the library's part
        _launch(seen, "tail", y)
        facts = observe.summary(seen, [x, w], (y,), ("tail",))
        assert facts["inputs_passed"] == passed
        assert "convolution" in facts["eager"]


def test_a_vendor_library_op_is_refused_unless_the_task_lists_it():
    """An eager convolution (cuDNN's work) around an own tail kernel: REJECTED as a library
    call where the task's library_ops is empty, allowed where it lists convolution, and
    refused again where the reference computes nothing but the convolution (the library op
    would then be the whole operator)."""
    from forgekernel.judge import audit

    facts = {"launches": ["tail"], "eager": ["convolution"], "outputs_written": [True],
             "inputs_passed": [True, True]}
    rules = {"own": ["tail"], "forbid": (), "interpret": False}
    ref_ops = {"convolution", "relu", "add"}
    kind, reason = audit.observed_violation(facts, ref_ops=ref_ops, **rules)
    assert kind == "library" and "aten.convolution" in reason and "library_ops" in reason
    assert audit.observed_violation(facts, ref_ops=ref_ops, library=("convolution",), **rules) is None
    assert audit.observed_violation(facts, ref_ops={"convolution"}, library=("convolution",),
                                    **rules)[0] == "library"
    mm = {**facts, "eager": ["mm"]}  # a matrix product by cuBLAS is a library call as well
    assert audit.observed_violation(mm, ref_ops=ref_ops, library=("convolution",), **rules)[0] == "library"


def test_an_aten_overload_called_directly_is_named_by_its_op():
    """``torch.ops.aten.add.Tensor`` is the op ``add`` (not ``Tensor``) for the fallback rule."""
    from forgekernel.judge import audit

    for fn, key in ((torch.ops.aten.add.Tensor, "add"), (torch.ops.aten.convolution.default, "convolution"),
                    (torch.add, "add")):
        assert audit.op_key(audit.call_name(fn)) == key
    x = torch.randn(4)
    with observe.watching(False) as seen:
        torch.ops.aten.mul.Tensor(x, x)
    assert "mul" in observe.compute_ops(seen) and "Tensor" not in observe.compute_ops(seen)
