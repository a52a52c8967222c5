"""``import deteval`` and a box ``deteval evaluate`` import only what their path needs.

The package's public names load on first use (PEP 562 ``__getattr__`` in ``deteval/__init__.py``,
``deteval/api/__init__.py`` and ``deteval/ranking/__init__.py``, and for the YAML, keypoint-column
and other-matching names of ``_safe_read``, ``protocol``, ``io.coco`` and ``matching``); the
command line imports the handler of the command it runs, and the readers of the formats it
reads. Each check runs in a fresh interpreter and looks at ``sys.modules``: which modules, never
how long.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import deteval
from deteval import _speedups
from deteval.protocol import yaml as protocol_yaml
from deteval.protocol.preset_cache import _PARSED, parsed_preset
from deteval.protocol.safe_yaml import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

#: Optional or heavy third-party packages no box evaluation needs (yaml: the shipped presets are
#: parsed ahead, deteval/protocol/preset_cache.py).
HEAVY = (
    "matplotlib",
    "shapely",
    "PIL",
    "torch",
    "pandas",
    "scipy",
    "sklearn",
    "dask",
    "jinja2",
    "cv2",
    "yaml",
)

#: deteval's analysis, statistics, pictures and other formats' readers: not on a COCO box run.
NOT_ON_THE_BOX_PATH = (
    "deteval.analysis",
    "deteval.decomposition",
    "deteval.diagnose",
    "deteval.evaluator",
    "deteval.explain",
    "deteval.io.dota",
    "deteval.io.voc",
    "deteval.io.yolo_obb",
    "deteval.mask_modes",
    "deteval.per_image",
    "deteval.plot",
    "deteval.ranking.curves",
    "deteval.slices",
    "deteval.stats",
    "deteval.tide",
    "numpy.ma",  # np.unique imports it (numpy 2): not on the box path's sorted chunk bounds
    "xml.etree.ElementTree",
)


def _loaded_after(code: str) -> list[str]:
    """Names of ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _packages(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted({n for n in names for m in modules if m == n or m.startswith(n + ".")})


def test_import_deteval_loads_no_submodule_and_no_third_party_package() -> None:
    modules = _loaded_after("import deteval")
    assert [m for m in modules if m.startswith("deteval")] == ["deteval"]
    assert _packages(modules, HEAVY + ("numpy", "yaml", "msgspec", "orjson", "pycocotools")) == []


def test_a_box_evaluation_loads_only_its_path() -> None:
    gt, dt = FIXTURES / "coco" / "gt.json", FIXTURES / "coco" / "dt.json"
    code = (
        "import contextlib, io\n"
        "from deteval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    assert main(['evaluate', '--gt', {str(gt)!r}, '--dt', {str(dt)!r}]) == 0\n"
    )
    modules = _loaded_after(code)
    assert "deteval.evaluate.run" in modules  # it did score
    assert _packages(modules, HEAVY + NOT_ON_THE_BOX_PATH) == []


#: What box and keypoint scoring never need: the masks (values, geometry, pycocotools), rotated
#: boxes, Open Images' label rules, the YOLO readers, the ranking metrics, the renderers of the
#: other commands, and the random-name module of the output writer (hmac, hashlib).
NOT_ON_THE_KEYPOINT_PATH = (
    *NOT_ON_THE_BOX_PATH,
    "deteval.masks",
    "deteval.geometry.masks",
    "deteval.geometry.raster",
    "deteval.geometry.polygons",
    "deteval.geometry.rotated",
    "deteval.io.segmentation",
    "deteval.openimages",
    "deteval.io.openimages",
    "deteval.io.yolo",
    "deteval.ranking._common",
    "deteval.report.compare",
    "deteval.report.diagnostics",
    "deteval.report.protocols",
    "pycocotools",
    "secrets",
)


#: The keypoint fixture's protocol: three sigmas (a YAML file: its parser is on this path).
THREE_KEYPOINTS = str(FIXTURES / "keypoints" / "three.yaml")


@pytest.mark.parametrize("folder", ["keypoints", "coco"])
def test_a_keypoint_or_box_evaluation_loads_no_mask_code(folder: str) -> None:
    """``deteval evaluate`` on keypoints (or boxes): no mask, plot, other-command or Open Images code."""
    gt, dt = FIXTURES / folder / "gt.json", FIXTURES / folder / "dt.json"
    protocol = THREE_KEYPOINTS if folder == "keypoints" else "coco"
    code = (
        "import contextlib, io\n"
        "from deteval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    assert main(['evaluate', '--gt', {str(gt)!r}, '--dt', {str(dt)!r}, '--protocol', {protocol!r},"
        " '--format', 'json', '-q']) == 0\n"
    )
    modules = _loaded_after(code)
    assert "deteval.evaluate.run" in modules  # it did score
    assert folder == "coco" or "deteval.geometry.keypoints" in modules  # by OKS
    heavy = tuple(name for name in HEAVY if name != "yaml" or folder == "coco")
    assert _packages(modules, heavy + NOT_ON_THE_KEYPOINT_PATH) == []


def test_an_api_keypoint_evaluation_loads_no_mask_or_report_code() -> None:
    gt, dt = FIXTURES / "keypoints" / "gt.json", FIXTURES / "keypoints" / "dt.json"
    code = (
        "import warnings, deteval\n"
        "warnings.simplefilter('ignore')\n"
        f"assert deteval.evaluate({str(gt)!r}, {str(dt)!r}, {THREE_KEYPOINTS!r}).metrics['AP'] >= 0\n"
    )
    modules = _loaded_after(code)
    assert "deteval.geometry.keypoints" in modules  # it did score by OKS
    banned = tuple(name for name in HEAVY if name != "yaml") + NOT_ON_THE_KEYPOINT_PATH
    assert _packages(modules, (*banned, "deteval.report", "deteval.plot")) == []


def test_the_api_box_evaluation_loads_only_its_path() -> None:
    gt, dt = FIXTURES / "coco" / "gt.json", FIXTURES / "coco" / "dt.json"
    code = (
        "import warnings, deteval\n"
        "warnings.simplefilter('ignore')\n"
        f"assert deteval.evaluate({str(gt)!r}, {str(dt)!r}, 'coco').metrics['AP'] > 0\n"
    )
    assert _packages(_loaded_after(code), HEAVY + NOT_ON_THE_BOX_PATH + ("deteval.report",)) == []


@pytest.mark.parametrize("name", deteval.__all__)
def test_every_public_name_imports_from_the_package(name: str) -> None:
    namespace: dict = {}
    exec(f"from deteval import {name}", namespace)  # noqa: S102  (the statement users write)
    assert namespace[name] is getattr(deteval, name)
    assert name in dir(deteval)


def test_public_names_are_the_objects_of_their_modules() -> None:
    from deteval import api, errors, protocol

    assert deteval.evaluate is api.evaluate
    assert deteval.explain is api.explain
    assert deteval.Protocol is protocol.Protocol
    assert deteval.InputError is errors.InputError
    assert set(deteval.__all__) <= set(dir(deteval))
    assert set(api.__all__) <= set(dir(api))
    for name in api.__all__:
        assert getattr(api, name) is not None


def test_evaluate_and_explain_stay_the_functions_after_their_subpackages_load() -> None:
    """Importing the subpackages ``deteval.evaluate`` / ``deteval.explain`` keeps the functions.

    The import system would bind each package as an attribute of ``deteval``; eager imports
    never let it replace the public function, and neither do the lazy ones.
    """
    code = (
        "import deteval\n"
        "from deteval.evaluate import match\n"
        "import deteval.explain.cache\n"
        "print(callable(deteval.evaluate), callable(deteval.explain), deteval.match is match)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["True", "True", "True"]


def test_submodules_are_attributes_and_unknown_names_raise_attribute_error() -> None:
    code = (
        "import deteval\n"
        "print(deteval.io.load_coco_gt.__module__, hasattr(deteval, 'no_such_name'))\n"
        "try:\n"
        "    deteval.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    lines = out.stdout.splitlines()
    assert lines[0] == "deteval.io.coco.ground_truth False"
    assert lines[1] == "module 'deteval' has no attribute 'no_such_name'"


PRESET_FILES = sorted(protocol_yaml.PRESET_DIR.glob("*.yaml"))


def test_the_parsed_presets_are_those_of_the_yaml_files() -> None:
    """Stale after a preset is edited: run ``python scripts/make_preset_cache.py``."""
    raws = {path.name: path.read_bytes() for path in PRESET_FILES}
    stale = [name for name, raw in raws.items() if parsed_preset(raw) != parse_yaml(raw.decode("utf-8-sig"))]
    assert not stale, f"run python scripts/make_preset_cache.py: stale parsed presets {stale}"
    assert set(_PARSED) == set(raws.values()), (
        "run python scripts/make_preset_cache.py: presets added or removed"
    )


def test_every_preset_is_the_protocol_its_yaml_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    ahead = {name: deteval.get_protocol(name) for name in deteval.PRESETS}
    protocol_yaml._load_preset.cache_clear()
    monkeypatch.setattr(protocol_yaml, "parsed_preset", lambda raw: None)  # every file through YAML
    try:
        parsed = {name: deteval.get_protocol(name) for name in deteval.PRESETS}
    finally:
        protocol_yaml._load_preset.cache_clear()
    assert parsed == ahead
    assert [p.fingerprint() for p in parsed.values()] == [p.fingerprint() for p in ahead.values()]


def test_a_preset_with_other_bytes_is_parsed_from_its_yaml(tmp_path: Path) -> None:
    raw = (protocol_yaml.PRESET_DIR / "coco.yaml").read_bytes()
    edited = raw.replace(b"max_dets: [1, 10, 100]", b"max_dets: [1, 10, 300]")
    assert edited != raw
    assert parsed_preset(edited) is None
    (tmp_path / "coco300.yaml").write_bytes(edited)
    loaded = deteval.load_protocol_file(tmp_path / "coco300.yaml")
    assert loaded.max_dets == (1, 10, 300)
    assert loaded.replace(max_dets=(1, 10, 100)) == deteval.get_protocol("coco")


#: Open Images' readers: loaded only when a challenge CSV or side file is read.
OPEN_IMAGES_READERS = ("deteval.io.openimages", "csv")


@pytest.mark.parametrize(
    ("folder", "protocol"),
    [
        ("coco", "'coco'"),
        ("keypoints", repr(str(FIXTURES / "keypoints" / "three.yaml"))),
        ("segm", "deteval.get_protocol('coco').replace(iou_type='segm')"),
    ],
)
def test_an_api_evaluation_loads_no_open_images_reader(folder: str, protocol: str) -> None:
    gt, dt = FIXTURES / folder / "gt.json", FIXTURES / folder / "dt.json"
    code = (
        "import warnings, deteval\n"
        "warnings.simplefilter('ignore')\n"
        f"deteval.evaluate({str(gt)!r}, {str(dt)!r}, {protocol}, workers='auto')\n"
    )
    modules = _loaded_after(code)
    assert "deteval.evaluate.run" in modules  # it did score
    assert _packages(modules, OPEN_IMAGES_READERS) == []


def test_loading_box_or_keypoint_results_loads_no_mask_module() -> None:
    """The results readers import deteval.masks where they make a mask column, not before."""
    code = "import deteval\n"
    for folder in ("coco", "keypoints"):
        gt, dt = FIXTURES / folder / "gt.json", FIXTURES / folder / "dt.json"
        code += f"deteval.load_detections({str(dt)!r}, deteval.load_ground_truth({str(gt)!r}), workers=2)\n"
    modules = _loaded_after(code)
    assert "deteval.io.coco.fast" in modules
    assert _packages(modules, ("deteval.masks", "pycocotools", *OPEN_IMAGES_READERS)) == []


#: What a box or keypoint evaluation with the compiled readers never needs: msgspec (the readers'
#: twin when the extension is not built) and what it imports (12-15 ms of a 0.3 s keypoint run),
#: and the process pool's signal handling.
NOT_WITH_THE_COMPILED_READERS = (
    "msgspec",
    "typing_extensions",
    "decimal",
    "signal",
    "deteval.io.coco.fast_msgspec",
)


@pytest.mark.skipif(
    _speedups.load("deteval.io._colparse") is None,
    reason="the compiled readers are not built or are disabled",
)
@pytest.mark.parametrize("folder", ["keypoints", "coco"])
def test_an_api_evaluation_with_the_compiled_readers_loads_no_twin_or_side_code(folder: str) -> None:
    """``deteval.evaluate`` on a box or keypoint file: the compiled parser reads both files."""
    gt, dt = FIXTURES / folder / "gt.json", FIXTURES / folder / "dt.json"
    protocol = THREE_KEYPOINTS if folder == "keypoints" else "coco"
    code = (
        "import warnings, deteval\n"
        "warnings.simplefilter('ignore')\n"
        f"assert deteval.evaluate({str(gt)!r}, {str(dt)!r}, {protocol!r}).metrics['AP'] >= 0\n"
    )
    modules = _loaded_after(code)
    assert "deteval.evaluate.run" in modules  # it did score
    assert "deteval.io._colparse" in modules  # with the compiled readers
    assert _packages(modules, NOT_WITH_THE_COMPILED_READERS) == []


#: What a keypoint evaluation under a shipped preset never calls (the benchmark's path: plain
#: files, ``workers="auto"``): the YAML parser and writer of protocols (the presets are parsed
#: ahead), Ultralytics and group-of matching, the best-F1 operating points (computed when
#: ``EvalResult.best_f1`` is read) and the default protocol (one is given).
NOT_ON_THE_PRESET_KEYPOINT_PATH = (
    "deteval._safe_read.safe_yaml",
    "deteval.protocol.safe_yaml",
    "deteval.protocol.yaml_dump",
    "deteval.matching.others",
    "deteval.operating_points",
    "deteval.api.protocols",
    "yaml",
)

#: ... and, when the compiled readers read both files, the full checks' column readers (oriented
#: boxes, keypoints) and the compressed-RLE results reader.
NOT_WITH_THE_COMPILED_KEYPOINT_READERS = (
    "deteval.io.coco.obb",
    "deteval.io.coco.keypoints",
    "deteval.io.coco.fast_rle",
    # the compiled readers leave the categories, decoded by the standard library (loads_small):
    # orjson and what it imports (~5 ms) are not needed
    "orjson",
    "uuid",
    "zoneinfo",
)


def test_a_keypoint_evaluation_under_a_preset_loads_only_what_it_calls(tmp_path: Path) -> None:
    """``load_ground_truth``, ``load_detections`` and ``evaluate`` under ``coco-keypoints``."""
    gt = FIXTURES / "keypoints" / "gt.json"
    records = json.loads((FIXTURES / "keypoints" / "dt.json").read_text(encoding="utf-8"))
    for record in records:
        record["bbox"] = [0.0, 0.0, 10.0, 10.0]  # given, as models write them (else: the keypoints' extent)
    dt = tmp_path / "dt.json"
    dt.write_text(json.dumps(records), encoding="utf-8")
    code = (
        "import warnings, deteval\n"
        "warnings.simplefilter('ignore')\n"
        f"g = deteval.load_ground_truth({str(gt)!r}, workers='auto')\n"
        f"d = deteval.load_detections({str(dt)!r}, g, workers='auto')\n"
        "p = deteval.get_protocol('coco-keypoints').replace(keypoint_sigmas=(0.1, 0.1, 0.1))\n"
        "assert deteval.evaluate(g, d, p, workers='auto').metrics['AP'] >= 0\n"
    )
    modules = _loaded_after(code)
    assert "deteval.geometry.keypoints" in modules  # it did score by OKS
    banned = HEAVY + NOT_ON_THE_KEYPOINT_PATH + NOT_ON_THE_PRESET_KEYPOINT_PATH
    if _speedups.load("deteval.io._colparse") is not None:
        assert "deteval.io._colparse" in modules
        banned += NOT_WITH_THE_COMPILED_KEYPOINT_READERS
    assert _packages(modules, banned) == []
