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

  var FOLLOWERS = ["lab-charts", "lab-details"];

  // Capture phase: this runs before htmx's listener on the form reads the values, so the
  // request always carries the slider's new value in the (named) number input.
  document.addEventListener(
    "input",
    function (event) {
      var input = event.target;
      if (!(input instanceof HTMLInputElement) || !input.closest("#lab")) {
        return;
      }
      // The pictures and the details follow by their own requests (a few times a second, and
      // once the inputs pause): until their answers replace them they describe earlier
      // inputs, and say so to assistive technology.
      if (input.closest("#lab-form")) {
        FOLLOWERS.forEach(function (id) {
          var element = document.getElementById(id);
          if (element) {
            element.setAttribute("aria-busy", "true");
          }
        });
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

  // A 422 answer is still the lab's answer: it holds the message that names the field. For
  // the lab's own results the last valid results stay, visibly marked stale, and the messages
  // go to the pane's problem list and to each field; anything else swaps the answer in.
  // The details below the pane are marked too, but only their own answer (which replaces
  // them, once the inputs pause) clears the mark.
  // The marks are classes, so base.html's htmx-config sets attributesToSettle to []: htmx
  // would otherwise give a swapped element the old one's class and, 20 ms later, the server's,
  // dropping a mark that a 422 answered in between had set.
  var STALE = ["lab-results", "lab-summary"];

  function setStale(stale) {
    STALE.forEach(function (id) {
      var element = document.getElementById(id);
      if (element) {
        element.classList.toggle("lab-stale", stale);
      }
    });
    FOLLOWERS.forEach(function (id) {
      var element = document.getElementById(id);
      if (element && stale) {
        element.classList.add("lab-stale");
      }
    });
  }

  function showProblems(fragment) {
    var problems = document.getElementById("lab-problems");
    var errors = fragment.querySelector(".lab-errors");
    if (!problems || !errors) {
      return false;
    }
    var results = document.getElementById("lab-results");
    var hasResults = results && results.querySelector(".lab-figures");
    problems.replaceChildren();
    if (hasResults) {
      var note = document.createElement("p");
      note.className = "lab-stale-note";
      note.textContent = "Stale: the results below are for the last valid inputs.";
      problems.appendChild(note);
    }
    problems.appendChild(document.importNode(errors, true));
    var status = document.getElementById("lab-status");
    var first = errors.querySelector("li");
    if (status && first) {
      status.textContent = first.textContent;
    }
    setStale(Boolean(hasResults));
    markConfirm(null);
    markInvalid(document.getElementById("lab-form"), problems);
    return Boolean(hasResults);
  }

  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    if (detail.xhr.status !== 422 || !detail.target || !detail.target.closest("#lab")) {
      return;
    }
    detail.isError = false;
    detail.shouldSwap = true;
    if (FOLLOWERS.indexOf(detail.target.id) >= 0) {
      // The pane's answer for the same inputs already named the problem. This one keeps what
      // it shows, marked stale: an answer for earlier, valid inputs may have replaced it since.
      detail.shouldSwap = false;
      var follower = document.getElementById(detail.target.id);
      if (follower) {
        follower.classList.add("lab-stale");
      }
    } else if (detail.target.id === "lab-results") {
      var fragment = document.createElement("template");
      fragment.innerHTML = detail.serverResponse;
      if (showProblems(fragment.content)) {
        detail.shouldSwap = false;
      }
    }
  });

  // The pictures follow a drag a few times a second: a refresh-charts event at most every
  // CHARTS_MS while the form's inputs change (the first at once), and one more after the last
  // change, so they always end on the inputs' last state. htmx's own throttle drops that last
  // one, hence this. Each answer costs more than the figures' (bench/README.md).
  var CHARTS_MS = 200;
  var chartsTimer = 0;
  var chartsPending = false;

  function refreshCharts() {
    var charts = document.getElementById("lab-charts");
    if (charts && window.htmx) {
      window.htmx.trigger(charts, "refresh-charts");
    }
  }

  function chartsTick() {
    if (chartsPending) {
      chartsPending = false;
      refreshCharts();
      chartsTimer = window.setTimeout(chartsTick, CHARTS_MS);
    } else {
      chartsTimer = 0;
    }
  }

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.closest("#lab-form")) {
      return;
    }
    if (chartsTimer) {
      chartsPending = true;
      return;
    }
    refreshCharts();
    chartsTimer = window.setTimeout(chartsTick, CHARTS_MS);
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
    // In a live class (data-share-url) the page's address stays the class's.
    if (!url || document.querySelector("#lab[data-share-url]")) {
      return;
    }
    showState(url);
    clearTimeout(urlTimer);
    urlTimer = setTimeout(function () {
      // Presenter mode as it is when the address is written (it may have been left since).
      url = withPresent(url);
      if (url === location.pathname + location.search) {
        return;
      }
      var now = Date.now();
      // {htmx: true}: on Back and Forward htmx reloads the state from the server.
      if (now - lastWrite < GESTURE_MS) {
        history.replaceState({ htmx: true }, "", url + "#lab");
      } else {
        if (!(history.state && history.state.htmx)) {
          // The entry being left must be one htmx restores too (the page as first loaded).
          history.replaceState({ htmx: true }, "", location.href);
        }
        history.pushState({ htmx: true }, "", url + "#lab");
      }
      lastWrite = now;
    }, SETTLE_MS);
  });

  // The inputs of a form reflect an error list: aria-invalid, and the message at the field.
  function markInvalid(form, errors) {
    if (!form || !errors) {
      return;
    }
    form.querySelectorAll("input[id]").forEach(function (input) {
      var error = errors.querySelector('[data-error-for="' + input.id + '"]');
      var message = document.getElementById("msg-" + input.id);
      if (error) {
        if (!message) {
          message = document.createElement("p");
          message.className = "lab-field-error";
          message.id = "msg-" + input.id;
          input.insertAdjacentElement("afterend", message);
        }
        message.textContent = error.textContent.trim();
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", message.id);
      } else {
        if (message) {
          message.remove();
        }
        input.removeAttribute("aria-invalid");
        input.removeAttribute("aria-describedby");
      }
    });
  }

  // The share link, the marked preset and presenter mode follow the state.
  function presenting() {
    var lab = document.getElementById("lab");
    return Boolean(lab && lab.classList.contains("presenting"));
  }

  function withPresent(url) {
    var clean = url.replace(/([?&])present=1(&|$)/, function (match, before, after) {
      return after ? before : "";
    });
    if (!presenting()) {
      return clean;
    }
    return clean + (clean.indexOf("?") < 0 ? "?" : "&") + "present=1";
  }

  // A real torch.distributed result belongs to the inputs it ran with: once the lab's state
  // differs (or is invalid), it says so and asks for a new run.
  function markConfirm(query) {
    var result = document.querySelector('#confirm [data-confirm="result"]');
    if (!result) {
      return;
    }
    var ran = result.dataset.query || "";
    var same = query !== null && ran !== "" &&
      (query === ran || query.indexOf(ran + "&") === 0);
    result.classList.toggle("confirm-stale", !same);
    var note = result.querySelector(".confirm-stale-note");
    if (note) {
      note.hidden = same;
    }
  }

  function showState(url) {
    var share = document.querySelector("#lab [data-copy-link]");
    var shareUrl = url.replace(/([?&])present=1(&|$)/, function (match, before, after) {
      return after ? before : "";
    });
    if (share) {
      share.href = shareUrl + "#lab";
    }
    var query = shareUrl.split("?")[1] || "";
    markConfirm(query);
    document.querySelectorAll("#lab .lab-presets a").forEach(function (link) {
      var linkQuery = (link.getAttribute("href").split("#")[0].split("?")[1]) || "";
      if (linkQuery === query) {
        link.setAttribute("aria-current", "true");
      } else {
        link.removeAttribute("aria-current");
      }
    });
  }

  function setPresenting(on) {
    var lab = document.getElementById("lab");
    var toggle = document.querySelector("#lab [data-present-toggle]");
    if (!lab || !toggle) {
      return;
    }
    lab.classList.toggle("presenting", on);
    toggle.textContent = on ? "Leave presenter mode" : "Presenter mode";
    var url = withPresent(location.pathname + location.search);
    history.replaceState(history.state, "", url + "#lab");
    lab.scrollIntoView();
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!(target instanceof Element)) {
      return;
    }
    var toggle = target.closest("#lab [data-present-toggle]");
    if (toggle) {
      event.preventDefault();
      setPresenting(!presenting());
      return;
    }
    var copy = target.closest("#lab .lab-copy");
    if (copy) {
      var share = document.querySelector("#lab [data-copy-link]");
      var done = function (text) {
        copy.textContent = text;
        setTimeout(function () {
          copy.textContent = "Copy link";
        }, 2000);
      };
      if (share && navigator.clipboard) {
        navigator.clipboard.writeText(share.href).then(
          function () {
            done("Copied");
          },
          function () {
            done("Copy failed: use the link");
          }
        );
      }
    }
  });

  function addCopyButton(root) {
    var share = root.querySelector ? root.querySelector("[data-copy-link]") : null;
    if (!share || !navigator.clipboard || share.parentNode.querySelector(".lab-copy")) {
      return;
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "lab-copy";
    button.textContent = "Copy link";
    share.insertAdjacentElement("afterend", button);
  }

  // Play, pause and step the SGD path: both schemes' lines drawn up to step k.
  function addPlayer(root) {
    var figures = root.querySelectorAll ? root.querySelectorAll("figure.lab-chart-wide") : [];
    if (root.matches && root.matches("figure.lab-chart-wide")) {
      figures = [root];
    }
    Array.prototype.forEach.call(figures, function (figure) {
      if (figure.querySelector(".lab-player")) {
        return;
      }
      var lines = figure.querySelectorAll("polyline.chart-line");
      if (!lines.length) {
        return;
      }
      var full = Array.prototype.map.call(lines, function (line) {
        return line.getAttribute("points").split(" ");
      });
      var last = full[0].length - 1;
      var step = last;
      var timer = 0;
      var bar = document.createElement("div");
      bar.className = "lab-player";
      bar.setAttribute("role", "group");
      bar.setAttribute("aria-label", "SGD path player");
      var play = document.createElement("button");
      play.type = "button";
      var stepButton = document.createElement("button");
      stepButton.type = "button";
      stepButton.textContent = "Step";
      var reset = document.createElement("button");
      reset.type = "button";
      reset.textContent = "Start over";
      var where = document.createElement("span");
      where.className = "lab-player-step";
      bar.append(play, stepButton, reset, where);
      figure.appendChild(bar);

      function draw() {
        lines.forEach(function (line, index) {
          line.setAttribute("points", full[index].slice(0, step + 1).join(" "));
        });
        where.textContent = "step " + step + " of " + last;
        play.textContent = timer ? "Pause" : "Play";
      }
      function stop() {
        clearInterval(timer);
        timer = 0;
        draw();
      }
      play.addEventListener("click", function () {
        if (timer) {
          stop();
          return;
        }
        if (step >= last) {
          step = 0;
        }
        timer = setInterval(function () {
          if (!figure.isConnected || step >= last) {
            stop();
            return;
          }
          step += 1;
          draw();
        }, Math.max(30, Math.min(200, 6000 / last)));
        draw();
      });
      stepButton.addEventListener("click", function () {
        clearInterval(timer);
        timer = 0;
        step = step >= last ? 0 : step + 1;
        draw();
      });
      reset.addEventListener("click", function () {
        clearInterval(timer);
        timer = 0;
        step = 0;
        draw();
      });
      draw();
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
    var target = event.detail.target;
    if (target && target.id === "lab-results" && event.detail.xhr.status === 200) {
      var problems = document.getElementById("lab-problems");
      if (problems) {
        problems.replaceChildren();
      }
      setStale(false);
    }
    var labResults = document.getElementById("lab-results");
    var ringResults = document.getElementById("ring-results");
    // The fields' marks follow the pane's answers only: a picture or the details answer for
    // inputs that may since have become invalid.
    if (labResults && !(target && FOLLOWERS.indexOf(target.id) >= 0)) {
      markInvalid(document.getElementById("lab-form"), labResults.querySelector(".lab-errors") || labResults);
    }
    if (ringResults) {
      markInvalid(document.getElementById("ring-form"), ringResults);
    }
  });

  // In presenter mode every lab request says so: a preset re-renders the lab still presenting.
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    if (presenting() && elt && elt.closest && elt.closest("#lab")) {
      event.detail.parameters.present = "1";
    }
  });

  function enhance(root) {
    showSliders(root);
    addCopyButton(root);
    addPlayer(root);
  }

  document.addEventListener("htmx:load", function (event) {
    enhance(event.detail.elt);
  });
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      enhance(document);
    });
  } else {
    enhance(document);
  }
})();
