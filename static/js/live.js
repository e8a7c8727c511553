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
})();
