"""Programmatic dependent launch (PDL, Hopper and later) for the engine's Triton kernels.

A kernel launched with PDL may be scheduled while the kernel before it on the stream is still finishing: its
programs start, call `wait_for_inputs` (griddepcontrol.wait: the previous kernel has completed and its writes are
visible) before they touch memory another kernel writes, then let the next kernel be scheduled in turn. In a
forward of ~150 small dependent launches this hides most of the gap between one kernel's end and the next one's
start (bench/bench_decode_linear.py measures it). Every PDL kernel waits before its first dependent load or store,
so a kernel two launches on still sees everything before it; kernels without PDL (torch's, cuBLAS) keep the
stream's ordinary full ordering. Launches use PDL only inside `dependent_launches()`: the engine's decode forward,
whose Triton kernels (decode_linear, decode_qkv, tree_attention, rms_norm) follow one another (H200: 0.68 -> 0.58
ms a forward). Between cuBLAS matmuls it cannot overlap anything, and there one H200 run measured the forward up to
9% slower with it (bench/results/decode_linear_h200.md).
Off CUDA, before Hopper, or with PDL = False, a launch is an ordinary one and `wait_for_inputs` compiles to nothing
(so Triton's CPU interpreter never sees it).
"""
from __future__ import annotations

import contextlib
import functools

import torch
import triton
import triton.language as tl

PDL = True  # a setting (bench_decode_linear.py --pdl measures both)
_inside = False  # within dependent_launches()


@contextlib.contextmanager
def dependent_launches():
    """The kernels launched (or captured into a CUDA graph) inside this block use PDL where the device has it."""
    global _inside
    saved, _inside = _inside, True
    try:
        yield
    finally:
        _inside = saved


def launch_options(device: torch.device) -> dict:
    """Keyword arguments for a kernel launch on `device`: the kernel's `PDL` constexpr and Triton's launch_pdl."""
    on = _inside and PDL and device.type == "cuda" and _hopper(device.index)
    return {"PDL": True, "launch_pdl": True} if on else {"PDL": False}


@functools.cache
def _hopper(index: int | None) -> bool:
    major, _ = torch.cuda.get_device_capability(index)
    return major >= 9 and hasattr(tl.extra.cuda, "gdc_wait")


@triton.jit
def wait_for_inputs(PDL: tl.constexpr):
    """Wait for the previous kernel (a no-op without PDL), then let the next kernel be scheduled."""
    if PDL:
        tl.extra.cuda.gdc_wait()
        tl.extra.cuda.gdc_launch_dependents()
