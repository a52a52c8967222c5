"""The error browser's HTML (:mod:`deteval.plot.gallery`): cards, SVG boxes, filters, its CSS and JS."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from deteval.errors import ConfigError
from deteval.plot._gallery_values import _HEADER_RESERVE, OUTCOME_COLOURS, Gallery, GalleryBox, GalleryImage
from deteval.plot._html_format import _num, escape


def _box_label(b: GalleryBox) -> str:
    if b.kind == "gt":
        what = {"fn": "missed", "found": "found", "ignored": "ignored"}[b.outcome]
        return f"{b.category} ({what})"
    text = f"{b.category} {b.score:.2f}"
    if b.iou is not None:
        text += f" IoU {b.iou:.2f}"
    return text + (f" {b.error}" if b.error else "")


def _attrs(b: GalleryBox) -> str:
    score = "" if b.score is None else f' data-score="{b.score!r}"'
    return (
        f'data-kind="{b.kind}" data-outcome="{b.outcome}" data-error="{escape(b.error)}" '
        f'data-class="{escape(b.category)}"{score}'
    )


def _svg(image: GalleryImage) -> str:
    w, h = image.width, image.height
    font = max(w, h) / 36
    parts = [
        f'<svg class="boxes" viewBox="0 0 {w:g} {h:g}" preserveAspectRatio="none" '
        f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="boxes">'
    ]
    if image.picture is None:
        parts.append(f'<rect class="canvas" x="0" y="0" width="{w:g}" height="{h:g}"/>')
    for b in image.boxes:  # ground truth first: detections are drawn over them
        x, y, bw, bh = b.box
        dash = ' stroke-dasharray="6 3"' if b.kind == "gt" else ""
        colour = OUTCOME_COLOURS[b.outcome]
        ty = y - font * 0.3 if y > font else y + font
        parts.append(
            f'<g class="box" {_attrs(b)}><rect x="{x:g}" y="{y:g}" width="{bw:g}" height="{bh:g}" '
            f'fill="none" stroke="{colour}" stroke-width="2" vector-effect="non-scaling-stroke"{dash}/>'
            f'<text x="{x:g}" y="{ty:g}" font-size="{font:.3g}" fill="{colour}">{escape(_box_label(b))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _card(image: GalleryImage, prefix: str, with_picture: bool, mark: str = "") -> str:
    anchor = f"{prefix}-{image.image_id}"
    # the first (or only) detector's #view-ID, the k-th's #view-dK-ID (several_galleries_section)
    view = f"view{prefix[len('image') :]}-{image.image_id}"
    title = image.file_name or f"image {image.image_id}"
    pic = ""
    natural = ""
    if with_picture and image.picture is not None and image.picture_size is not None:
        encoded = base64.b64encode(image.picture).decode("ascii")
        pw, ph = image.picture_size
        pic = (
            f'<img src="data:image/jpeg;base64,{encoded}" width="{pw}" height="{ph}" '
            f'alt="{escape(title)}" loading="eager">'
        )
        natural = f' data-w="{pw}"'
    else:
        scale = min(1.0, 640 / max(image.width, image.height))
        natural = f' data-w="{max(1, round(image.width * scale))}"'
    note = image.note
    if image.picture is not None and not with_picture:
        note = "picture left out: the gallery's byte budget is spent"
    gain = _num(image.ap_gain, 4, sign=True)
    return (
        f'<figure class="card" id="card-{anchor}" data-image="{image.image_id}"{mark}{natural}>'
        f'<div class="pic" style="aspect-ratio:{image.width:g}/{image.height:g}">{pic}{_svg(image)}</div>'
        f'<figcaption><b>#{image.rank}</b> <span class="name">{escape(title)}</span><br>'
        f"AP gain {gain} · TP {image.tp} · FP {image.fp} · FN {image.fn} · "
        f'<a href="#{anchor}">table</a> · <a href="#{view}" class="open">enlarge</a>'
        + (f'<br><span class="note">{escape(note)}</span>' if note else "")
        + "</figcaption></figure>"
    )


def _image_table(image: GalleryImage, prefix: str, mark: str = "") -> str:
    rows = []
    for b in image.boxes:
        x, y, w, h = b.box
        score = "" if b.score is None else f"{b.score:.3f}"
        iou = "" if b.iou is None else f"{b.iou:.3f}"
        rows.append(
            f"<tr {_attrs(b)}><td>{'detection' if b.kind == 'det' else 'ground truth'}</td>"
            f"<td>{b.ident}</td><td>{escape(b.category)}</td>"
            f'<td><span class="chip" style="background:{OUTCOME_COLOURS[b.outcome]}"></span>{b.outcome}</td>'
            f"<td>{escape(b.error)}</td><td class=num>{score}</td><td class=num>{iou}</td>"
            f"<td class=num>{x:g}, {y:g}, {w:g}, {h:g}</td></tr>"
        )
    title = image.file_name or f"image {image.image_id}"
    return (
        f'<div class="image-table" id="{prefix}-{image.image_id}"{mark}><h3>#{image.rank} {escape(title)} '
        f'<span class="count">image id {image.image_id}</span> <a href="#card-{prefix}-{image.image_id}">'
        "back to the picture</a></h3>"
        '<div class="scroll"><table class="data"><thead><tr><th>what</th><th>id</th><th>class</th>'
        "<th>outcome</th><th>error</th><th>score</th><th>IoU</th><th>box (x, y, w, h)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div></div>"
    )


def _filters(galleries: list, detectors: list | None = None) -> str:
    classes = sorted({b.category for g in galleries for im in g.images for b in im.boxes})
    class_options = "".join(f'<option value="{escape(c)}">{escape(c)}</option>' for c in classes)
    outcomes = [
        ("", "every outcome"),
        ("tp", "true positives"),
        ("fp", "false positives (any)"),
        ("fp:cls", "FP: wrong class (cls)"),
        ("fp:loc", "FP: poor localisation (loc)"),
        ("fp:both", "FP: class and box (both)"),
        ("fp:dupe", "FP: duplicate (dupe)"),
        ("fp:bkg", "FP: background (bkg)"),
        ("fn", "missed objects (fn)"),
        ("ignored", "ignored"),
    ]
    outcome_options = "".join(f'<option value="{v}">{label}</option>' for v, label in outcomes)
    legend = "".join(
        f'<span class="chip" style="background:{colour}"></span>{name} '
        for name, colour in OUTCOME_COLOURS.items()
    )
    menu = ""
    if detectors:
        options = "".join(
            f'<option value="{k}">{escape(n)}</option>' for k, n in enumerate(detectors, start=1)
        )
        menu = f'<label>detector <select id="gallery-detector">{options}</select></label> '
    return (
        f'<div class="filters">{menu}<label>class <select id="gallery-class"><option value="">every class</option>'
        f'{class_options}</select></label> <label>outcome <select id="gallery-outcome">{outcome_options}'
        '</select></label> <label>confidence ≥ <input id="gallery-confidence" type="range" min="0" max="1" '
        'step="0.01" value="0"> <output id="gallery-confidence-value">0.00</output></label> '
        f'<span class="shown" id="gallery-shown"></span></div><p class="legend">{legend}'
        "(ground truth dashed, detections solid)</p>"
    )


def _body(gallery: Gallery, prefix: str, detector: str) -> tuple:
    """One gallery's cards, tables and notes within ``gallery.max_bytes - _HEADER_RESERVE`` bytes.

    Cards and their tables are added in ranking order while they fit; a card whose picture
    would not fit is shown without it; when not even that fits the gallery stops. Each omission
    is a note. ``detector``: the cards' and tables' ``data-detector`` ("" for none).
    """
    budget = gallery.max_bytes - _HEADER_RESERVE
    cards: list[str] = []
    tables: list[str] = []
    used = 0
    n_dropped_pictures = 0
    n_left_out = 0
    mark = f' data-detector="{detector}"' if detector else ""
    for image in gallery.images:
        card, table = _card(image, prefix, True, mark), _image_table(image, prefix, mark)
        size = len(card.encode()) + len(table.encode())
        if used + size > budget and image.picture is not None:
            card = _card(image, prefix, False, mark)
            size = len(card.encode()) + len(table.encode())
            n_dropped_pictures += 1
        if used + size > budget:
            n_left_out = len(gallery.images) - len(cards)
            break
        cards.append(card)
        tables.append(table)
        used += size
    notes = list(gallery.notes)
    if n_dropped_pictures:
        notes.append(
            f"{n_dropped_pictures} picture(s) left out to keep the section within its budget of "
            f"{gallery.max_bytes} bytes (max_bytes)."
        )
    if n_left_out:
        notes.append(
            f"{n_left_out} image(s) left out to keep the section within its budget of "
            f"{gallery.max_bytes} bytes (max_bytes)."
        )
    truncated = bool(n_left_out or n_dropped_pictures or gallery.notes)
    return cards, tables, notes, truncated


_RANKED = (
    '<p class="hint">Ranked by AP gain: how much the AP at this IoU would rise if the image\'s '
    "false positives were removed and its missed objects found. Click a picture to enlarge it, "
    "“table” for its boxes.</p>"
)
_NO_PICTURES = (
    "No pictures: boxes are drawn on a blank canvas of each image's size "
    "(give the images' folder with --images to see them)."
)


def gallery_section(gallery: Gallery | Mapping[str, Gallery], *, prefix: str = "image") -> str:
    """The report's ``#gallery`` section, at most ``gallery.max_bytes`` bytes (UTF-8).

    Cards and their tables are added in ranking order while they fit; a card whose picture
    would not fit is shown without it; when not even that fits the gallery stops. Each omission
    is stated in the section. A mapping detector name -> Gallery of two or more gives one
    section with a detector menu (:func:`several_galleries_section`); of one, that gallery's.
    """
    if isinstance(gallery, Mapping):
        if len(gallery) != 1:
            return several_galleries_section(gallery)
        gallery = next(iter(gallery.values()))
    cards, tables, notes, truncated = _body(gallery, prefix, "")
    if not gallery.has_pictures:
        notes.append(_NO_PICTURES)
    budget_text = (
        f"Budget: at most {gallery.max_images} images and {gallery.max_bytes / 1e6:.2f} MB for this "
        f"section; pictures downscaled and embedded as JPEG."
    )
    notes_html = "".join(f'<p class="hint note">{escape(n)}</p>' for n in notes)
    head = (
        f'<section id="gallery" data-cards="{len(cards)}" data-truncated="{str(truncated).lower()}">'
        f"<h2>Error browser: the images that cost the most"
        f'<span class="count">{escape(gallery.label)}, IoU {gallery.iou_threshold:g}; '
        f"{len(cards)} of {gallery.n_with_errors} images with errors</span></h2>"
        f'{_RANKED}<p class="hint">{escape(budget_text)}</p>{notes_html}{_filters([gallery])}'
    )
    return (
        f'{head}<div class="gallery">{"".join(cards)}</div>'
        f'<details class="image-tables" open><summary>Each image\'s table ({len(tables)} images)</summary>'
        f"{''.join(tables)}</details>"
        '<div id="viewer" hidden></div><output id="gallery-selftest" hidden></output></section>'
    )


def several_galleries_section(galleries: Mapping[str, Gallery]) -> str:
    """One ``#gallery`` section of several detectors' galleries, a menu choosing whose is shown.

    Each gallery keeps to its own ``max_bytes`` (the CLI splits ``--gallery-max-bytes`` evenly),
    so the section is at most their sum: the header and menus share one reserve. The first
    detector's cards keep the one-detector anchors (``#card-image-ID``); the k-th's are
    ``#card-image-dK-ID``. Every card and table has ``data-detector="K"`` (1, 2, ...); the
    page shows one detector at a time (the first at load).
    """
    named = list(galleries.items())
    if not named:
        raise ConfigError("gallery: expected at least one detector's gallery, found none")
    parts, tables, notes_html, labels = [], [], [], []
    total_cards = 0
    any_truncated = False
    for k, (name, g) in enumerate(named, start=1):
        prefix = "image" if k == 1 else f"image-d{k}"
        cards, table_rows, notes, truncated = _body(g, prefix, str(k))
        any_truncated = any_truncated or truncated
        total_cards += len(cards)
        parts.append("".join(cards))
        tables.append("".join(table_rows))
        labels.append(
            f'<li data-detector="{k}"><b>{escape(name)}</b>: {escape(g.label)}, IoU {g.iou_threshold:g}; '
            f"{len(cards)} of {g.n_with_errors} images with errors</li>"
        )
        notes_html += [
            f'<p class="hint note" data-detector="{k}">{escape(name)}: {escape(n)}</p>' for n in notes
        ]
    if not any(g.has_pictures for _, g in named):
        notes_html.append(f'<p class="hint note">{escape(_NO_PICTURES)}</p>')
    max_images = max(g.max_images for _, g in named)
    total = sum(g.max_bytes for _, g in named)
    budget_text = (
        f"Budget: at most {max_images} images per detector and {total / 1e6:.2f} MB for this section "
        f"({total / len(named) / 1e6:.2f} MB per detector); pictures downscaled and embedded as JPEG."
    )
    head = (
        f'<section id="gallery" data-cards="{total_cards}" data-detectors="{len(named)}" '
        f'data-truncated="{str(any_truncated).lower()}">'
        f"<h2>Error browser: the images that cost the most"
        f'<span class="count">{len(named)} detectors</span></h2>'
        f'<ul class="detectors">{"".join(labels)}</ul>{_RANKED}'
        f'<p class="hint">{escape(budget_text)}</p>{"".join(notes_html)}'
        f"{_filters([g for _, g in named], [name for name, _ in named])}"
    )
    return (
        f'{head}<div class="gallery">{"".join(parts)}</div>'
        f'<details class="image-tables" open><summary>Each image\'s table (the chosen detector)</summary>'
        f"{''.join(tables)}</details>"
        '<div id="viewer" hidden></div><output id="gallery-selftest" hidden></output></section>'
    )


_GALLERY_CSS = """
.gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:14px;margin:10px 0}
.card{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
.card[hidden]{display:none}
.pic{position:relative;width:100%;cursor:zoom-in;background:#eef1f6;overflow:hidden}
.pic img{position:absolute;left:0;top:0;width:100%;height:100%;border:0;border-radius:0;display:block}
.pic svg.boxes{position:absolute;left:0;top:0;width:100%;height:100%;overflow:visible}
svg.boxes rect.canvas{fill:#f2f4f7;stroke:#c4cad4}
svg.boxes text{font-family:system-ui,sans-serif;paint-order:stroke;stroke:#fff;stroke-width:3px;
stroke-linejoin:round;vector-effect:non-scaling-stroke}
svg.boxes g.off{display:none}
.card figcaption{font-size:12px;color:var(--fg)}
.card .name{overflow-wrap:anywhere}
.note{color:#a0471f}
.filters{display:flex;flex-wrap:wrap;gap:6px 18px;align-items:center;margin:8px 0}
.legend{font-size:12px;color:var(--muted)}
.chip{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 2px;vertical-align:middle}
.image-table tr.off{display:none}
.detectors{margin:4px 0;padding-left:20px;font-size:13px}
#viewer{position:fixed;left:0;top:0;z-index:10;background:rgba(20,24,32,.92);width:100vw;height:100vh;overflow:auto}
#viewer .card{margin:0;padding:0;border:0;border-radius:0}
#viewer .pic{cursor:zoom-out}
#viewer figcaption{background:#fff;padding:6px}
"""

_GALLERY_JS = r"""
(function () {
  "use strict";
  var section = document.getElementById("gallery");
  if (!section) { return; }
  var cls = document.getElementById("gallery-class");
  var outcome = document.getElementById("gallery-outcome");
  var conf = document.getElementById("gallery-confidence");
  var confText = document.getElementById("gallery-confidence-value");
  var shown = document.getElementById("gallery-shown");
  var det = document.getElementById("gallery-detector");  // several detectors: whose cards
  function ofDetector(el) { return !det || el.getAttribute("data-detector") === det.value; }
  function matches(el) {
    var c = cls.value, o = outcome.value, t = parseFloat(conf.value);
    if (c && el.getAttribute("data-class") !== c) { return false; }
    var score = el.getAttribute("data-score");
    if (score !== null && parseFloat(score) < t) { return false; }
    if (!o) { return true; }
    var out = el.getAttribute("data-outcome"), err = el.getAttribute("data-error");
    if (o === "tp") { return out === "tp" || out === "found"; }
    if (o === "fp") { return out === "fp"; }
    if (o.indexOf("fp:") === 0) { return out === "fp" && err === o.slice(3); }
    return out === o;
  }
  function apply() {
    var active = cls.value !== "" || outcome.value !== "" || parseFloat(conf.value) > 0;
    var nCards = 0, nBoxes = 0;
    Array.prototype.forEach.call(section.querySelectorAll(".gallery .card"), function (card) {
      if (!ofDetector(card)) { card.hidden = true; return; }
      var any = false;
      Array.prototype.forEach.call(card.querySelectorAll("g.box"), function (g) {
        var ok = matches(g);
        g.classList.toggle("off", !ok);
        if (ok) { any = true; nBoxes += 1; }
      });
      var visible = any || !active;
      card.hidden = !visible;
      if (visible) { nCards += 1; }
    });
    Array.prototype.forEach.call(section.querySelectorAll(".image-table tbody tr"), function (tr) {
      tr.classList.toggle("off", !matches(tr));
    });
    if (det) {
      Array.prototype.forEach.call(section.querySelectorAll(".image-table, p[data-detector]"),
        function (el) { el.hidden = !ofDetector(el); });
    }
    confText.textContent = parseFloat(conf.value).toFixed(2);
    shown.textContent = nCards + " images, " + nBoxes + " boxes shown";
    section.setAttribute("data-visible-cards", String(nCards));
    section.setAttribute("data-visible-boxes", String(nBoxes));
    return [nCards, nBoxes];
  }
  [cls, outcome, det].forEach(function (el) { if (el) { el.addEventListener("change", apply); } });
  conf.addEventListener("input", apply);
  var viewer = document.getElementById("viewer");
  function open(id) {
    var card = document.querySelector('.gallery .card[data-image="' + id + '"]' +
      (det ? '[data-detector="' + det.value + '"]' : ""));
    if (!card) { return false; }
    var copy = card.cloneNode(true);
    copy.removeAttribute("id"); copy.hidden = false;
    copy.style.width = copy.getAttribute("data-w") + "px";
    viewer.innerHTML = ""; viewer.appendChild(copy); viewer.hidden = false;
    return true;
  }
  function close() { viewer.hidden = true; viewer.innerHTML = ""; }
  section.addEventListener("click", function (e) {
    var pic = e.target.closest(".gallery .pic");
    if (pic) { e.preventDefault(); open(pic.parentNode.getAttribute("data-image")); }
  });
  viewer.addEventListener("click", close);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") { close(); } });
  function route() {  // #view-ID, or #view-dK-ID: detector K's card of image ID
    var m = /^#view-(?:d(\d+)-)?(-?\d+)$/.exec(location.hash);
    if (m && m[1] && det) { det.value = m[1]; apply(); }
    if (m) { open(m[2]); } else { close(); }
  }
  window.addEventListener("hashchange", route);
  function selftest() {
    var counts = {};
    var who = "";
    function set(c, o, t) {
      cls.value = c; outcome.value = o; conf.value = t;
      cls.dispatchEvent(new Event("change"));
      counts[who + c + "|" + o + "|" + t] = [
        parseInt(section.getAttribute("data-visible-cards"), 10),
        parseInt(section.getAttribute("data-visible-boxes"), 10)
      ];
    }
    var classes = Array.prototype.map.call(cls.options, function (x) { return x.value; });
    var outcomes = Array.prototype.map.call(outcome.options, function (x) { return x.value; });
    var detectors = det ? Array.prototype.map.call(det.options, function (x) { return x.value; }) : [""];
    detectors.forEach(function (d) {
      if (det) { det.value = d; who = d + "|"; }  // keys "K|class|outcome|confidence"
      classes.forEach(function (c) { outcomes.forEach(function (o) { set(c, o, "0"); }); });
      set("", "", "0.5"); set("", "", "0.9"); set("", "", "0");
    });
    if (det) { det.value = detectors[0]; apply(); }
    var out = document.getElementById("gallery-selftest");
    out.setAttribute("data-counts", JSON.stringify(counts));
    out.setAttribute("data-result", "done");
  }
  apply();
  route();
  if (location.hash === "#selftest-gallery") { selftest(); }
})();
"""


def _label_errors_table(doc: dict, table_id: str) -> tuple:
    """(summary, settings line, table) of one :class:`deteval.label_errors.LabelErrors` document."""
    thresholds = doc.get("thresholds", {})
    counts = doc.get("counts", {})
    summary = ", ".join(f"{escape(k)} {escape(v)}" for k, v in counts.items())
    setting = ", ".join(f"{escape(k)} {escape(v)}" for k, v in thresholds.items())
    rows = []
    for c in doc.get("candidates", []):
        if c["kind"] in ("wrong_class", "missing_annotation"):
            what = f"detection {c['detection']} ({c['category']}, score {c['score']:.3f})"
            if c["kind"] == "wrong_class":
                evidence = f"IoU {c['iou']:.3f} with ground truth {c['gt_annotation_id']} labelled {c['gt_category']}"
            else:
                best = c.get("best_iou")
                evidence = (
                    "no ground truth in the image"
                    if best is None
                    else f"best IoU {best:.3f} with any ground truth"
                )
        elif c["kind"] == "unfound":
            what = f"ground truth {c['gt_annotation_id']} ({c['category']})"
            best = c.get("best_iou")
            if best is None:
                evidence = "no detection in the image"
            elif c.get("best_detection") is None:
                evidence = f"best IoU {best:.3f}: no detection overlaps it"
            else:
                evidence = (
                    f"best IoU {best:.3f}: detection {c['best_detection']} ({c['best_detection_category']}, "
                    f"score {c['best_detection_score']:.3f})"
                )
        else:
            what = f"ground truth {c['gt_annotation_id']} and {c['other_annotation_id']} ({c['category']})"
            evidence = f"IoU {c['iou']:.3f}"
        box = ", ".join(f"{v:g}" for v in c.get("box") or [])
        rows.append(
            f'<tr data-kind="{escape(c["kind"])}"><td>{escape(c["kind"])}</td><td>{escape(c.get("image_id"))}</td>'
            f"<td>{escape(c.get('file_name', ''))}</td><td>{escape(what)}</td><td>{escape(evidence)}</td>"
            f"<td class=num>{escape(box)}</td></tr>"
        )
    table = (
        f'<div class="scroll"><table class="data" id="{table_id}"><thead><tr><th>kind</th><th>image id</th>'
        "<th>file</th><th>what</th><th>evidence</th><th>box (x, y, w, h)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    hint = (
        f'<p class="hint">Where the ground truth may be wrong, for a person to check; the scores above '
        f"do not change. IoU threshold {escape(doc.get('iou_threshold'))}; thresholds: {setting}.</p>"
    )
    return summary, hint, table


def label_errors_section(doc: dict) -> str:
    """The report's ``#label-errors`` section from a :class:`deteval.label_errors.LabelErrors` document."""
    summary, hint, table = _label_errors_table(doc, "label-errors-table")
    return (
        f'<section id="label-errors"><h2>Label-error candidates<span class="count">{summary}</span></h2>'
        f"{hint}{table}</section>"
    )


def several_label_errors_section(docs: Mapping[str, dict]) -> str:
    """One ``#label-errors`` section of several detectors: a heading and a table per detector.

    The candidates come from each detector's outcomes (its confident detections, the objects it
    missed), so they differ by detector; the first's table keeps the id ``label-errors-table``,
    the k-th's is ``label-errors-table-K``.
    """
    parts = [
        '<section id="label-errors"><h2>Label-error candidates'
        f'<span class="count">{len(docs)} detectors</span></h2>'
    ]
    for k, (name, doc) in enumerate(docs.items(), start=1):
        summary, hint, table = _label_errors_table(
            doc, "label-errors-table" if k == 1 else f"label-errors-table-{k}"
        )
        parts.append(
            f'<h3 data-detector="{k}">Detector {escape(name)}<span class="count">{summary}</span></h3>'
            f"{hint}{table}"
        )
    parts.append("</section>")
    return "".join(parts)


def _is_named(value: Any, kind: type) -> bool:
    """``value`` is a mapping detector name -> values of ``kind`` (or their documents)."""
    if isinstance(value, kind) or not isinstance(value, Mapping) or not value:
        return False
    return all(
        isinstance(v, kind) or (kind is not Gallery and isinstance(v, Mapping) and "candidates" in v)
        for v in value.values()
    )


def gallery_html(gallery: Any) -> tuple:
    """(the ``#gallery`` section, whether it shows several detectors) of a Gallery or a mapping."""
    if _is_named(gallery, Gallery):
        return gallery_section(gallery), len(gallery) > 1
    if not isinstance(gallery, Gallery):
        raise ConfigError(
            f"write_report: gallery: expected a Gallery or a mapping detector name -> Gallery, "
            f"found {type(gallery).__name__}"
        )
    return gallery_section(gallery), False


def label_errors_html(label_errors: Any) -> tuple:
    """(the ``#label-errors`` section, whether several detectors) of LabelErrors, a document or a mapping."""
    from deteval.label_errors import LabelErrors
    from deteval.plot._base import as_document

    if _is_named(label_errors, LabelErrors):
        docs = {str(k): as_document(v, what="label_errors") for k, v in label_errors.items()}
        if len(docs) > 1:
            return several_label_errors_section(docs), True
        return label_errors_section(next(iter(docs.values()))), False
    return label_errors_section(as_document(label_errors, what="label_errors")), False
