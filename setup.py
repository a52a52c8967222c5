"""Build of the optional C extensions; every other piece of metadata is in pyproject.toml.

``deteval.io._colparse`` (plain C and the CPython API, no other build dependency) parses COCO
box-results files into columns; ``deteval._cmatch`` runs the greedy COCO and VOC matching. Both are
optional: when no C compiler is available their build
fails quietly and deteval uses its pure-Python/numpy path, which gives the same numbers.
"""

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
        Extension("deteval._cacc", sources=["deteval/_cacc.c"], optional=True),
    ]
)
