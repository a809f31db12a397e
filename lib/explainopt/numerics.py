"""The numerical code paths a result depends on: pinned, so that a cell gives the same numbers on any
x86-64 CPU, and recorded in every stored cell's provenance.

BLAS libraries, NumPy's own loops and torch choose their kernels by the CPU they find (SSE, AVX2,
AVX-512), and kernels of other vector widths sum in another order or use other approximations (NumPy's
AVX-512 ``exp``/``log``/``sin`` come from Intel's SVML). The round-off that follows is small, but an iterative method
can carry it across a threshold: measured on this project's store, a chapter-2 gradient baseline moves
by 2.5e-5 between OpenBLAS's Haswell and Prescott kernels (a machine-independent 1e-15 when both use
Prescott). :func:`pin_code_paths`, called when :mod:`explainopt` is imported, sets the variables of
:data:`CODE_PATHS` before NumPy, SciPy or torch load their kernels, and every process the project starts
(papermill kernels, grid workers) inherits them. The training of networks needs more than this: it is
chaotic, and :mod:`explainopt.training` uses only arithmetic that IEEE 754 fixes to the bit.

Set ``EXPLAINOPT_CODE_PATHS=native`` to keep the libraries' own choices (to measure their speed, or to
check that a result does not depend on them).
"""

from __future__ import annotations

import functools
import os
import platform
import sys

#: Environment variable -> value, read by each library when it loads.
CODE_PATHS = {
    "OPENBLAS_CORETYPE": "Prescott",  # OpenBLAS (NumPy, SciPy): its SSE3 kernels, which every x86-64 CPU has
    "MKL_CBWR": "COMPATIBLE",  # MKL (torch's BLAS): the same code path on every processor
    "ATEN_CPU_CAPABILITY": "default",  # torch's own kernels: the non-vectorised ones
}
if platform.machine().lower() in ("x86_64", "amd64"):  # NumPy's loops: its x86-64-v2 baseline only
    CODE_PATHS["NPY_DISABLE_CPU_FEATURES"] = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
OPT_OUT = "EXPLAINOPT_CODE_PATHS"


def pin_code_paths() -> dict[str, str]:
    """Set :data:`CODE_PATHS` in the environment (unless ``EXPLAINOPT_CODE_PATHS=native``); returns what is
    set. Takes effect for a library only if it is not loaded yet (the libraries read the variables once)."""
    if os.environ.get(OPT_OUT, "").lower() == "native":
        return {}
    os.environ.update(CODE_PATHS)
    return dict(CODE_PATHS)


@functools.cache
def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), else :func:`platform.processor`."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def code_paths() -> dict:
    """The code paths in effect in this process: the CPU, the widest vector instructions it offers, the
    SIMD extensions NumPy dispatches to, the BLAS kernels loaded (threadpoolctl) and, if torch is loaded,
    its CPU capability."""
    import numpy as np
    from threadpoolctl import threadpool_info

    features = np._core._multiarray_umath.__cpu_features__
    widest = next((name for name in ("AVX512F", "AVX2", "AVX", "SSE3") if features.get(name)), "x86-64")
    out = {"cpu": cpu_model(), "cores": os.cpu_count(), "widest": widest,
           "numpy_simd": next((name for name in ("X86_V4", "X86_V3", "X86_V2") if features.get(name)), "baseline"),
           "blas": sorted({f"{lib['internal_api']} {lib.get('architecture') or ''}".strip()
                           for lib in threadpool_info() if lib["user_api"] == "blas"}),
           "pinned": os.environ.get(OPT_OUT, "").lower() != "native"}
    if "torch" in sys.modules:
        out["torch"] = sys.modules["torch"].backends.cpu.get_cpu_capability()
    return out


__all__ = ["CODE_PATHS", "code_paths", "cpu_model", "pin_code_paths"]
