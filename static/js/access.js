/* What every page needs for keyboard and screen-reader users (loaded by base.html):
   - every region that scrolls (a wide table, a code listing, a JSON answer) can be scrolled by keyboard: it gets a
     tab stop, the region role and a name (its table's caption, else the nearest heading before it), and loses them
     again when a wider window makes it fit (WCAG 2.1.1, axe's scrollable-region-focusable);
   - after a search that failed, the fields the errors name ([data-error-fields] on the error summary) get
     aria-invalid and are described by the summary, and the focus moves to the first of them; after a search that
     answered, the focus moves to the answer ([data-answer]), not back to the top of the page (WCAG 3.3.1, 2.4.3). */
(function () {
  "use strict";
  var SELECTOR = ".table-scroll, .code-scroll, pre, .picker, figure";

  function nameOf(region) {
    var caption = region.querySelector("caption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    var node = region;
    while (node && node !== document.body) {
      var previous = node.previousElementSibling;
      while (previous) {
        if (/^H[1-6]$/.test(previous.tagName)) return previous.textContent.trim();
        var inner = previous.querySelectorAll("h1, h2, h3, h4, h5, h6");
        if (inner.length) return inner[inner.length - 1].textContent.trim();
        previous = previous.previousElementSibling;
      }
      node = node.parentElement;
    }
    return "Scrollable content";
  }

  function mark() {
    document.querySelectorAll(SELECTOR).forEach(function (region) {
      var scrolls = region.scrollWidth > region.clientWidth + 1 || region.scrollHeight > region.clientHeight + 1;
      if (scrolls && !region.hasAttribute("tabindex")) {
        region.setAttribute("tabindex", "0");
        region.dataset.scrollRegion = "";
        if (!region.hasAttribute("role")) region.setAttribute("role", "region");
        if (!region.hasAttribute("aria-label") && !region.hasAttribute("aria-labelledby")) {
          region.setAttribute("aria-label", nameOf(region) + " (scrolls)");
        }
      } else if (!scrolls && region.hasAttribute("data-scroll-region")) {
        region.removeAttribute("tabindex");
        region.removeAttribute("data-scroll-region");
      }
    });
  }

  function focusAnswerOrError() {
    var summary = document.querySelector("[data-error-fields]");
    if (summary) {
      if (!summary.id) summary.id = "form-errors";
      var first = null;
      summary.getAttribute("data-error-fields").split(/\s+/).filter(Boolean).forEach(function (name) {
        document.querySelectorAll("form [name='" + name.replace(/'/g, "") + "']").forEach(function (field) {
          field.setAttribute("aria-invalid", "true");
          var described = (field.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
          if (described.indexOf(summary.id) < 0) field.setAttribute("aria-describedby", described.concat(summary.id).join(" "));
          first = first || field;
        });
      });
      if (!first) { summary.setAttribute("tabindex", "-1"); first = summary; }
      first.focus();
      return;
    }
    var answer = document.querySelector("[data-answer]");
    if (answer && window.location.search) {
      answer.setAttribute("tabindex", "-1");
      answer.focus();
    }
  }

  var timer;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(mark, 150); });
  document.addEventListener("toggle", mark, true);  // a <details> opened: its table may scroll now
  function start() { mark(); focusAnswerOrError(); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
