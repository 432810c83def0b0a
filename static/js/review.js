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
