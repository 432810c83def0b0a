// The rules page's filter box: hides the rules whose id and text do not hold every typed word.
// Plain JS, no library; without JS the page lists every rule as before.
(function () {
  "use strict";
  var input = document.getElementById("rule-filter");
  if (!input) return;
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.rule"));
  var index = document.querySelector(".rule-index");
  var links = index ? Array.prototype.slice.call(index.querySelectorAll("a:not(.area-link)")) : [];
  var areas = Array.prototype.slice.call(document.querySelectorAll("section.rule-area"));
  var indexAreas = index ? Array.prototype.slice.call(index.querySelectorAll("[data-area]")) : [];
  var count = document.getElementById("rule-filter-count");
  var empty = document.getElementById("rule-filter-empty");
  var texts = sections.map(function (s) { return s.textContent.toLowerCase(); });

  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    var visible = {};
    sections.forEach(function (section, i) {
      var hit = words.every(function (w) { return texts[i].indexOf(w) !== -1; });
      section.hidden = !hit;
      if (hit) { shown += 1; visible["#" + section.id] = true; }
    });
    links.forEach(function (a) { a.hidden = !visible[a.getAttribute("href")]; });
    // An area with no matching rule is hidden whole, on the page and in the index.
    var openAreas = {};
    areas.forEach(function (area) {
      var any = area.querySelector("section.rule:not([hidden])") !== null;
      area.hidden = !any;
      if (any) { openAreas[area.id.replace(/^area-/, "")] = true; }
    });
    indexAreas.forEach(function (row) { row.hidden = !openAreas[row.getAttribute("data-area")]; });
    if (count) count.textContent = words.length ? shown + " of " + sections.length + " rules" : sections.length + " rules";
    if (empty) empty.hidden = shown !== 0;
    var url = new URL(window.location.href);
    if (words.length) url.searchParams.set("q", input.value); else url.searchParams.delete("q");
    window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  }

  var initial = new URLSearchParams(window.location.search).get("q");
  if (initial && !window.location.hash) input.value = initial;
  input.addEventListener("input", apply);
  input.form && input.form.addEventListener("submit", function (e) { e.preventDefault(); apply(); });
  apply();
})();
