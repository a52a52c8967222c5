"""TIDE's result: the error-type names, the thresholds and :class:`TideErrors`.

The lowest module of :mod:`deteval.tide`: the constants every other module uses (``_CODE``, the
integer code of each error type of a kept detection) and the dataclass :func:`tide_errors`
returns, with its JSON form.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from deteval._values import frozen

#: Main error types in tidecv's order (ClassError, BoxError, OtherError, DuplicateError,
#: BackgroundError, MissedError).
MAIN_ERRORS = ("cls", "loc", "both", "dupe", "bkg", "miss")
SPECIAL_ERRORS = ("false_pos", "false_neg")
#: ``TIDE.COCO_THRESHOLDS``: typed decimals, not ``np.linspace`` (0.9, not 0.8999999999999999).
TIDE_COCO_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
MODES = ("tidecv", "protocol")

_CODE = {"tp": 0, "cls": 1, "loc": 2, "both": 3, "dupe": 4, "bkg": 5}


@frozen
class TideErrors:
    """dAP of each TIDE error type, overall and per class.

    Attributes
    ----------
    main : dict
        ``{"cls", "loc", "both", "dupe", "bkg", "miss"} -> dAP`` (>= 0, as tidecv clips).
    special : dict
        ``{"false_pos", "false_neg"} -> dAP`` (not clipped).
    ap : float
        The AP the errors are measured against (at the foreground threshold).
    ap_by_threshold : dict
        ``mode="tidecv"``: TIDE's AP at each of ``TIDE_COCO_THRESHOLDS`` (tidecv's
        ``evaluate_range``); its mean is what tidecv's summary prints as ``AP @ [50-95]``.
    counts : dict
        Number of errors of each main type.
    per_class : tuple of dict
        ``{category_id, name, ap, main, special}``; None where the class does not enter the mean.
    """

    main: dict
    special: dict
    ap: float
    mode: str
    foreground: float
    background: float
    counts: dict
    per_class: tuple
    ap_by_threshold: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The ``"errors"`` piece of ``deteval analyze --output`` (NaN -> null)."""
        out = {
            "main": {k: _json(v) for k, v in self.main.items()},
            "special": {k: _json(v) for k, v in self.special.items()},
            "per_class": [
                {
                    "category_id": c["category_id"],
                    "name": c["name"],
                    "ap": _json(c["ap"]),
                    "main": {k: _json(v) for k, v in c["main"].items()},
                    "special": {k: _json(v) for k, v in c["special"].items()},
                }
                for c in self.per_class
            ],
            "ap": _json(self.ap),
            "mode": self.mode,
            "thresholds": {"foreground": self.foreground, "background": self.background},
            "counts": dict(self.counts),
        }
        if self.ap_by_threshold:
            out["ap_by_threshold"] = {f"{t:g}": _json(v) for t, v in self.ap_by_threshold.items()}
            out["ap_50_95"] = _json(float(np.mean(list(self.ap_by_threshold.values()))))
        return out


def whose_ap(errors: dict, protocol: str | None = None) -> str:
    """Whose AP a TIDE result's ``ap`` is, in one clause (printed beside the number).

    In mode ``tidecv`` it is tidecv's own AP, not ``evaluate``'s (docs/analysis.md lists every
    rule; the two that move it most are named); in mode ``protocol`` the protocol's AP at the
    foreground threshold.

    >>> whose_ap({"mode": "protocol", "thresholds": {"foreground": 0.5}}, "coco")
    "coco's AP at IoU 0.5"
    """
    if errors["mode"] == "tidecv":
        return (
            "tidecv's rules, not evaluate's: a class without ground truth counts 0, 100 detections an image"
        )
    return f"{protocol or 'the protocol'}'s AP at IoU {errors['thresholds']['foreground']:g}"


def _json(value: float | None) -> float | None:
    return None if value is None or value != value else float(value)
