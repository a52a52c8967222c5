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

setup(
    ext_modules=[
        Extension(
            "deteval.io._colparse",
            sources=["deteval/io/_colparse.c"],
            optional=True,
        ),
        Extension(
            "deteval._cmatch",
            sources=["deteval/_cmatch.c"],
            optional=True,
        ),
        Extension(
            "deteval._csort",
            sources=["deteval/_csort.c"],
            optional=True,
        ),
        Extension(
            "deteval._cboot",
            sources=["deteval/_cboot.c"],
            # the kernel repeats numpy's float operations in order: no contraction into FMA
            extra_compile_args=[]
            if sys.platform == "win32"
            else ["-O2", "-fno-fast-math", "-ffp-contract=off"],
            optional=True,
        ),
        Extension("deteval._cacc", sources=["deteval/_cacc.c"], optional=True),
        Extension(
            "deteval.geometry._cbox",
            sources=["deteval/geometry/_cbox.c"],
            extra_compile_args=[]
            if sys.platform == "win32"
            else ["-O2", "-fno-fast-math", "-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "deteval._canalyze",
            sources=["deteval/_canalyze.c"],
            extra_compile_args=[]
            if sys.platform == "win32"
            else ["-O2", "-fno-fast-math", "-ffp-contract=off"],
            optional=True,
        ),
    ]
)
