// Review page: show the objection-type fields only when "Objection" is chosen (without JS all fields show).
document.documentElement.classList.add("js");
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("new-comment");
  const kind = form && form.querySelector("[data-kind-select]");
  if (!kind) return;
  const sync = () => {
    for (const el of form.querySelectorAll("[data-objection-only]")) el.hidden = kind.value !== "objection";
  };
  kind.addEventListener("change", sync);
  sync();
});

// Findings of one rule are folded into one line; a link to one of them (#finding-N) opens its fold.
function openFoldOf(hash) {
  const target = hash && hash.startsWith("#finding-") && document.getElementById(hash.slice(1));
  for (let el = target && target.parentElement; el; el = el.parentElement) {
    if (el.tagName === "DETAILS") el.open = true;
  }
  if (target) target.scrollIntoView();
}
document.addEventListener("DOMContentLoaded", () => openFoldOf(window.location.hash));
window.addEventListener("hashchange", () => openFoldOf(window.location.hash));
