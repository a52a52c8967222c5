"""Make hypothesis failures readable under ``filterwarnings = error``.

When a property fails, hypothesis' pytest plugin imports ``hypothesis.extra._patching``
(libcst) to write an ``@example`` patch; on this environment libcst's import emits a
DeprecationWarning (mypy_extensions.TypedDict), which the warnings-as-errors setting turns
into an INTERNALERROR that hides the falsifying example. Importing it once here, with that
warning silenced, keeps the real failure report.
"""

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import hypothesis.extra._patching  # noqa: F401
    except ImportError:  # libcst not installed: hypothesis skips the patch, nothing to do
        pass
