// The discussion timer (#timer, live/_peer.html): the page says the server's end time; this
// adds the time left, once a second. It decides nothing: the instructor opens the re-vote.
// The element is replaced whenever the page's stream sends its part again, so it is looked up
// on every tick rather than held.
(function () {
  "use strict";
  function left(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var m = Math.floor(s / 60);
    var r = s % 60;
    return m + ":" + (r < 10 ? "0" : "") + r;
  }
  function tick() {
    var timer = document.getElementById("timer");
    if (!timer) return;
    var ends = Date.parse(timer.getAttribute("data-ends"));
    var out = timer.querySelector(".live-timer-left");
    if (!out || isNaN(ends)) return;
    var ms = ends - Date.now();
    var text = ms > 0 ? " (" + left(ms) + " left)" : " (time is up)";
    if (out.textContent !== text) out.textContent = text;
    timer.classList.toggle("live-timer-up", ms <= 0);
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSwap", tick);
  document.addEventListener("htmx:sseMessage", tick);
})();
