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
  // A student's live part sent again unchanged (its stream's first event just after the page
  // loaded, or after a reconnect): not swapped, so a choice ticked meanwhile stays ticked. The
  // part carries the digest of what it shows (data-shows); an event with anything else for the
  // page (an out-of-band swap) is always swapped.
  document.addEventListener("htmx:sseBeforeMessage", function (event) {
    var part = event.target;
    if (!part || part.id !== "class-live") return;
    var shown = part.querySelector("[data-shows]");
    var data = String(event.detail.data || "");
    if (!shown || data.indexOf("hx-swap-oob") !== -1) return;
    var sent = /data-shows="([0-9a-f]+)"/.exec(data);
    if (sent && sent[1] === shown.getAttribute("data-shows")) event.preventDefault();
  });
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

// A student's lab in the class (#lab[data-share-url]): their state reaches the instructor as
// they drag, coalesced: at most one post every SHARE_MS, only when the state changed, and the
// last state of a drag always (a trailing post once the gap ends), to data-drag-url (204).
// One post at a time: a newer state waits for the reply to the one on its way, so that a slow
// post (two server workers, a loaded room) can never be stored after it and win.
(function () {
  "use strict";
  var SHARE_MS = 1000;
  var lastSent = null;
  var lastAt = -Infinity;
  var timer = 0;
  var posting = false;
  var queued = false; // a state changed while a post was on its way

  function schedule() {
    if (!timer) {
      timer = window.setTimeout(send, Math.max(0, lastAt + SHARE_MS - Date.now()));
    }
  }

  function form() {
    return document.querySelector("#lab[data-share-url] #lab-form");
  }

  function send() {
    timer = 0;
    if (posting) {
      queued = true;
      return;
    }
    var lab = document.querySelector("#lab[data-share-url]");
    var labForm = form();
    if (!lab || !labForm) {
      return;
    }
    var body = new URLSearchParams(new FormData(labForm)).toString();
    if (body === lastSent) {
      return;
    }
    lastSent = body;
    lastAt = Date.now();
    posting = true;
    fetch(lab.dataset.dragUrl, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true" }
    }).catch(function () {
      lastSent = null; // not delivered: the next change (or submit) sends it again
    }).finally(function () {
      posting = false;
      if (queued) {
        queued = false;
        schedule();
      }
    });
  }

  function changed(event) {
    var target = event.target;
    if (!(target instanceof Element) || !target.closest("#lab[data-share-url] #lab-form")) {
      return;
    }
    if (event.type === "submit") {
      event.preventDefault(); // htmx shows the results; the state goes by fetch
    }
    schedule();
  }

  document.addEventListener("input", changed);
  document.addEventListener("submit", changed);
  // The state sent to everyone replaces the lab: that state is what the server holds now.
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (target && target.id === "class-own-lab") {
      var labForm = form();
      lastSent = labForm ? new URLSearchParams(new FormData(labForm)).toString() : null;
    }
  });
})();
