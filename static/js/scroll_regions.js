/* Every region that scrolls sideways (a wide table, a code listing, a JSON answer) can be scrolled by keyboard: it
   gets a tab stop, the region role and a name (its table's caption, else the nearest heading before it), and loses
   them again when a wider window makes it fit (WCAG 2.1.1, axe's scrollable-region-focusable). */
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

  var timer;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(mark, 150); });
  document.addEventListener("toggle", mark, true);  // a <details> opened: its table may scroll now
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mark); else mark();
})();
