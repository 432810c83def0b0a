/*
 * Tiny stand-in for htmx polling (htmx is not installable from a Python registry here).
 * Markup: <div data-poll-url="/fragment/" data-poll-interval="5000">...</div>
 * Every interval, fetches the URL (same origin, cookies sent) and replaces the element's
 * innerHTML with the response; stops when the response carries the header "X-Poll-Stop: 1"
 * or the element gets data-poll-stop. Fragments are rendered by our own server templates.
 */
(function () {
  "use strict";
  function start(el) {
    var url = el.getAttribute("data-poll-url");
    var interval = parseInt(el.getAttribute("data-poll-interval") || "5000", 10);
    var timer = setInterval(function () {
      if (el.hasAttribute("data-poll-stop") || !document.body.contains(el)) { clearInterval(timer); return; }
      fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "poll" } })
        .then(function (response) {
          if (response.headers.get("X-Poll-Stop") === "1") { clearInterval(timer); }
          return response.ok ? response.text() : null;
        })
        .then(function (html) { if (html !== null) { el.innerHTML = html; } })
        .catch(function () { /* transient network error: try again next tick */ });
    }, Math.max(interval, 1000));
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-poll-url]").forEach(start);
  });
})();
