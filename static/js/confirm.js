// Confirmation panel behaviour (progressive enhancement over htmx). The panel is a plain form
// button without this file; with it, a 429 (queue full) or 503 (torch unavailable) answer is
// swapped into the panel like a 200, so its message shows where the result would have.
(function () {
  "use strict";

  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var status = event.detail.xhr.status;
    if (target && target.id === "confirm" && (status === 429 || status === 503)) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
