// Lab behaviour (progressive enhancement over htmx). Without this file the number inputs and
// the submit buttons do everything; with it the sliders appear and mirror the number inputs,
// 422 fragments (which carry the inline error message) are swapped in, each input marks
// itself invalid from the error list the server returned, and the address follows the state.
(function () {
  "use strict";

  function showSliders(root) {
    root.querySelectorAll("input.lab-slider[hidden]").forEach(function (slider) {
      var number = document.getElementById(slider.dataset.sync);
      if (number && number.value !== "") {
        slider.value = number.value;
      }
      slider.hidden = false;
    });
  }

  function sliderFor(number) {
    return document.querySelector('input.lab-slider[data-sync="' + number.id + '"]');
  }

  // Capture phase: this runs before htmx's listener on the form reads the values, so the
  // request always carries the slider's new value in the (named) number input.
  document.addEventListener(
    "input",
    function (event) {
      var input = event.target;
      if (!(input instanceof HTMLInputElement) || !input.closest("#lab")) {
        return;
      }
      if (input.classList.contains("lab-slider")) {
        var number = document.getElementById(input.dataset.sync);
        if (number) {
          number.value = input.value;
        }
      } else if (input.id) {
        var slider = sliderFor(input);
        if (slider && input.value !== "" && isFinite(Number(input.value))) {
          slider.value = input.value;
        }
      }
    },
    true
  );

  // A 422 answer is still the lab's answer: it holds the message that names the field.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (detail.xhr.status === 422 && detail.target && detail.target.closest("#lab")) {
      detail.shouldSwap = true;
      detail.isError = false;
    }
  });

  // The page address follows the state. The server names it in X-Lab-Url; writing history
  // costs a few milliseconds in Chromium, so it is written once the answers pause, and a
  // gesture (a drag, a held key) makes one entry: Back returns to where the gesture began.
  var GESTURE_MS = 700;
  var SETTLE_MS = 120;
  var urlTimer = 0;
  var lastWrite = 0;
  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail.xhr;
    var url = event.detail.successful && xhr ? xhr.getResponseHeader("X-Lab-Url") : null;
    if (!url) {
      return;
    }
    clearTimeout(urlTimer);
    urlTimer = setTimeout(function () {
      if (url === location.pathname + location.search) {
        return;
      }
      var now = Date.now();
      // {htmx: true}: on Back and Forward htmx reloads the state from the server.
      if (now - lastWrite < GESTURE_MS) {
        history.replaceState({ htmx: true }, "", url);
      } else {
        if (!(history.state && history.state.htmx)) {
          // The entry being left must be one htmx restores too (the page as first loaded).
          history.replaceState({ htmx: true }, "", location.href);
        }
        history.pushState({ htmx: true }, "", url);
      }
      lastWrite = now;
    }, SETTLE_MS);
  });

  // After an update, the inputs of the form it belongs to reflect the returned error list.
  function markInvalid(results) {
    var form = results.id === "ring-results"
      ? document.getElementById("ring-form")
      : document.getElementById("lab-form");
    if (!form) {
      return;
    }
    form.querySelectorAll("input[id]").forEach(function (input) {
      var error = results.querySelector('[data-error-for="' + input.id + '"]');
      if (error) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", error.id);
      } else {
        input.removeAttribute("aria-invalid");
        input.removeAttribute("aria-describedby");
      }
    });
  }

  // The swapped target is detached after an outerHTML swap, so look the results up afresh.
  // A preset or mode link re-renders the whole lab: keep the keyboard on the same link.
  document.addEventListener("htmx:afterSwap", function (event) {
    var config = event.detail.requestConfig;
    var link = config && config.elt;
    if (link && link.matches && link.matches(".lab-presets a, .lab-modes a")) {
      var same = document.querySelector(
        '#lab a[hx-get="' + CSS.escape(link.getAttribute("hx-get")) + '"]'
      );
      if (same) {
        same.focus();
      }
    }
    ["lab-results", "ring-results"].forEach(function (id) {
      var results = document.getElementById(id);
      if (results) {
        markInvalid(results);
      }
    });
  });

  document.addEventListener("htmx:load", function (event) {
    showSliders(event.detail.elt);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      showSliders(document);
    });
  } else {
    showSliders(document);
  }
})();
