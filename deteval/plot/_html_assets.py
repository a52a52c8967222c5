"""The inline style sheet and script of the HTML report (:mod:`deteval.plot.html`).

The script sorts the tables, checks that every image decoded, and runs a self-test of the
sorting when the page is opened with ``#selftest``.
"""

from __future__ import annotations

_CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#dde2ea;--bg:#f6f7f9;--card:#fff;--accent:#2c5fab;--hl:#fff4d6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg)}
header{background:#1f3358;color:#fff;padding:22px 32px 16px}
header h1{margin:0 0 4px;font-size:24px;font-weight:600;overflow-wrap:anywhere}
header p{margin:0;color:#c9d4e8}
nav{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid var(--line);padding:8px 32px}
nav a{color:var(--accent);text-decoration:none;margin-right:18px;font-weight:500}
main{padding:8px 32px 40px;max-width:1400px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:4px 20px 16px;margin:18px 0}
h2{font-size:18px;margin:14px 0 10px}h3{font-size:15px;margin:16px 0 8px}
.count{font-size:13px;font-weight:400;color:var(--muted);margin-left:6px}
.scroll{overflow-x:auto;max-width:100%}
table.data{border-collapse:collapse;font-size:13px;margin:6px 0}
table.data th,table.data td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:left;vertical-align:top}
table.data thead th{background:#eef1f6;position:sticky;top:0;white-space:nowrap}
table.data td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.data td.na{color:#9aa2b1}
table.data th[data-type=num]{text-align:right}
.cols{display:flex;flex-wrap:wrap;gap:0 18px;align-items:flex-start}
.cols>section{flex:1 1 340px;min-width:0}
.cols>#metrics{flex:0 1 auto}
table.data tbody tr:hover{background:#f3f6fb}
table.sortable thead th{cursor:pointer;user-select:none}
table.sortable thead th::after{content:" \\2195";color:#9aa2b1;font-size:11px}
table.sortable thead th[aria-sort=ascending]::after{content:" \\25B2";color:var(--accent)}
table.sortable thead th[aria-sort=descending]::after{content:" \\25BC";color:var(--accent)}
#class-table{min-width:480px}
#classes .scroll{max-height:640px;overflow-y:auto}
tr.differs{background:var(--hl)}tr.total td{font-weight:600}
figure{margin:14px 0;max-width:100%}
figure img{max-width:100%;height:auto;border:1px solid var(--line);border-radius:4px;background:#fff}
figcaption{color:var(--muted);font-size:12px;margin-top:4px}
.hint{color:var(--muted);font-size:12.5px;margin:4px 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
details{margin:8px 0}summary{cursor:pointer;color:var(--accent)}
ul.verdicts{padding-left:18px}
footer{color:var(--muted);font-size:12px;padding:0 32px 30px}
"""

_JS = r"""
(function () {
  "use strict";
  function isMissing(cell) { return !cell || !cell.hasAttribute("data-v"); }
  function sortTable(table, col, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var numeric = table.tHead.rows[0].cells[col].getAttribute("data-type") === "num";
    var index = new Map();
    rows.forEach(function (r, i) { index.set(r, i); });
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col];
      var mx = isMissing(x), my = isMissing(y);
      if (mx || my) { return mx === my ? index.get(a) - index.get(b) : (mx ? 1 : -1); }
      var vx = x.getAttribute("data-v"), vy = y.getAttribute("data-v");
      var c = numeric ? parseFloat(vx) - parseFloat(vy) : vx.localeCompare(vy);
      return c === 0 ? index.get(a) - index.get(b) : dir * c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === col) { th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); }
      else { th.removeAttribute("aria-sort"); }
    });
  }
  function onHeader(table, col, th) {
    var current = th.getAttribute("aria-sort");
    var first = th.getAttribute("data-type") === "num" ? -1 : 1;
    var dir = current === null ? first : (current === "ascending" ? -1 : 1);
    sortTable(table, col, dir);
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener("click", function () { onHeader(table, col, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onHeader(table, col, th); }
      });
    });
  });
  function column(table, col) {
    return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
      var c = r.cells[col]; return isMissing(c) ? null : c.getAttribute("data-v");
    });
  }
  function ordered(values, numeric, dir) {
    var seenMissing = false;
    for (var i = 0; i < values.length; i++) {
      if (values[i] === null) { seenMissing = true; continue; }
      if (seenMissing) { return "a value after n/a"; }
      if (i > 0 && values[i - 1] !== null) {
        var c = numeric ? parseFloat(values[i]) - parseFloat(values[i - 1]) : values[i].localeCompare(values[i - 1]);
        if (dir * c < 0) { return "out of order at row " + i; }
      }
    }
    return "";
  }
  function selftest() {
    var out = document.getElementById("selftest");
    var table = document.getElementById("class-table");
    var problems = [];
    var ths = table.tHead.rows[0].cells, ap = -1, name = -1;
    for (var i = 0; i < ths.length; i++) {
      if (ap < 0 && /^AP/.test(ths[i].textContent)) { ap = i; }
      if (name < 0 && ths[i].textContent === "class") { name = i; }
    }
    ths[ap].click();
    var p = ordered(column(table, ap), true, -1); if (p) { problems.push("AP descending: " + p); }
    if (ths[ap].getAttribute("aria-sort") !== "descending") { problems.push("AP first click not descending"); }
    ths[ap].click();
    p = ordered(column(table, ap), true, 1); if (p) { problems.push("AP ascending: " + p); }
    ths[name].click();
    p = ordered(column(table, name), false, 1); if (p) { problems.push("class ascending: " + p); }
    ths[0].click(); ths[0].click();
    p = ordered(column(table, 0), true, 1); if (p) { problems.push("id ascending: " + p); }
    out.setAttribute("data-result", problems.length ? "fail: " + problems.join("; ") : "pass");
    out.setAttribute("data-rows", String(table.tBodies[0].rows.length));
  }
  window.addEventListener("load", function () {
    var images = Array.prototype.slice.call(document.images);
    var ok = images.every(function (img) { return img.complete && img.naturalWidth > 0; });
    document.body.setAttribute("data-images", String(images.length));
    document.body.setAttribute("data-images-ok", ok ? "true" : "false");
    if (location.hash === "#selftest") { selftest(); }
  });
})();
"""
