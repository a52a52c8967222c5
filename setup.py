"""Build of the optional C extensions; every other piece of metadata is in pyproject.toml.

Plain C and the CPython API, no other build dependency: ``deteval.io._colparse`` parses COCO
results and instances files and VOC/YOLO rows into columns; ``deteval._csort`` sorts groups by
score; ``deteval._cmatch`` runs the greedy COCO and VOC matching; ``deteval._cacc`` accumulates
the point-sampled curves; ``deteval._cboot`` re-accumulates bootstrap resamples. All are optional:
when no C compiler is available their build fails quietly and deteval uses the pure-Python/numpy
twins, which give the same numbers bit for bit.
"""

import sys

from setuptools import Extension, setup

#: One set of flags for every extension: the kernels repeat numpy's float operations in order, so no
#: contraction into FMA and no fast-math anywhere (MSVC: its defaults keep IEEE order).
COMPILE_ARGS = [] if sys.platform == "win32" else ["-O2", "-fno-fast-math", "-ffp-contract=off", "-pthread"]
#: Kernels that split their work start POSIX threads (deteval/_parallel.h).
LINK_ARGS = [] if sys.platform == "win32" else ["-pthread"]
#: The header every extension includes (buffer checks, the init macro and its ABI number): each
#: extension depends on it, so that changing it rebuilds them all.
BUFFER_CHECKS = ["deteval/_buffer_checks.h", "deteval/_parallel.h"]


def _extension(name: str, source: str) -> Extension:
    return Extension(
        name,
        sources=[source],
        depends=BUFFER_CHECKS,
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
        optional=True,
    )


setup(
    ext_modules=[
        _extension("deteval.io._colparse", "deteval/io/_colparse.c"),
        _extension("deteval._cmatch", "deteval/_cmatch.c"),
        _extension("deteval._csort", "deteval/_csort.c"),
        _extension("deteval._cboot", "deteval/_cboot.c"),
        _extension("deteval._cacc", "deteval/_cacc.c"),
        _extension("deteval._canalyze", "deteval/_canalyze.c"),
        _extension("deteval.geometry._cmask", "deteval/geometry/_cmask.c"),
        _extension("deteval.geometry._ckeypoint", "deteval/geometry/_ckeypoint.c"),
    ]
)
