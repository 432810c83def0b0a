// Buttons marked data-print open the browser's print dialog (an external script: the CSP allows no inline
// handlers such as onclick=).
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-print]");
  if (button) {
    event.preventDefault();
    window.print();
  }
});
