// The live class's pages: say so while the stream is down (htmx's SSE extension reconnects by
// itself; the stream then sends the whole current state, so nothing else is needed here).
(function () {
  "use strict";
  function mark(down) {
    var note = document.getElementById("live-connection");
    if (note) note.hidden = !down;
  }
  document.addEventListener("htmx:sseError", function () { mark(true); });
  document.addEventListener("htmx:sseOpen", function () { mark(false); });
  // An answer that could not be stored (503) comes back as the student's part with the reason:
  // shown where the answer was, like a 409 (base.html swaps those), not dropped by htmx.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "class-live" && event.detail.xhr.status === 503) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
