// The dashboard's and the projector's keyboard shortcuts: a key (no Ctrl, Alt or Meta) clicks
// the button whose aria-keyshortcuts names it, unless the keyboard is typing in a field or the
// instructor turned the shortcuts off (#keys-on: one key is easy to press by mistake, WCAG
// 2.1.4). The key hints (.live-key) show only where this script runs. The projector's
// full-screen button uses the Fullscreen API.
(function () {
  "use strict";
  var root = document.documentElement;
  root.classList.add("keys-on");

  function typing(target) {
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, select, textarea, [contenteditable]:not([contenteditable=false])"));
  }

  function enabled() {
    var toggle = document.getElementById("keys-on");
    return !toggle || toggle.checked;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey || event.repeat || event.isComposing) return;
    if (event.defaultPrevented || typing(event.target) || !enabled()) return;
    if (!event.key || event.key.length !== 1) return;
    var key = event.key.toUpperCase();
    var buttons = document.querySelectorAll("button[aria-keyshortcuts]");
    for (var i = 0; i < buttons.length; i++) {
      var button = buttons[i];
      if (button.getAttribute("aria-keyshortcuts").toUpperCase() === key && !button.disabled && !button.hidden) {
        event.preventDefault();
        button.click();
        return;
      }
    }
  });

  function ready() {
    var keys = document.querySelector(".live-keys");
    if (keys) keys.hidden = false;
    var toggle = document.getElementById("keys-on");
    if (toggle) {
      toggle.addEventListener("change", function () { root.classList.toggle("keys-on", toggle.checked); });
    }
    var full = document.getElementById("fullscreen");
    if (full && document.fullscreenEnabled) {
      full.hidden = false;
      full.addEventListener("click", function () {
        if (document.fullscreenElement) document.exitFullscreen();
        else root.requestFullscreen().catch(function () {});
      });
      document.addEventListener("fullscreenchange", function () {
        full.firstChild.nodeValue = document.fullscreenElement ? "Leave full screen" : "Full screen";
      });
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
